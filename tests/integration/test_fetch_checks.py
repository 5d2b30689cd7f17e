"""How Fetch reads its limits and sessions, and the leader epoch stored batches carry, answered as Apache Kafka 4.4
answers (``--against kafka``).

Raw Fetch v12 requests: ``partition_max_bytes`` and ``max_bytes`` of 0 (the answer's first batch still comes whole)
and negative (the partition it would read fails alone; a negative ``max_bytes`` only for the first partition asked),
fetch session epochs of an incremental fetch of a session never opened (FETCH_SESSION_ID_NOT_FOUND), and batches
produced with any partition leader epoch stored with the leader's (0).
"""

from __future__ import annotations

import datetime
import struct
import time
import uuid
from typing import Any

import pytest
from kio.schema.fetch.v12 import request as fetch_v12
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import Record, build_batch

from .test_controller_timeouts import ask
from .test_produce_checks import _topic, codes, produce

pytestmark = pytest.mark.differential

UNKNOWN_SERVER_ERROR, NONE, FETCH_SESSION_ID_NOT_FOUND = -1, 0, 70
BIG = 1_000_000


def _batch(value: bytes, leader_epoch: int = -1) -> bytes:
    return build_batch([Record(0, int(time.time() * 1000), None, value, ())], partition_leader_epoch=leader_epoch)


@pytest.fixture
def topic(bootstrap: str) -> str:
    """Three partitions of two one-record batches each."""
    name = _topic(bootstrap, "fetch-checks", partitions=3)
    for partition in range(3):
        for value in (b"first", b"second"):
            assert codes(produce(bootstrap, name, _batch(value), partition=partition))[0][0] == NONE
    return name


def fetch(bootstrap: str, topic: str, partitions: list[tuple[int, int, int]], max_bytes: int = BIG,
          session: tuple[int, int] = (0, -1)) -> tuple[int, list[tuple[int, int, int, int]], Any]:
    """Fetch ``(partition, offset, partition_max_bytes)``: the error, per partition (index, error, high watermark,
    batches whole), and the records of the first partition."""
    (answer,) = ask(bootstrap, make(
        fetch_v12.FetchRequest, replica_id=-1, max_wait=datetime.timedelta(milliseconds=10), min_bytes=0,
        max_bytes=max_bytes, isolation_level=0, session_id=session[0], session_epoch=session[1], rack_id="",
        forgotten_topics_data=(), topics=(make(fetch_v12.FetchTopic, topic=topic, partitions=tuple(
            make(fetch_v12.FetchPartition, partition=partition, current_leader_epoch=-1, fetch_offset=offset,
                 last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=limit)
            for partition, offset, limit in partitions)),)))
    found = [(int(p.partition_index), int(p.error_code), int(p.high_watermark), len(_batches(p.records or b"")))
             for t in answer.responses for p in t.partitions]
    first = answer.responses[0].partitions[0].records if answer.responses else None
    return int(answer.error_code), found, first


def _batches(records: bytes) -> list[tuple[int, int]]:
    """The whole batches in ``records``: (base offset, partition leader epoch)."""
    found, position = [], 0
    while position + 61 <= len(records):
        base, size, epoch = struct.unpack_from(">qii", records, position)
        if position + 12 + size > len(records):
            break
        found.append((base, epoch))
        position += 12 + size
    return found


def test_the_first_batch_comes_whole_whatever_the_limits(bootstrap: str, topic: str) -> None:
    every = [(0, 0, 0), (1, 0, 0), (2, 0, 0)]
    assert fetch(bootstrap, topic, every)[:2] == (NONE, [(0, NONE, 2, 1), (1, NONE, 2, 0), (2, NONE, 2, 0)])
    assert fetch(bootstrap, topic, [(0, 0, BIG), (1, 0, BIG)], max_bytes=0)[:2] == (
        NONE, [(0, NONE, 2, 1), (1, NONE, 2, 0)])
    assert fetch(bootstrap, topic, [(0, 0, BIG), (1, 0, 0)])[:2] == (NONE, [(0, NONE, 2, 2), (1, NONE, 2, 0)])


