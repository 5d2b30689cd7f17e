"""``group.consumer.assignors`` as Apache Kafka 4.4 applies it (``--against kafka``): the server assignors a member
may name, the first of them a group's when no member names one; any other is UNSUPPORTED_ASSIGNOR in Kafka's words,
which list the enabled ones in Kafka's own order (uniform before range), not the config's. Entries may be Kafka's
class names. Raw ConsumerGroupHeartbeat v1 joins, then ConsumerGroupDescribe's assignor name."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .coordinator_ready import coordinator_ready
from .test_share_close_order import topic_with_records

pytestmark = pytest.mark.differential

UNSUPPORTED_ASSIGNOR = 112


def _joins(bootstrap: str, assignors: tuple[str | None, ...]) -> dict[str | None, tuple[int, str | None, str]]:
    """Per assignor named, a new group's join: (error code, message, the assignor ConsumerGroupDescribe names)."""
    topic = topic_with_records(bootstrap, f"assignors-{uuid.uuid4().hex[:8]}")
    answers: dict[str | None, tuple[int, str | None, str]] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "consumer-assignors")
        try:
            for assignor in assignors:
                group = f"assignors-{uuid.uuid4().hex[:8]}"
                await coordinator_ready(connection, group)
                joined = await connection.request(make(
                    ConsumerGroupHeartbeatRequest, group_id=group, member_id=str(uuid.uuid4()), instance_id=None,
                    member_epoch=0, rack_id=None, rebalance_timeout=30_000, subscribed_topic_names=(topic,),
                    subscribed_topic_regex=None, server_assignor=assignor, topic_partitions=()))
                described = await connection.request(make(ConsumerGroupDescribeRequest, group_ids=(group,),
                                                           include_authorized_operations=False))
                answers[assignor] = (int(joined.error_code), joined.error_message, described.groups[0].assignor_name)
        finally:
            await connection.close()

    asyncio.run(scenario())
    return answers


def test_by_default_uniform_is_a_groups_and_range_may_be_named(bootstrap: str) -> None:
    assert _joins(bootstrap, (None, "range", "sticky")) == {
        None: (0, None, "uniform"),
        "range": (0, None, "range"),
        "sticky": (UNSUPPORTED_ASSIGNOR, "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
                   ""),
    }


@pytest.mark.parametrize("started_with", [{"group.consumer.assignors": " range , uniform"}], indirect=True)
def test_the_first_assignor_listed_is_a_groups_default(started_with: str) -> None:
    assert _joins(started_with, (None, "uniform", "sticky")) == {
        None: (0, None, "range"),
        "uniform": (0, None, "uniform"),
        "sticky": (UNSUPPORTED_ASSIGNOR, "ServerAssignor sticky is not supported. Supported assignors: uniform, range.",
                   ""),
    }


@pytest.mark.parametrize("started_with", [{
    "group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor"}], indirect=True)
def test_an_assignor_left_out_is_refused(started_with: str) -> None:
    assert _joins(started_with, (None, "uniform")) == {
        None: (0, None, "range"),
        "uniform": (UNSUPPORTED_ASSIGNOR, "ServerAssignor uniform is not supported. Supported assignors: range.", ""),
    }
