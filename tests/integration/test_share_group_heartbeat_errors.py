"""ShareGroupHeartbeat and ShareGroupDescribe refusals as Apache Kafka 4.4 answers them (``--against kafka``).

Raw v1 requests on one connection: a heartbeat other than a join for a group that does not exist, a member id
left empty (v1 clients name themselves) or longer than a UUID's 36 characters, an empty rack id, an epoch below -1,
a join naming no topic, a join of a member whose
epoch went wrong, and a share member joining under the id of a classic consumer group (group ids are one
namespace: Kafka answers GROUP_ID_NOT_FOUND, "not a share group"). ShareGroupDescribe answers an empty group id
with INVALID_GROUP_ID ahead of the others, and a classic group's id with GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .classic_member import classic_member
from .coordinator_ready import coordinator_ready
from .test_share_close_order import topic_with_records

pytestmark = pytest.mark.differential

NONE, INVALID_GROUP_ID, INVALID_REQUEST, GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH = (
    0, 24, 42, 69, 25, 110)


async def _heartbeat(connection: Connection, group: str, member: str, epoch: int,
                     topics: tuple[str, ...] | None = None, rack: str | None = None) -> tuple[int, int]:
    """(error code, member epoch) of one ShareGroupHeartbeat."""
    answer = await connection.request(make(ShareGroupHeartbeatRequest, group_id=group, member_id=member,
                                           member_epoch=epoch, rack_id=rack, subscribed_topic_names=topics))
    return int(answer.error_code), int(answer.member_epoch)


def _answers(bootstrap: str, group: str, classic: str) -> dict[str, object]:
    topic = topic_with_records(bootstrap, f"heartbeat-errors-{uuid.uuid4().hex[:8]}")
    consumer = classic_member(bootstrap, classic, topic)
    answers: dict[str, object] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "heartbeat-errors")
        try:
            await coordinator_ready(connection, group)
            answers["epoch 5, no such group"] = (await _heartbeat(connection, group, str(uuid.uuid4()), 5))[0]
            answers["leave, no such group"] = (await _heartbeat(connection, group, str(uuid.uuid4()), -1))[0]
            answers["empty member id"] = (await _heartbeat(connection, group, "", 0, (topic,)))[0]
            answers["epoch -2"] = (await _heartbeat(connection, group, str(uuid.uuid4()), -2, (topic,)))[0]
            answers["empty group id"] = (await _heartbeat(connection, "", str(uuid.uuid4()), 0, (topic,)))[0]
            answers["join naming no topic"] = (await _heartbeat(connection, group, str(uuid.uuid4()), 0, ()))[0]
            answers["empty rack id"] = (await _heartbeat(connection, group, str(uuid.uuid4()), 0, (topic,), ""))[0]
            answers["member id of 37 characters"] = (await _heartbeat(connection, group, "m" * 37, 0, (topic,)))[0]
            answers["member id of 37 characters, empty group id"] = (await _heartbeat(connection, "", "m" * 37, 0,
                                                                                      (topic,)))[0]
            answers["member id of 36 characters"] = (await _heartbeat(connection, group, "m" * 36, 0, (topic,)))[0]
            member = str(uuid.uuid4())
            code, epoch = await _heartbeat(connection, group, member, 0, (topic,))
            answers["join"] = code
            answers["wrong epoch"] = (await _heartbeat(connection, group, member, epoch + 3))[0]
            answers["leave, unknown member"] = (await _heartbeat(connection, group, str(uuid.uuid4()), -1))[0]
            answers["join a classic group's id"] = (await _heartbeat(connection, classic, str(uuid.uuid4()), 0,
                                                                     (topic,)))[0]
            described = await connection.request(make(ShareGroupDescribeRequest, group_ids=(
                "no-such-share-group", group, "", classic), include_authorized_operations=False))
            found = [(answer.group_id, int(answer.error_code)) for answer in described.groups]
            # the empty id first; Kafka lists the others in the order of their coordinator partitions
            answers["describe"] = (found[0], sorted(found[1:]))
        finally:
            await connection.close()

    try:
        asyncio.run(scenario())
    finally:
        consumer.close()
    return answers


def test_share_group_heartbeat_and_describe_refusals(bootstrap: str) -> None:
    group, classic = f"heartbeat-errors-{uuid.uuid4().hex[:8]}", f"classic-{uuid.uuid4().hex[:8]}"
    assert _answers(bootstrap, group, classic) == {
        "epoch 5, no such group": GROUP_ID_NOT_FOUND,
        "leave, no such group": GROUP_ID_NOT_FOUND,
        "empty member id": INVALID_REQUEST,
        "epoch -2": INVALID_REQUEST,
        "empty group id": INVALID_REQUEST,
        "join naming no topic": INVALID_REQUEST,
        "empty rack id": INVALID_REQUEST,
        "member id of 37 characters": INVALID_REQUEST,
        "member id of 37 characters, empty group id": INVALID_REQUEST,
        "member id of 36 characters": NONE,
        "join": NONE,
        "wrong epoch": FENCED_MEMBER_EPOCH,
        "leave, unknown member": UNKNOWN_MEMBER_ID,
        "join a classic group's id": GROUP_ID_NOT_FOUND,
        "describe": (("", INVALID_GROUP_ID), sorted([("no-such-share-group", GROUP_ID_NOT_FOUND), (group, NONE),
                                                     (classic, GROUP_ID_NOT_FOUND)])),
    }
