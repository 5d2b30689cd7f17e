"""Business-key deduplication (``logwright.dedup.key``, ``logwright.dedup.window.ms``) on a real broker process.

confluent-kafka with idempotence off sends the same keys twice: stored once, the second delivery reports carry the
first's offsets. Raw batches (exact boundaries, a codec) check a mixed batch, duplicates inside one batch and an
idempotent producer's sequence after a shortened batch. The window runs on the manual clock and survives a
SIGKILL; bad configs are refused with INVALID_CONFIG and a message.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from kio.schema.fetch.v12 import request as fetch
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import (
    Compression,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
    verify_crc,
)
from logwright.compat.wire.records import Record

from .broker_process import BrokerProcess
from .raw_batches import produce_request
from .test_share_groups import advance_clock, check_consistent

WINDOW_MS = 60_000


def _topic(bootstrap: str, configs: dict[str, str], partitions: int = 1) -> str:
    topic = f"dedup-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, config=configs)])[topic].result(30)
    return topic


def _send(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes, list[tuple[str, bytes]]]]
          ) -> list[int]:
    """Each record in its own produce (linger 0, one in flight), so no batch holds two; the offsets reported."""
    offsets: list[int] = []
    errors: list[Any] = []

    def report(error: Any, message: Any) -> None:
        errors.append(error) if error is not None else offsets.append(message.offset())

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "linger.ms": 0,
                         "max.in.flight.requests.per.connection": 1})
    for key, value, headers in records:
        producer.produce(topic, key=key, value=value, headers=headers, on_delivery=report)
        producer.flush(30)
    assert errors == [] and len(offsets) == len(records)
    return offsets


def _stored(bootstrap: str, topic: str, expected: int) -> list[tuple[int, bytes | None, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.partition.eof": True})
    consumer.subscribe([topic])
    stored: list[tuple[int, bytes | None, bytes]] = []
    for _ in range(80):
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error() is not None:
            if message.error().code() == KafkaError._PARTITION_EOF and len(stored) >= expected:
                break
            continue
        stored.append((message.offset(), message.key(), message.value()))
    consumer.close()
    return stored


def _raw(bootstrap: str, topic: str, batch: bytes) -> Any:
    async def run() -> Any:
        connection = await Connection.open(bootstrap, "dedup-tests")
        try:
            response = await connection.request(produce_request(topic, batch))
        finally:
            await connection.close()
        return response.responses[0].partition_responses[0]
    return asyncio.run(run())


def test_the_same_keys_twice_are_stored_once_and_answered_with_the_originals_offsets(
        clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.dedup.key": "record-key", "logwright.dedup.window.ms": str(WINDOW_MS)})
    first = _send(bootstrap, topic, [(b"order-1", b"a", []), (b"order-2", b"b", []), (None, b"no key", [])])
    again = _send(bootstrap, topic, [(b"order-2", b"b again", []), (b"order-1", b"a again", []),
                                     (None, b"no key", [])])
    assert first == [0, 1, 2] and again == [1, 0, 3], "duplicates answered with the original's offset"
    assert _stored(bootstrap, topic, 4) == [(0, b"order-1", b"a"), (1, b"order-2", b"b"), (2, None, b"no key"),
                                            (3, None, b"no key")]

    advance_clock(bootstrap, WINDOW_MS - 1)
    assert _send(bootstrap, topic, [(b"order-1", b"a late", [])]) == [0], "still inside the window"
    advance_clock(bootstrap, 1)
    assert _send(bootstrap, topic, [(b"order-1", b"a after", [])]) == [4], "the window ended: stored again"
    assert _send(bootstrap, topic, [(b"order-1", b"a after again", [])]) == [4], "a new window from the new one"

    clock_broker.kill()
    clock_broker.start()
    assert _send(bootstrap, topic, [(b"order-1", b"after a kill", []), (b"order-2", b"b after", [])]) == [4, 5], (
        "the window survives a SIGKILL: order-1's new one is remembered, order-2's ended before the kill")
    check_consistent(clock_broker)


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.ZSTD])
def test_a_mixed_batch_stores_the_rest_rewritten_with_contiguous_offsets(clock_broker: BrokerProcess,
                                                                          codec: Compression) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.dedup.key": "header:id"})
    first = _raw(bootstrap, topic, build_batch([Record(0, 1_000, b"k", b"v0", (("id", b"A"),))]))
    assert (first.error_code, first.base_offset) == (0, 0)
    batch = build_batch([Record(0, 2_000 + n, b"k", f"v{n}".encode(), (("id", name),) if name else ())
                         for n, name in enumerate([b"A", b"B", b"B", None, b"C", b"A"], start=1)], compression=codec)
    answer = _raw(bootstrap, topic, batch)
    assert (answer.error_code, answer.base_offset) == (0, 0), "the first record is a duplicate of offset 0"
    assert _stored(bootstrap, topic, 4) == [(0, b"k", b"v0"), (1, b"k", b"v2"), (2, b"k", b"v4"), (3, b"k", b"v5")]

    async def stored_batches() -> list[bytes]:
        connection = await Connection.open(bootstrap, "dedup-tests")
        try:
            response = await connection.request(make(
                fetch.FetchRequest, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20,
                isolation_level=0, session_id=0, session_epoch=-1, topics=(make(
                    fetch.FetchTopic, topic=topic, partitions=(make(
                        fetch.FetchPartition, partition=0, current_leader_epoch=-1, fetch_offset=0,
                        last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20),)),),
                forgotten_topics_data=(), rack_id=""))
        finally:
            await connection.close()
        return [bytes(b) for b in iter_batches(response.responses[0].partitions[0].records)]

    batches = asyncio.run(stored_batches())
    assert len(batches) == 2 and all(verify_crc(b) for b in batches)
    rewritten = decode_records(batches[1])
    assert [(r.offset, r.timestamp, r.value) for r in rewritten] == [(1, 2_002, b"v2"), (2, 2_004, b"v4"),
                                                                      (3, 2_005, b"v5")]
    assert parse_header(batches[1]).compression == codec, "the rewritten batch keeps the producer's codec"


def test_an_idempotent_producer_continues_its_sequence_after_a_shortened_batch(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.dedup.key": "record-key"})
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 0})
    offsets: list[int] = []
    for round_ in range(3):
        for key in (b"x", b"y", f"new-{round_}".encode()):
            producer.produce(topic, key=key, value=b"v", on_delivery=lambda error, message: offsets.append(
                -1 if error is not None else message.offset()))
        assert producer.flush(30) == 0
    assert -1 not in offsets and offsets[:3] == [0, 1, 2]
    assert sorted(r[0] for r in _stored(bootstrap, topic, 4)) == [0, 1, 2, 3, 4]
    check_consistent(clock_broker)


def test_a_client_numbers_a_shortened_batch_from_its_answered_base_offset(clock_broker: BrokerProcess) -> None:
    """What docs/keys.md says a client sees: the answer carries one base offset per batch and librdkafka numbers
    the batch's records from it (base + index), so a record after a dropped one is reported at the offset the
    next record took, and a batch opening with a duplicate numbers everything from the original's offset."""
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.dedup.key": "record-key"})
    assert _send(bootstrap, topic, [(b"old", b"v", [])]) == [0]

    def one_batch(keys: list[bytes]) -> list[int]:
        reported: list[int] = []
        # one batch: sent once it holds every record (a 200 ms linger split it under a loaded CI host). The
        # partition's leader is known before the first record: records produced before it are parked and moved to
        # the partition one by one when metadata arrives, and a flush already under way sent the first alone.
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "linger.ms": 5000,
                             "batch.num.messages": len(keys)})
        assert producer.list_topics(topic, timeout=30).topics[topic].partitions[0].leader >= 0
        for key in keys:
            producer.produce(topic, key=key, value=b"v", partition=0,
                             on_delivery=lambda error, message: reported.append(
                                 -1 if error is not None else message.offset()))
        assert producer.flush(30) == 0
        return reported

    assert one_batch([b"a", b"old", b"b"]) == [1, 2, 3], "stored: a at 1, b at 2; 'old' is reported at b's offset"
    assert one_batch([b"old", b"c"]) == [0, 1], "answered with old's offset 0: c, stored at 3, is reported at 1"
    assert [(offset, key) for offset, key, _ in _stored(bootstrap, topic, 4)] == [
        (0, b"old"), (1, b"a"), (2, b"b"), (3, b"c")]


@pytest.mark.logwright_only(reason="logwright's own topic configs and their messages")
@pytest.mark.parametrize(("name", "value", "message"), [
    ("logwright.dedup.key", "key", "'record-key' or 'header:<header name>'"),
    ("logwright.dedup.key", "header:", "'record-key' or 'header:<header name>'"),
    ("logwright.dedup.window.ms", "0", "between 1 and"),
    ("logwright.dedup.window.ms", "ten", "whole number of milliseconds"),
])
def test_bad_configs_are_refused_with_a_message(bootstrap: str, name: str, value: str, message: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"dedup-bad-{uuid.uuid4().hex[:8]}"
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([NewTopic(topic, 1, config={name: value})])[topic].result(30)
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG and message in refused.value.args[0].str()
    existing = _topic(bootstrap, {})
    resource = ConfigResource("topic", existing, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException) as altered:
        admin.incremental_alter_configs([resource])[resource].result(30)
    assert altered.value.args[0].code() == KafkaError.INVALID_CONFIG and message in altered.value.args[0].str()
