"""A full disk under a running broker: produces are refused with KAFKA_STORAGE_ERROR (never a dropped
connection or a hang), Metadata, ListOffsets and Fetch keep answering, and once space is freed writes
resume with every acknowledged record still there and `logwright check` consistent.

The data directory is a 64 MiB tmpfs (`tests.eventstore.small_disk`, skipped where mounting is not
allowed) filled by a file the test deletes to free the space. The broker retries its store on the
broker clock (`Broker.stage`, every `STORE_RETRY_MS`), so the test moves a manual clock instead of sleeping.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.produce import ProduceRequest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from confluent_kafka import Consumer, TopicPartition
from logwright.client.connection import ClientError
from logwright.compat.broker_commits import STORE_RETRY_MS

from tests.eventstore.small_disk import fill, small_tmpfs

from .broker_process import BrokerProcess

pytestmark = pytest.mark.logwright_only(reason="fills the disk under a private broker process")

NONE, KAFKA_STORAGE_ERROR = 0, 56
RECORD_BYTES = 20_000
RECORDS_PER_BATCH = 5


@pytest.fixture
def full_disk_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with small_tmpfs(tmp_path / "disk", 64) as disk:
        broker = BrokerProcess(disk, manual_clock=True).start()  # its log goes beside the mount, not on it
        try:
            yield broker
        finally:
            broker.kill()


class Producer:
    """Produce v3+ requests (acks=-1) through aiokafka's client: each answer's partition error is seen as sent."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.client = AIOKafkaClient(bootstrap_servers=bootstrap)
        self.topic = topic
        self.sent = 0

    async def produce(self) -> tuple[int, int, list[bytes]]:
        """One batch of fresh records: (error code, base offset, the values sent)."""
        values = [f"{self.sent + index:08d}".encode() + b"x" * RECORD_BYTES for index in range(RECORDS_PER_BATCH)]
        self.sent += len(values)
        builder = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 22)
        for index, value in enumerate(values):
            builder.append(index, None, None, value, [])
        request = ProduceRequest(None, -1, 10000, [(self.topic, [(0, bytes(builder.build()))])])
        response = await self.client.send(self.client.get_random_node(), request)
        partition = response.topics[0][1][0]
        return int(partition[1]), int(partition[2]), values


def read_back(bootstrap: str, topic: str, expected: int) -> tuple[list[bytes], int, list[str]]:
    """Metadata's topic names, the high watermark (ListOffsets) and the values from offset 0 (Fetch)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "fetch.max.bytes": 1 << 20})
    try:
        topics = sorted(consumer.list_topics(timeout=10).topics)
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        for _ in range(200):
            if len(values) >= expected:
                break
            for message in consumer.consume(100, timeout=0.5):
                assert message.error() is None, message.error()
                values.append(message.value())
        return values, int(high), topics
    finally:
        consumer.close()


def test_a_full_disk_refuses_produces_keeps_reads_and_recovers_when_space_is_freed(
        full_disk_broker: BrokerProcess) -> None:
    asyncio.run(_scenario(full_disk_broker))
    assert full_disk_broker.stop() == 0
    checked = subprocess.run([sys.executable, "-m", "logwright", "check", "--data-dir",
                              str(full_disk_broker.data_dir)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("consistent")


async def _producer_on_a_new_topic(broker: BrokerProcess, prefix: str) -> Producer:
    """A one-partition topic named ``prefix``-something, and a bootstrapped `Producer` for it."""
    topic = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        await admin.close()
    producer = Producer(broker.bootstrap, topic)
    await producer.client.bootstrap()
    return producer


async def _scenario(broker: BrokerProcess) -> None:
    producer = await _producer_on_a_new_topic(broker, "full")
    topic = producer.topic
    acknowledged: list[bytes] = []
    try:
        for _ in range(5):
            code, base_offset, values = await producer.produce()
            assert (code, base_offset) == (NONE, len(acknowledged))
            acknowledged += values

        filler = fill(broker.data_dir, leave_bytes=1 << 20)
        refusals = 0
        for _ in range(200):
            code, base_offset, values = await producer.produce()
            if code == NONE:
                assert base_offset == len(acknowledged)
                acknowledged += values
            else:
                assert code == KAFKA_STORAGE_ERROR
                refusals += 1
                if refusals == 3:
                    break
        assert refusals == 3, "the disk never filled up"
        assert broker.alive()

        values, high_watermark, topics = await asyncio.to_thread(read_back, broker.bootstrap, topic,
                                                                 len(acknowledged))
        assert topic in topics
        assert high_watermark == len(acknowledged)
        assert values == acknowledged

        with pytest.raises(ClientError) as still_full:  # the clock moves, the store is retried, still full
            await asyncio.to_thread(broker.advance_clock, STORE_RETRY_MS)
        assert still_full.value.code == KAFKA_STORAGE_ERROR
        assert (await producer.produce())[0] == KAFKA_STORAGE_ERROR

        filler.unlink()
        await asyncio.to_thread(broker.advance_clock, STORE_RETRY_MS)
        code, base_offset, values = await producer.produce()
        assert (code, base_offset) == (NONE, len(acknowledged))
        acknowledged += values
    finally:
        await producer.client.close()
    values, high_watermark, _ = await asyncio.to_thread(read_back, broker.bootstrap, topic, len(acknowledged))
    assert high_watermark == len(acknowledged)
    assert values == acknowledged


def test_a_store_that_cannot_be_opened_again_stops_the_broker_with_a_clear_message(
        full_disk_broker: BrokerProcess) -> None:
    """The disk fills, then goes away (unmounted): the retry finds no database, not even read-only, and the
    broker exits non-zero naming the store rather than serve state it can no longer check against disk."""
    asyncio.run(_fill_then_unmount(full_disk_broker))
    with pytest.raises(Exception):  # noqa: B017 - the process exits while answering: any client error will do
        full_disk_broker.advance_clock(STORE_RETRY_MS)
    assert full_disk_broker.process is not None
    assert full_disk_broker.process.wait(20) != 0
    assert f"logwright stopped: the store at {full_disk_broker.data_dir} failed" in full_disk_broker.log_tail()


async def _fill_then_unmount(broker: BrokerProcess) -> None:
    producer = await _producer_on_a_new_topic(broker, "gone")
    try:
        fill(broker.data_dir, leave_bytes=1 << 20)
        for _ in range(200):
            if (await producer.produce())[0] == KAFKA_STORAGE_ERROR:
                break
        else:
            raise AssertionError("the disk never filled up")
    finally:
        await producer.client.close()
    subprocess.run(["umount", "-l", str(broker.data_dir)], check=True)
