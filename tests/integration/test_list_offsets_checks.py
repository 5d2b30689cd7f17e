"""What ListOffsets and Fetch refuse, answered as Apache Kafka 4.4 answers (``--against kafka``).

Raw requests on one connection: the negative timestamps each ListOffsets version takes (-3 from v7, -4 from v8, -5
from v9, -6 from v11; any other is UNSUPPORTED_VERSION), the leader epoch a client says it saw (older: fenced, newer:
unknown; Fetch takes any negative as none, ListOffsets only -1), a partition named twice, an isolation level that does
not exist, and the leader epoch an answer carries when nothing is found.
"""

from __future__ import annotations

import asyncio
import datetime
import importlib
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.fetch.v12 import request as fetch_v12
from logwright.client.connection import Connection
from logwright.compat.registry import make

pytestmark = pytest.mark.differential

NONE, UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION, INVALID_REQUEST = 0, -1, 3, 35, 42
FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = 74, 75
BASE_MS = 1_700_000_000_000
TIMESTAMPS = (BASE_MS + 10, BASE_MS + 30, BASE_MS + 20)
"""Partition 0's records; the largest timestamp is the second record's (offset 1). Partition 1 stays empty."""
TIMEOUT_S = 30.0


def two_partition_topic(bootstrap: str, prefix: str, timestamps: tuple[int, ...]) -> str:
    """A fresh topic of two partitions, a record in partition 0 for each of ``timestamps`` (0: the producer's
    clock)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S
    while len(admin.list_topics(name, TIMEOUT_S).topics[name].partitions) < 2:  # Kafka: until its cache has it
        assert time.monotonic() < deadline, f"{name} was created but Metadata does not list it"
        time.sleep(0.05)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for index, timestamp in enumerate(timestamps):
        producer.produce(name, value=b"%d" % index, partition=0, timestamp=timestamp)
    assert producer.flush(TIMEOUT_S) == 0
    return name


@pytest.fixture
def topic(bootstrap: str) -> str:
    return two_partition_topic(bootstrap, "list-offsets-checks", TIMESTAMPS)


def _ask(bootstrap: str, request: Any) -> Any:
    async def exchange() -> Any:
        connection = await Connection.open(bootstrap, "list-offsets-checks")
        try:
            return await connection.request(request)
        finally:
            await connection.close()

    return asyncio.run(exchange())


Answer = tuple[int, int, int, int, int | None]
"""Partition, error, offset, timestamp, leader epoch (None before v4)."""


def list_offsets(bootstrap: str, topic: str, partitions: list[tuple[int, int, int]], version: int = 10,
                 isolation_level: int = 0) -> list[Answer]:
    """The answers to one ListOffsets of ``(partition, timestamp, current leader epoch)``, sorted: Kafka lists
    them in the order of its own map."""
    module: Any = importlib.import_module(f"kio.schema.list_offsets.v{version}.request")
    answer = _ask(bootstrap, make(
        module.ListOffsetsRequest, replica_id=-1, isolation_level=isolation_level,
        timeout=datetime.timedelta(seconds=1), topics=(make(module.ListOffsetsTopic, name=topic, partitions=tuple(
            make(module.ListOffsetsPartition, partition_index=partition, timestamp=timestamp,
                 current_leader_epoch=epoch)
            for partition, timestamp, epoch in partitions)),)))
    return sorted((int(p.partition_index), int(p.error_code), int(p.offset), int(p.timestamp),
                   int(p.leader_epoch) if hasattr(p, "leader_epoch") else None)
                  for t in answer.topics for p in t.partitions)


def fetch(bootstrap: str, topic: str, partitions: list[int], current_leader_epoch: int = -1,
          isolation_level: int = 0) -> tuple[int, list[tuple[int, int, int, int, int, int]]]:
    """One Fetch v12 from offset 0: its error and, per partition, its error, high watermark, last stable offset, log
    start offset and the bytes of records returned."""
    request = make(fetch_v12.FetchRequest, replica_id=-1, max_wait=datetime.timedelta(milliseconds=10), min_bytes=0,
                   max_bytes=1_000_000, isolation_level=isolation_level, session_id=0, session_epoch=-1,
                   topics=(make(fetch_v12.FetchTopic, topic=topic, partitions=tuple(
                       make(fetch_v12.FetchPartition, partition=partition, current_leader_epoch=current_leader_epoch,
                            fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=100_000)
                       for partition in partitions)),),
                   forgotten_topics_data=(), rack_id="")
    answer = _ask(bootstrap, request)
    return int(answer.error_code), sorted(
        (int(p.partition_index), int(p.error_code), int(p.high_watermark), int(p.last_stable_offset),
         int(p.log_start_offset), len(p.records or b""))
        for t in answer.responses for p in t.partitions)


@pytest.mark.parametrize(("timestamp", "since"), [(-3, 7), (-4, 8), (-5, 9), (-6, 11), (-7, None), (-100, None),
                                                  (-(2**63), None)])
def test_each_version_takes_the_timestamps_it_knows(bootstrap: str, topic: str, timestamp: int,
                                                     since: int | None) -> None:
    found = {-3: (1, TIMESTAMPS[1]), -4: (0, -1), -5: (-1, -1), -6: (-1, -1)}
    for version in range(1, 12):
        epoch = None if version < 4 else -1
        if since is None or version < since:
            expected = (0, UNSUPPORTED_VERSION, -1, -1, epoch)
        else:
            offset, at = found[timestamp]
            expected = (0, NONE, offset, at, epoch if offset < 0 else 0)
        assert list_offsets(bootstrap, topic, [(0, timestamp, -1)], version) == [expected], version


def test_an_answer_with_no_offset_carries_no_leader_epoch(bootstrap: str, topic: str) -> None:
    assert list_offsets(bootstrap, topic, [(0, BASE_MS + 31, -1)]) == [(0, NONE, -1, -1, -1)]
    assert list_offsets(bootstrap, topic, [(1, -3, -1)]) == [(1, NONE, -1, -1, -1)]
    assert list_offsets(bootstrap, topic, [(1, -1, -1), (0, BASE_MS + 11, -1)]) == [
        (0, NONE, 1, TIMESTAMPS[1], 0), (1, NONE, 0, -1, 0)]


def test_list_offsets_checks_the_leader_epoch_the_client_saw(bootstrap: str, topic: str) -> None:
    for epoch, code in ((-1, NONE), (0, NONE), (1, UNKNOWN_LEADER_EPOCH), (-2, FENCED_LEADER_EPOCH)):
        expected = (0, NONE, 3, -1, 0) if code == NONE else (0, code, -1, -1, -1)
        assert list_offsets(bootstrap, topic, [(0, -1, epoch)]) == [expected], epoch
        assert list_offsets(bootstrap, topic, [(0, -1, epoch)], version=4) == [expected], epoch
    assert list_offsets(bootstrap, topic, [(0, -1, 5)], version=3) == [(0, NONE, 3, -1, None)]  # no epoch before v4


def test_checks_come_in_kafkas_order(bootstrap: str, topic: str) -> None:
    """Named twice first, then a timestamp the version lacks, then the partition, then the epoch."""
    assert list_offsets(bootstrap, topic, [(0, -7, -1), (0, -7, -1)]) == [(0, INVALID_REQUEST, -1, -1, -1)]
    assert list_offsets(bootstrap, topic, [(0, -7, 5)]) == [(0, UNSUPPORTED_VERSION, -1, -1, -1)]
    assert list_offsets(bootstrap, f"no-such-topic-{uuid.uuid4().hex[:8]}", [(0, -7, -1)]) == [
        (0, UNSUPPORTED_VERSION, -1, -1, -1)]
    assert list_offsets(bootstrap, topic, [(7, -1, 5)]) == [(7, UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1)]


def test_a_partition_named_twice_is_answered_once_as_invalid(bootstrap: str, topic: str) -> None:
    assert list_offsets(bootstrap, topic, [(0, -1, -1), (0, -2, -1)]) == [(0, INVALID_REQUEST, -1, -1, -1)]
    assert list_offsets(bootstrap, topic, [(0, -1, -1), (1, -2, -1), (0, -1, -1)]) == [
        (0, INVALID_REQUEST, -1, -1, -1), (1, NONE, 0, -1, 0)]
    assert list_offsets(bootstrap, topic, [(0, -1, -1), (0, -2, -1)], version=1) == [
        (0, INVALID_REQUEST, -1, -1, None)]


def test_an_isolation_level_that_does_not_exist(bootstrap: str, topic: str) -> None:
    for level in (2, -1):
        assert list_offsets(bootstrap, topic, [(0, -1, -1), (9, -1, -1)], isolation_level=level) == [
            (0, UNKNOWN_SERVER_ERROR, -1, -1, -1), (9, UNKNOWN_SERVER_ERROR, -1, -1, -1)]
    assert fetch(bootstrap, topic, [0, 9], isolation_level=2) == (
        UNKNOWN_SERVER_ERROR, [(0, UNKNOWN_SERVER_ERROR, -1, -1, -1, 0), (9, UNKNOWN_SERVER_ERROR, -1, -1, -1, 0)])
    # found when a partition the broker has is read: a request of unknown partitions only answers them as such
    assert fetch(bootstrap, topic, [9], isolation_level=3) == (NONE, [(9, UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, 0)])


def test_fetch_checks_the_leader_epoch_the_client_saw(bootstrap: str, topic: str) -> None:
    for epoch in (-1, -2, 0):  # any negative epoch is none in a Fetch
        code, [(partition, error, high_watermark, _, _, size)] = fetch(bootstrap, topic, [0], epoch)
        assert (code, partition, error, high_watermark) == (NONE, 0, NONE, 3) and size > 0, epoch
    assert fetch(bootstrap, topic, [0], 1) == (NONE, [(0, UNKNOWN_LEADER_EPOCH, -1, -1, -1, 0)])
    assert fetch(bootstrap, topic, [0, 9], 3) == (
        NONE, [(0, UNKNOWN_LEADER_EPOCH, -1, -1, -1, 0), (9, UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, 0)])
