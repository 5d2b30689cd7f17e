"""A share consumer's close when its leave heartbeat overtakes its closing request (``--against kafka`` too).

librdkafka's ``close()`` sends the leaving ShareGroupHeartbeat (epoch -1) to the group coordinator and the closing
ShareAcknowledge (share session epoch -1, with the acknowledgements still pending) to the partition leader at the
same moment, on two connections, so the heartbeat often arrives first. Kafka keeps a share session until its
closing request, its connection or its eviction ends it, not until its member leaves: the closing request still
finds the session, its acknowledgements are applied, and the records the member still held are released then
(`SharePartitionManager.releaseSession`). Each scenario joins a fresh group over the wire, acquires five records,
leaves, and only then closes the share session.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.share_acknowledge.v1 import request as acknowledge_v1
from kio.schema.share_fetch.v1 import request as fetch_v1
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .group_configs import set_group_configs
from .test_share_fetch_limits import acquired_records, join, share_fetch
from .test_share_group_offsets import describe as describe_share_offsets

pytestmark = pytest.mark.differential

RECORDS = 5
ACCEPT = 1
TIMEOUT_S = 30


def topic_with_records(bootstrap: str, group: str) -> str:
    topic = f"close-order-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 100})
    for index in range(RECORDS):
        producer.produce(topic, value=b"%d" % index, partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    return topic


async def member_holding_every_record(connection: Connection, group: str, topic: str
                                      ) -> tuple[str, uuid.UUID, int]:
    """Join, open a share session and acquire the topic's records: (member id, topic id, the session's next
    epoch)."""
    member, topic_id = await join(connection, group, topic)
    answer = await share_fetch(connection, group, member, topic_id, 0, 500)
    session = 1
    while not acquired_records(answer):
        answer = await share_fetch(connection, group, member, topic_id, session, 500)
        session += 1
    assert acquired_records(answer) == [(0, RECORDS - 1, 1)]
    return member, topic_id, session


async def _leave(connection: Connection, group: str, member: str) -> None:
    answer = await connection.request(make(ShareGroupHeartbeatRequest, group_id=group, member_id=member,
                                           member_epoch=-1, rack_id=None, subscribed_topic_names=None))
    assert answer.error_code == 0, answer.error_message


async def _close_acknowledging(connection: Connection, group: str, member: str, topic_id: uuid.UUID,
                               batches: tuple[tuple[int, int, int], ...]) -> tuple[int, list[int]]:
    """The closing ShareAcknowledge (epoch -1) with ``batches`` of (first, last, type): its error code and each
    partition's."""
    answer = await connection.request(make(
        acknowledge_v1.ShareAcknowledgeRequest, group_id=group, member_id=member, share_session_epoch=-1,
        topics=(make(acknowledge_v1.AcknowledgeTopic, topic_id=topic_id, partitions=(
            make(acknowledge_v1.AcknowledgePartition, partition_index=0, acknowledgement_batches=tuple(
                make(acknowledge_v1.AcknowledgementBatch, first_offset=first, last_offset=last,
                     acknowledge_types=(kind,)) for first, last, kind in batches)),)),)))
    return answer.error_code, [int(p.error_code) for t in answer.responses for p in t.partitions]


async def _close_fetching(connection: Connection, group: str, member: str) -> int:
    """The closing ShareFetch (epoch -1, no acknowledgements): its error code."""
    answer = await connection.request(make(
        fetch_v1.ShareFetchRequest, group_id=group, member_id=member, share_session_epoch=-1,
        max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=10**6, max_records=500, batch_size=500,
        topics=(), forgotten_topics_data=()))
    return int(answer.error_code)


def _lag_settles_at(bootstrap: str, group: str, topic: str, lag: int) -> int:
    """The group's lag on the partition once it reads ``lag`` (Kafka's share coordinator persists a moment after the
    acknowledgement), or what it read last."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        found = describe_share_offsets(bootstrap, group).get((topic, 0), (-1, -1))[1]
        if found == lag or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


async def _next_member_acquires(bootstrap: str, group: str, topic: str) -> list[tuple[int, int, int]]:
    connection = await Connection.open(bootstrap, "close-order-next")
    try:
        member, topic_id = await join(connection, group, topic)
        answer = await share_fetch(connection, group, member, topic_id, 0, 2_000)
        return acquired_records(answer)
    finally:
        await connection.close()


def test_acknowledgements_of_a_closing_request_that_follows_the_leave_are_applied(bootstrap: str) -> None:
    group = f"close-order-{uuid.uuid4().hex[:8]}"
    topic = topic_with_records(bootstrap, group)

    async def scenario() -> tuple[int, list[int]]:
        connection = await Connection.open(bootstrap, "close-order")
        try:
            member, topic_id, _ = await member_holding_every_record(connection, group, topic)
            await _leave(connection, group, member)
            return await _close_acknowledging(connection, group, member, topic_id, ((0, RECORDS - 1, ACCEPT),))
        finally:
            await connection.close()

    assert asyncio.run(scenario()) == (0, [0])
    assert _lag_settles_at(bootstrap, group, topic, 0) == 0, "every record accepted: none is delivered again"


def test_a_closing_request_that_follows_the_leave_releases_what_the_member_held(bootstrap: str, target: str) -> None:
    """The next member acquires the records at once. Their delivery count differs on purpose: Kafka counts the
    closed member's attempt (2), logwright gives a clean leave's attempt back (1, docs/cursors.md)."""
    group = f"close-order-{uuid.uuid4().hex[:8]}"
    topic = topic_with_records(bootstrap, group)

    async def scenario() -> tuple[int, list[tuple[int, int, int]]]:
        connection = await Connection.open(bootstrap, "close-order")
        try:
            member, _, _ = await member_holding_every_record(connection, group, topic)
            await _leave(connection, group, member)
            closed = await _close_fetching(connection, group, member)
            return closed, await _next_member_acquires(bootstrap, group, topic)
        finally:
            await connection.close()

    closed, next_acquired = asyncio.run(scenario())
    assert closed == 0
    delivery_count = 2 if target == "kafka" else 1
    assert next_acquired == [(0, RECORDS - 1, delivery_count)], "released by the close, not by the lock's timeout"


def test_a_connection_closed_after_the_leave_releases_what_the_member_held(bootstrap: str, target: str) -> None:
    """A client that left and lost its connection before its closing request: the session ends with the connection
    (Kafka's share session cache drops a disconnected client's session) and the records are released then."""
    group = f"close-order-{uuid.uuid4().hex[:8]}"
    topic = topic_with_records(bootstrap, group)

    async def scenario() -> list[tuple[int, int, int]]:
        connection = await Connection.open(bootstrap, "close-order")
        try:
            member, _, _ = await member_holding_every_record(connection, group, topic)
            await _leave(connection, group, member)
        finally:
            await connection.close()
        return await _next_member_acquires(bootstrap, group, topic)

    delivery_count = 2 if target == "kafka" else 1
    assert asyncio.run(scenario()) == [(0, RECORDS - 1, delivery_count)]
