"""``group.consumer.max.size`` and ``group.share.max.size`` as Apache Kafka 4.4 applies them (``--against kafka``).

A broker started with both at 2: a third member is refused GROUP_MAX_SIZE_REACHED in Kafka's words, whatever the
epoch it sends (full comes before UNKNOWN_MEMBER_ID), while members of the group rejoin, a leave of an unknown member
is still UNKNOWN_MEMBER_ID, a member that left makes room, and a static consumer member that left is replaced (an
instance id still held is UNRELEASED_INSTANCE_ID first). Raw v1 heartbeats on one connection.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.describe_configs.v4 import request as describe_configs
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .coordinator_ready import coordinator_ready
from .test_share_close_order import topic_with_records

pytestmark = pytest.mark.differential

NONE, UNKNOWN_MEMBER_ID, GROUP_MAX_SIZE_REACHED, UNRELEASED_INSTANCE_ID = 0, 25, 81, 111
BROKER = 4
SHARE_FULL = "The share group has reached its maximum capacity of 2 members."
CONSUMER_FULL = "The consumer group has reached its maximum capacity of 2 members."


async def _share(connection: Connection, group: str, member: str, epoch: int,
                 topics: tuple[str, ...] | None = None) -> tuple[int, str | None]:
    answer = await connection.request(make(ShareGroupHeartbeatRequest, group_id=group, member_id=member,
                                           member_epoch=epoch, rack_id=None, subscribed_topic_names=topics))
    return int(answer.error_code), answer.error_message


async def _consumer(connection: Connection, group: str, member: str, epoch: int, topic: str,
                    instance: str | None = None) -> tuple[int, str | None]:
    joining = epoch == 0
    answer = await connection.request(make(
        ConsumerGroupHeartbeatRequest, group_id=group, member_id=member, instance_id=instance, member_epoch=epoch,
        rack_id=None, rebalance_timeout=30_000 if joining else -1, subscribed_topic_names=(topic,) if joining else None,
        subscribed_topic_regex=None, server_assignor=None, topic_partitions=() if joining else None))
    return int(answer.error_code), answer.error_message


def _full(message: str) -> tuple[int, str]:
    return GROUP_MAX_SIZE_REACHED, message


def _answers(bootstrap: str) -> dict[str, object]:
    topic = topic_with_records(bootstrap, f"max-size-{uuid.uuid4().hex[:8]}")
    answers: dict[str, object] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "group-max-size")
        try:
            share = f"share-max-size-{uuid.uuid4().hex[:8]}"
            await coordinator_ready(connection, share)
            first, second = str(uuid.uuid4()), str(uuid.uuid4())
            answers["share joins"] = [(await _share(connection, share, member, 0, (topic,)))[0]
                                      for member in (first, second)]
            answers["share third join"] = await _share(connection, share, str(uuid.uuid4()), 0, (topic,))
            answers["share unknown member, epoch 3"] = await _share(connection, share, str(uuid.uuid4()), 3)
            answers["share member rejoins"] = (await _share(connection, share, first, 0, (topic,)))[0]
            answers["share unknown member leaves"] = (await _share(connection, share, str(uuid.uuid4()), -1))[0]
            answers["share member leaves"] = (await _share(connection, share, second, -1))[0]
            answers["share join after a leave"] = (await _share(connection, share, str(uuid.uuid4()), 0, (topic,)))[0]

            group = f"consumer-max-size-{uuid.uuid4().hex[:8]}"
            await coordinator_ready(connection, group)
            static = str(uuid.uuid4())
            answers["consumer joins"] = [
                (await _consumer(connection, group, str(uuid.uuid4()), 0, topic))[0],
                (await _consumer(connection, group, static, 0, topic, "instance-1"))[0]]
            answers["consumer third join"] = await _consumer(connection, group, str(uuid.uuid4()), 0, topic)
            answers["consumer unknown member, epoch 5"] = await _consumer(connection, group, str(uuid.uuid4()), 5,
                                                                          topic)
            answers["consumer unknown member leaves"] = (await _consumer(connection, group, str(uuid.uuid4()), -1,
                                                                         topic))[0]
            answers["new static instance"] = await _consumer(connection, group, str(uuid.uuid4()), 0, topic,
                                                             "instance-2")
            answers["held instance id"] = (await _consumer(connection, group, str(uuid.uuid4()), 0, topic,
                                                           "instance-1"))[0]
            answers["static member leaves"] = (await _consumer(connection, group, static, -2, topic, "instance-1"))[0]
            answers["static member replaced"] = (await _consumer(connection, group, str(uuid.uuid4()), 0, topic,
                                                                 "instance-1"))[0]
        finally:
            await connection.close()

    asyncio.run(scenario())
    return answers


@pytest.mark.parametrize("started_with", [{"group.share.max.size": "2", "group.consumer.max.size": "2"}],
                         indirect=True)
def test_a_full_group_refuses_a_member_it_does_not_know_in_kafkas_words(started_with: str) -> None:
    assert _answers(started_with) == {
        "share joins": [NONE, NONE],
        "share third join": _full(SHARE_FULL),
        "share unknown member, epoch 3": _full(SHARE_FULL),
        "share member rejoins": NONE,
        "share unknown member leaves": UNKNOWN_MEMBER_ID,
        "share member leaves": NONE,
        "share join after a leave": NONE,
        "consumer joins": [NONE, NONE],
        "consumer third join": _full(CONSUMER_FULL),
        "consumer unknown member, epoch 5": _full(CONSUMER_FULL),
        "consumer unknown member leaves": UNKNOWN_MEMBER_ID,
        "new static instance": _full(CONSUMER_FULL),
        "held instance id": UNRELEASED_INSTANCE_ID,
        "static member leaves": NONE,
        "static member replaced": NONE,
    }


def test_the_limits_are_static_broker_configs_with_kafkas_defaults(bootstrap: str) -> None:
    keys = ("group.consumer.max.size", "group.share.max.size")
    answer = one_request(bootstrap, make(describe_configs.DescribeConfigsRequest, resources=(
        make(describe_configs.DescribeConfigsResource, resource_type=BROKER, resource_name="1",
             configuration_keys=keys),), include_synonyms=False, include_documentation=False))
    [result] = answer.results
    assert {entry.name: (entry.value, entry.read_only) for entry in result.configs} == {
        "group.consumer.max.size": ("2147483647", True), "group.share.max.size": ("200", True)}
