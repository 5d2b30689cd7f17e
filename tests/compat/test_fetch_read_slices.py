"""A partition asked for more than `fetch.READ_SLICE_BYTES` is read a slice at a time, giving way between slices,
and answers the batches one read would (a consumer asking 55 MiB of one partition of 78-byte batches held every other
client about 0.4 s in one stretch)."""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from logwright.compat.kafka import fetch, produce
from logwright.compat.registry import RequestContext, make
from logwright.compat.wire.messages import encode_response, request_type
from logwright.core.events import LogTruncated
from test_admin_handlers import Harness, topic
from test_fetch_encoded_answers import produce_one, produce_request

BATCHES = 60


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path / "store")
    harness.create(topic("t", 3))
    for _ in range(BATCHES):
        produce_one(harness, 0)
    produce_one(harness, 1)
    yield harness
    harness.close()


def request(partition_max_bytes: int, max_bytes: int, offset: int = 0, min_bytes: int = 0, wait_s: float = 0) -> Any:
    module = request_type(1, 12).__module__
    classes = __import__(module, fromlist=["FetchTopic", "FetchPartition"])
    partitions = tuple(make(classes.FetchPartition, partition=index, current_leader_epoch=-1, fetch_offset=start,
                            last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=partition_max_bytes)
                       for index, start in ((1, 0), (0, offset)))
    return make(request_type(1, 12), replica_id=-1, max_wait=datetime.timedelta(seconds=wait_s), min_bytes=min_bytes,
                max_bytes=max_bytes, isolation_level=1, session_id=0, session_epoch=-1,
                topics=(make(classes.FetchTopic, topic="t", partitions=partitions),), forgotten_topics_data=(),
                rack_id="")


@pytest.mark.parametrize(("partition_max_bytes", "max_bytes", "offset"), [
    (1 << 20, 1 << 20, 0),  # every batch
    (2_500, 1 << 20, 0),  # the partition's limit falls inside a slice
    (1 << 20, 3_000, 5),  # the request's limit does, from an offset inside
    (1, 1 << 20, 0),  # only the answer's first batch may be larger than the limit
])
def test_a_partition_read_in_slices_answers_as_one_read(harness: Harness, monkeypatch: pytest.MonkeyPatch,
                                                         partition_max_bytes: int, max_bytes: int,
                                                         offset: int) -> None:
    asked = request(partition_max_bytes, max_bytes, offset)
    whole = encode_response(1, 12, 7, harness.call(fetch.handle, 12, asked))
    turns: list[None] = []
    giving_way = fetch.give_way

    async def counted() -> None:
        turns.append(None)
        await giving_way()

    monkeypatch.setattr(fetch, "READ_SLICE_BYTES", 200)  # two or three of these batches
    monkeypatch.setattr(fetch, "give_way", counted)
    sliced = encode_response(1, 12, 7, harness.call(fetch.handle, 12, asked))
    assert sliced == whole
    if partition_max_bytes > 200 and max_bytes > 200 * 4:
        assert len(turns) >= 4, "gave way between slices"


def test_a_fetch_gives_way_between_partitions_once_it_read_a_slice_of_them(harness: Harness,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    turns: list[None] = []
    giving_way = fetch.give_way

    async def counted() -> None:
        turns.append(None)
        await giving_way()

    asked = request(100, 1 << 20)  # one batch (~80 bytes) of each partition: no read stops inside a partition
    whole = encode_response(1, 12, 7, harness.call(fetch.handle, 12, asked))
    monkeypatch.setattr(fetch, "give_way", counted)
    monkeypatch.setattr(fetch, "READ_SLICE_BYTES", 101)  # over the partition limit, under two batches
    assert encode_response(1, 12, 7, harness.call(fetch.handle, 12, asked)) == whole
    assert len(turns) == 1, "once the two partitions' batches added up to a slice"


def _records_bytes(answer: Any) -> int:
    return sum(len(batch) for topic in answer.responses for partition in topic.partitions
               for batch in (partition.records or []))


def test_records_appended_while_a_long_poll_read_gave_way_answer_it_without_waiting(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """An append committed while the read gave way was not seen by that read, and the long poll then waited for a
    later one (or its max wait) although enough had arrived."""
    whole = _records_bytes(harness.call(fetch.handle, 12, request(1 << 20, 1 << 20)))
    giving_way = fetch.give_way
    appended: list[int] = []

    async def appending() -> None:
        if not appended:  # another producer's record, committed while the read gives way
            partition_id = harness.broker.partition_id("t", 0)
            assert partition_id is not None
            appended.append(partition_id)
            await produce.handle(RequestContext(harness.broker, 0, 9, 2, "other", 2, "127.0.0.1"),
                                 produce_request(0))
        await giving_way()

    monkeypatch.setattr(fetch, "READ_SLICE_BYTES", 200)
    monkeypatch.setattr(fetch, "give_way", appending)
    started = time.monotonic()
    answer = harness.call(fetch.handle, 12, request(1 << 20, 1 << 20, min_bytes=whole + 1, wait_s=30))
    assert appended and _records_bytes(answer) > whole, "the record that came during the read is in the answer"
    assert time.monotonic() - started < 10, "answered at once, not at the 30 s max wait"


def test_a_partition_truncated_while_its_read_gave_way_ends_its_answer_there(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    partition_id = harness.broker.partition_id("t", 0)
    assert partition_id is not None
    giving_way = fetch.give_way

    async def truncating() -> None:
        harness.broker.stage([LogTruncated(partition_id, 50)])  # DeleteRecords past what the first slice read
        await giving_way()

    monkeypatch.setattr(fetch, "READ_SLICE_BYTES", 200)
    monkeypatch.setattr(fetch, "give_way", truncating)
    answer = harness.call(fetch.handle, 12, request(1 << 20, 1 << 20))
    [partition] = [p for topic in answer.responses for p in topic.partitions if p.partition_index == 0]
    assert 0 < sum(map(len, partition.records)) <= 200, "the first slice only: nothing from below the new start"
