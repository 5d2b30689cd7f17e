"""Fetch keeps the encoded answers of partitions with nothing to return (issue 18): the bytes must be those of a
fresh answer, in every version and isolation level, and move with the offsets."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from logwright.compat.kafka import fetch, produce
from logwright.compat.registry import make
from logwright.compat.wire.messages import decode_response, encode_response, request_type
from logwright.compat.wire.record_batch import Record, build_batch
from test_admin_handlers import Harness, topic

TIMEOUT = datetime.timedelta(seconds=5)


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    harness = Harness(tmp_path / "store")
    harness.create(topic("t", 3))
    yield harness
    harness.close()


def fetch_request(version: int, isolation_level: int, offsets: tuple[int, ...]) -> Any:
    """Partitions 0.. of "t" from ``offsets``, no waiting (v4-v12 name topics)."""
    module = request_type(1, version).__module__
    classes = __import__(module, fromlist=["FetchTopic", "FetchPartition"])
    partitions = tuple(make(classes.FetchPartition, partition=index, current_leader_epoch=-1, fetch_offset=offset,
                            last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20)
                       for index, offset in enumerate(offsets))
    return make(request_type(1, version), replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0,
                max_bytes=1 << 20, isolation_level=isolation_level, session_id=0, session_epoch=-1,
                topics=(make(classes.FetchTopic, topic="t", partitions=partitions),), forgotten_topics_data=(),
                rack_id="")


def answered(harness: Harness, version: int, request: Any) -> tuple[bytes, bytes]:
    """The answer's bytes, and those of the same answer with every partition built afresh."""
    answer = harness.call(fetch.handle, version, request)
    fresh = harness.call(_fresh_handle, version, request)
    return encode_response(1, version, 7, answer), encode_response(1, version, 7, fresh)


async def _fresh_handle(context: Any, request: Any) -> Any:
    kept, fetch._partition_data = fetch._partition_data, fetch._partition_entity
    try:
        return await fetch.handle(context, request)
    finally:
        fetch._partition_data = kept


def produce_request(index: int) -> ProduceRequest:
    """One record to partition ``index`` of "t"."""
    return ProduceRequest(transactional_id=None, acks=-1, timeout=TIMEOUT, topic_data=(TopicProduceData(
        name="t", partition_data=(PartitionProduceData(index=index, records=build_batch([Record(0, 1_000, b"k",
                                                                                                 b"v")])),)),))


def produce_one(harness: Harness, index: int) -> None:
    assert harness.call(produce.handle, 9, produce_request(index)).responses[0].partition_responses[0].error_code == 0


@pytest.mark.parametrize("version", [4, 7, 11, 12])
@pytest.mark.parametrize("isolation_level", [0, 1])
def test_answers_with_no_records_are_the_bytes_of_a_fresh_answer(harness: Harness, version: int,
                                                                  isolation_level: int) -> None:
    produce_one(harness, 0)
    request = fetch_request(version, isolation_level, (0, 0, 0))
    first, fresh = answered(harness, version, request)
    again, _ = answered(harness, version, request)
    assert first == again == fresh
    partitions = decode_response(1, version, first)[1].responses[0].partitions
    assert [len(p.records or b"") > 0 for p in partitions] == [True, False, False]

    produce_one(harness, 1)
    moved, fresh = answered(harness, version, fetch_request(version, isolation_level, (1, 0, 0)))
    assert moved == fresh
    partitions = decode_response(1, version, moved)[1].responses[0].partitions
    assert [p.high_watermark for p in partitions] == [1, 1, 0]
    assert [len(p.records or b"") > 0 for p in partitions] == [False, True, False]

    produce_one(harness, 2)
    caught_up, fresh = answered(harness, version, fetch_request(version, isolation_level, (1, 1, 1)))
    assert caught_up == fresh
    assert [p.high_watermark for p in decode_response(1, version, caught_up)[1].responses[0].partitions] == [1, 1, 1]
