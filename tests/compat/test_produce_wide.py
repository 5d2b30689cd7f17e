"""A Produce request of many partitions lets other requests run between its parts (`produce.PARTITIONS_PER_TURN`):
one of 10,000 one-batch partitions held every client for its whole length. Each part is committed before the next is
staged, so each partition's answer says whether its part was written; a partition whose topic went meanwhile is
answered UNKNOWN_TOPIC_OR_PARTITION. Real RocksDB, no sockets."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

import pytest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import produce
from logwright.compat.registry import RequestContext
from logwright.compat.wire.compression import Compression
from logwright.compat.wire.record_batch import Record, build_batch
from logwright.core.events import Event, RecordsAppended
from logwright.core.log.catalog import delete_topic
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import GivenWay, in_process_broker

PARTITIONS = 2 * produce.PARTITIONS_PER_TURN + 100


def _request(*topics: str) -> ProduceRequest:
    batch = build_batch([Record(0, 1_000, b"k", b"v")])
    return ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=tuple(
        TopicProduceData(name=name, partition_data=tuple(PartitionProduceData(index=index, records=batch)
                                                         for index in range(PARTITIONS)))
        for name in topics))


def _codes(answer: Any) -> dict[str, list[int]]:
    return {topic.name: [int(partition.error_code) for partition in topic.partition_responses]
            for topic in answer.responses}


def test_a_wide_produce_request_gives_way_and_commits_part_by_part(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "data")

    async def run() -> None:
        broker = in_process_broker(store)
        broker.create_topic("t", PARTITIONS)
        broker.commit_now()
        commits: list[list[Event]] = []
        store.add_commit_listener(lambda events: commits.append([logged.event for logged in events]))
        turns_while_producing = 0
        producing = asyncio.get_running_loop().create_task(
            produce.handle(RequestContext(broker, 0, 9, 1, "tester", 1, "127.0.0.1"), _request("t")))
        while not producing.done():
            await asyncio.sleep(0)
            turns_while_producing += 1
        assert _codes(producing.result()) == {"t": [ErrorCode.NONE] * PARTITIONS}
        appended = [[event for event in commit if isinstance(event, RecordsAppended)] for commit in commits]
        assert [len(part) for part in appended if part] == [produce.PARTITIONS_PER_TURN] * 2 + [100], (
            "a commit per part")
        assert turns_while_producing >= 6, turns_while_producing

    try:
        asyncio.run(run())
    finally:
        store.close()


def test_a_topic_deleted_while_a_wide_request_gives_way_answers_its_later_partitions_unknown(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "data")

    async def run() -> None:
        broker = in_process_broker(store)
        broker.create_topic("kept", PARTITIONS)
        broker.create_topic("gone", PARTITIONS)
        broker.commit_now()
        producing = asyncio.get_running_loop().create_task(
            produce.handle(RequestContext(broker, 0, 9, 1, "tester", 1, "127.0.0.1"), _request("gone", "kept")))
        for _ in range(3):
            await asyncio.sleep(0)
        assert not producing.done()
        broker.stage([delete_topic(broker.topic("gone"), "gone")])  # as DeleteTopics stages it
        codes = _codes(await producing)
        assert codes["kept"] == [ErrorCode.NONE] * PARTITIONS
        assert set(codes["gone"][-100:]) == {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}, "none appended after it went"
        assert broker.topic("gone") is None and all(
            broker.high_watermark(partition_id) == 1
            for partition_id in broker.topic("kept").partition_ids)  # type: ignore[union-attr]

    try:
        asyncio.run(run())
    finally:
        store.close()


def test_partitions_of_big_inflated_batches_give_way_by_the_bytes_inflated(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A compressed batch may inflate to 64 MiB (40 ms of zstd to check): 250 partitions of one each were 10 s in one
    stretch, however few the partitions counted. The request gives way every `INFLATED_PER_TURN` bytes inflated."""
    monkeypatch.setattr(produce, "INFLATED_PER_TURN", 1024 * 1024)
    given_way = GivenWay(monkeypatch, produce)
    store = RocksEventStore(tmp_path / "data")

    async def run() -> None:
        broker = in_process_broker(store)
        broker.create_topic("z", 6)
        broker.commit_now()
        batch = build_batch([Record(0, 1_000, b"k", b"\0" * 700_000)], compression=Compression.ZSTD)
        assert len(batch) < 1_000
        request = ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=(
            TopicProduceData(name="z", partition_data=tuple(PartitionProduceData(index=index, records=batch)
                                                            for index in range(6))),))
        answer = await produce.handle(RequestContext(broker, 0, 9, 1, "tester", 1, "127.0.0.1"), request)
        assert _codes(answer) == {"z": [ErrorCode.NONE] * 6}
        assert given_way.count == 2, "4.2 MB inflated, a give-way after each 1 MiB past the last"

    try:
        asyncio.run(run())
    finally:
        store.close()
