"""ShareFetch's max_bytes, max_records and batch_size, checked against what Apache Kafka 4.4 does; its long poll.

A topic holds six stored batches of five 1000-byte records (offsets 0-29, about 5.1 KB a batch), produced
as raw RecordBatches so the batch boundaries are known. Each case joins a fresh share group and sends one
ShareFetch with the limits under test; the AcquiredRecords must be what Kafka answers (``--against kafka``
runs the same cases on Kafka: its share coordinator needs a few retries before it answers).
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.find_coordinator.v6.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.share_fetch.v1 import request as fetch_v1
from kio.schema.share_fetch.v2 import request as fetch_v2
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.client import Client
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .raw_batches import fill_topic
from .test_share_groups import check_consistent

BATCHES, PER_BATCH = 6, 5


@pytest.fixture(scope="module")
def batched_topic(shared_broker: Any) -> tuple[str, str]:
    """(bootstrap, topic) of a topic with six stored batches of five records."""
    bootstrap = shared_broker.bootstrap
    topic = f"limits-{uuid.uuid4().hex[:8]}"
    fill_topic(bootstrap, topic, BATCHES, PER_BATCH, record_bytes=1000)
    return bootstrap, topic


async def acquire_once(bootstrap: str, topic: str, max_bytes: int, max_records: int, batch_size: int,
                       version: int = 1, acquire_mode: int = 0) -> list[tuple[int, int]]:
    """The (first, last) AcquiredRecords of the first ShareFetch of a new group that acquires anything."""
    group = f"limits-{uuid.uuid4().hex[:8]}"
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    connection = await Connection.open(bootstrap, "limits")
    try:
        member, topic_id = await join(connection, group, topic)
        for session in range(50):
            answer = await share_fetch(connection, group, member, topic_id, session, 500, max_bytes, max_records,
                                       batch_size, version, acquire_mode)
            acquired = [(first, last) for first, last, _ in acquired_records(answer)]
            if acquired:
                return acquired
        raise AssertionError("nothing was acquired")
    finally:
        await connection.close()


async def join(connection: Connection, group: str, topic: str) -> tuple[str, uuid.UUID]:
    """Join ``group`` subscribed to ``topic`` and wait for the assignment: (member id, topic id)."""
    metadata = await connection.request(make(
        MetadataRequest, topics=(make(MetadataRequestTopic, topic_id=None, name=topic),),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    await until(lambda: connection.request(FindCoordinatorRequest(key_type=0, coordinator_keys=(group,))),
                lambda answer: answer.coordinators[0].error_code == 0)
    member = str(uuid.uuid4())
    joined = await until(lambda: connection.request(make(
        ShareGroupHeartbeatRequest, group_id=group, member_id=member, member_epoch=0, rack_id=None,
        subscribed_topic_names=(topic,))), lambda answer: answer.error_code == 0)
    epoch = joined.member_epoch
    while joined.assignment is None or not joined.assignment.topic_partitions:
        await asyncio.sleep(0.2)
        joined = await connection.request(make(ShareGroupHeartbeatRequest, group_id=group, member_id=member,
                                               member_epoch=epoch, rack_id=None, subscribed_topic_names=None))
        epoch = joined.member_epoch
    return member, metadata.topics[0].topic_id


async def share_fetch(connection: Connection, group: str, member: str, topic_id: uuid.UUID, session: int,
                      max_wait_ms: int, max_bytes: int = 10**6, max_records: int = 500, batch_size: int = 500,
                      version: int = 1, acquire_mode: int = 0) -> Any:
    """One ShareFetch of partition 0 (named only when the session opens)."""
    module = fetch_v1 if version == 1 else fetch_v2
    topics = (make(module.FetchTopic, topic_id=topic_id, partitions=(
        make(module.FetchPartition, partition_index=0, acknowledgement_batches=()),)),) if session == 0 else ()
    answer = await connection.request(make(
        module.ShareFetchRequest, group_id=group, member_id=member, share_session_epoch=session,
        max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=1, max_bytes=max_bytes,
        max_records=max_records, batch_size=batch_size, share_acquire_mode=acquire_mode, is_renew_ack=False,
        topics=topics, forgotten_topics_data=()))
    assert answer.error_code == 0, answer.error_message
    return answer


def acquired_records(answer: Any) -> list[tuple[int, int, int]]:
    return [(int(a.first_offset), int(a.last_offset), int(a.delivery_count)) for t in answer.responses
            for p in t.partitions for a in p.acquired_records]


async def until(send: Any, done: Any, attempts: int = 60) -> Any:
    for _ in range(attempts):
        answer = await send()
        if done(answer):
            return answer
        await asyncio.sleep(0.5)
    raise AssertionError(f"no success after {attempts} attempts: {answer}")


@pytest.mark.parametrize(("case", "limits", "expected"), [
    ("max_bytes below one batch: the first batch still goes", dict(max_bytes=2500, max_records=500, batch_size=500),
     [(0, 4)]),
    ("max_bytes of two and a half batches", dict(max_bytes=13_000, max_records=500, batch_size=500), [(0, 9)]),
    ("max_records inside a batch: the batch is completed", dict(max_bytes=10**6, max_records=3, batch_size=3),
     [(0, 4)]),
    ("max_records 7: two batches, one entry per batch_size group", dict(max_bytes=10**6, max_records=7, batch_size=2),
     [(0, 4), (5, 9)]),
    ("batch_size 7 groups two batches", dict(max_bytes=10**6, max_records=500, batch_size=7),
     [(0, 9), (10, 19), (20, 29)]),
    ("v2 batch-optimized", dict(max_bytes=10**6, max_records=3, batch_size=3, version=2, acquire_mode=0), [(0, 4)]),
    ("v2 record limit", dict(max_bytes=10**6, max_records=3, batch_size=3, version=2, acquire_mode=1), [(0, 2)]),
    ("v2 record limit ignores batch_size", dict(max_bytes=10**6, max_records=7, batch_size=2, version=2,
                                                acquire_mode=1), [(0, 6)]),
])
def test_share_fetch_limits(batched_topic: tuple[str, str], case: str, limits: dict[str, int],
                            expected: list[tuple[int, int]]) -> None:
    bootstrap, topic = batched_topic
    acquired = asyncio.run(asyncio.wait_for(acquire_once(bootstrap, topic, **limits), 120))
    assert acquired == expected, case


@pytest.mark.logwright_only(reason="a manual clock")
def test_a_long_poll_is_woken_when_the_broker_clock_brings_a_record_back(tmp_path: Path) -> None:
    """max_wait is wall time (a network wait); the record coming due is broker time, and waking is immediate."""
    broker = BrokerProcess(tmp_path / "data", extra_args=("--manual-clock",)).start()
    try:
        topic = f"poll-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
        set_group_configs(broker.bootstrap, "poll", {"share.auto.offset.reset": "earliest"})
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        producer.produce(topic, value=b"later")
        assert producer.flush(30) == 0

        async def scenario() -> None:
            connection = await Connection.open(broker.bootstrap, "poll")
            clock = await Client.connect(broker.bootstrap)
            member, topic_id = await join(connection, "poll", topic)
            assert acquired_records(await share_fetch(connection, "poll", member, topic_id, 0, 0)) == [(0, 0, 1)]
            await connection.extension(32003, {"group_id": "poll", "member_id": member, "topic": topic,
                                               "partition": 0, "ranges": [[0, 0]], "delay_ms": 10_000}, "nack")
            long_poll = asyncio.ensure_future(share_fetch(connection, "poll", member, topic_id, 1, 600_000))
            await clock.advance_clock(9_999)
            await clock.advance_clock(1)
            answer = await asyncio.wait_for(long_poll, 60)  # far below its 600 s max_wait: it was woken
            assert acquired_records(answer) == [(0, 0, 2)]
            await clock.close()
            await connection.close()

        asyncio.run(asyncio.wait_for(scenario(), 120))
        check_consistent(broker)
    finally:
        broker.kill()
