"""ConsumerGroupHeartbeat and ConsumerGroupDescribe as kio requests, for scenarios that play a member by hand."""

from __future__ import annotations

import datetime
import time
import uuid
from collections.abc import Callable
from typing import Any

from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1 import request as heartbeat_request
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from logwright.compat.registry import make
from logwright.testing.clients import one_request

NOT_READY = (14, 15, 16)
"""COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: Kafka's group partition is loading."""


def request(bootstrap: str, message: Any) -> Any:
    return one_request(bootstrap, message, "kip848-test")


def find_coordinator(bootstrap: str, group: str) -> None:
    """Kafka creates and loads __consumer_offsets only once a group coordinator is looked up."""
    request(bootstrap, make(FindCoordinatorRequest, key="", key_type=0, coordinator_keys=(group,)))


def ready_request(bootstrap: str, group: str, message: Any, code: Callable[[Any], int] = lambda answer: int(
        answer.error_code)) -> Any:
    """The answer to one of a group's requests, asked again while Kafka loads the group's coordinator."""
    deadline = time.monotonic() + 60
    while True:
        answer = request(bootstrap, message)
        if code(answer) not in NOT_READY or time.monotonic() > deadline:
            return answer
        find_coordinator(bootstrap, group)
        time.sleep(0.3)


def describe(bootstrap: str, group: str) -> Any:
    message = ConsumerGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False)
    [described] = ready_request(bootstrap, group, message, lambda answer: int(answer.groups[0].error_code)).groups
    return described


def heartbeat(bootstrap: str, group: str, member_id: str, epoch: int, *, topics: tuple[str, ...] | None = None,
              owned: dict[uuid.UUID, tuple[int, ...]] | None = None, instance_id: str | None = None,
              assignor: str | None = None, regex: str | None = None, rebalance_timeout_ms: int = -1) -> Any:
    """One ConsumerGroupHeartbeat v1; ``owned`` is the member's partitions by topic id (None: unchanged; a join
    sends an empty list, as Kafka requires)."""
    if epoch == 0 and owned is None:
        owned = {}
    partitions = None if owned is None else tuple(
        make(heartbeat_request.TopicPartitions, topic_id=topic_id, partitions=indexes)
        for topic_id, indexes in owned.items())
    message = make(heartbeat_request.ConsumerGroupHeartbeatRequest, group_id=group, member_id=member_id,
                   member_epoch=epoch, instance_id=instance_id, rack_id=None,
                   rebalance_timeout=datetime.timedelta(milliseconds=rebalance_timeout_ms),
                   subscribed_topic_names=topics, subscribed_topic_regex=regex, server_assignor=assignor,
                   topic_partitions=partitions)
    return ready_request(bootstrap, group, message)


def assigned(response: Any) -> dict[uuid.UUID, tuple[int, ...]] | None:
    if response.assignment is None:
        return None
    return {entry.topic_id: tuple(sorted(entry.partitions)) for entry in response.assignment.topic_partitions}