def test_a_partition_whose_first_batch_does_not_fit_leaves_the_budget_to_those_after_it(bootstrap: str) -> None:
    """Once the answer holds a batch, a partition whose first batch is longer than what is left of ``max_bytes``
    answers no records and takes nothing of it: a later partition whose batch fits still comes (Kafka drops the
    incomplete batch it read, and counts nothing). logwright looks the first batch's length up before reading."""
    name = _topic(bootstrap, "fetch-budget", partitions=3)
    batches = [_batch(bytes(3000)), _batch(bytes(2000)), _batch(bytes(100))]
    for partition, batch in enumerate(batches):
        assert codes(produce(bootstrap, name, batch, partition=partition))[0][0] == NONE
    every = [(0, 0, BIG), (1, 0, BIG), (2, 0, BIG)]
    assert fetch(bootstrap, name, every, max_bytes=len(batches[0]) + 600)[:2] == (
        NONE, [(0, NONE, 1, 1), (1, NONE, 1, 0), (2, NONE, 1, 1)])
    assert fetch(bootstrap, name, every, max_bytes=len(batches[0]) + 100)[:2] == (
        NONE, [(0, NONE, 1, 1), (1, NONE, 1, 0), (2, NONE, 1, 0)])
    assert fetch(bootstrap, name, every, max_bytes=len(batches[0]) + len(batches[1]))[:2] == (
        NONE, [(0, NONE, 1, 1), (1, NONE, 1, 1), (2, NONE, 1, 0)])


def test_a_negative_limit_fails_the_partition_it_would_read(bootstrap: str, topic: str) -> None:
    assert fetch(bootstrap, topic, [(0, 0, BIG), (1, 0, -1), (2, 0, BIG)])[:2] == (
        NONE, [(0, NONE, 2, 2), (1, UNKNOWN_SERVER_ERROR, -1, 0), (2, NONE, 2, 2)])
    assert fetch(bootstrap, topic, [(0, 2, -1)])[:2] == (NONE, [(0, NONE, 2, 0)])  # nothing to read: no read
    assert fetch(bootstrap, topic, [(0, 0, BIG), (1, 0, BIG), (2, 0, BIG)], max_bytes=-1)[:2] == (
        NONE, [(0, UNKNOWN_SERVER_ERROR, -1, 0), (1, NONE, 2, 1), (2, NONE, 2, 0)])
    assert fetch(bootstrap, topic, [(0, 2, BIG), (1, 0, BIG)], max_bytes=-1)[:2] == (
        NONE, [(0, NONE, 2, 0), (1, NONE, 2, 1)])


def test_an_incremental_fetch_of_a_session_never_opened(bootstrap: str, topic: str) -> None:
    for session in ((0, 1), (0, -2), (7, 5), (-3, 3)):
        assert fetch(bootstrap, topic, [(0, 0, BIG)], session=session)[:2] == (FETCH_SESSION_ID_NOT_FOUND, []), session
    for session in ((7, -1), (0, 0), (0, -1)):  # full fetches: sessionless, or one a session could start with
        assert fetch(bootstrap, topic, [(0, 0, BIG)], session=session)[:2] == (NONE, [(0, NONE, 2, 2)]), session


def test_a_stored_batch_carries_the_leaders_epoch(bootstrap: str) -> None:
    name = _topic(bootstrap, f"fetch-checks-epochs-{uuid.uuid4().hex[:4]}")
    for epoch in (9, -1, 0, 2**31 - 1):
        assert codes(produce(bootstrap, name, _batch(b"v", leader_epoch=epoch)))[0][0] == NONE
    _, _, records = fetch(bootstrap, name, [(0, 0, BIG)])
    assert _batches(records or b"") == [(0, 0), (1, 0), (2, 0), (3, 0)]
