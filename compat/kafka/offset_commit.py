"""OffsetCommit (key 8), versions 2-9: committed positions of a group, one `OffsetCommitted` event each.

v0-v1 are not served: kio cannot parse them (they are answered UNSUPPORTED_VERSION). Members commit
with their generation (v7+ also with ``group.instance.id``); generation -1 with no member id is a
"simple" commit, accepted while the group has no members. Retention fields (v2-v4) are ignored, the
metadata string is round-tripped (null is stored as ""), and a commit counts as a member's heartbeat.
As in Kafka, the empty group id is allowed here for backward compatibility. A KIP-848 consumer group's
members commit with their member epoch as the generation: an unknown member is UNKNOWN_MEMBER_ID, another
epoch than the member's STALE_MEMBER_EPOCH; epoch -1 without a member commits only while it has no members.
"""

from __future__ import annotations

import datetime
from typing import Any

from logwright.compat.broker import Broker
from logwright.compat.coordinators.consumer_coordinator import consumer_group
from logwright.compat.coordinators.group_coordinator import coordinator, group_state
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.consumer_groups.consumer_reconciliation import check_member_epoch
from logwright.core.errors import DomainError
from logwright.core.events import OffsetCommitted
from logwright.core.groups.group_admin import check_offset_commit, check_offset_metadata
from logwright.core.groups.groups import GroupMember


@handler(8, "OffsetCommit", 2, 9)
async def handle(context: RequestContext, request: Any) -> Any:
    broker = context.broker
    module = response_module("offset_commit", context.api_version)
    group_id = request.group_id
    generation = int(request.generation_id_or_member_epoch)
    member = None
    group_error: ErrorCode | None = None
    try:
        member = check_committer(broker, group_id, generation, request.member_id,
                                 getattr(request, "group_instance_id", None))
    except DomainError as error:
        group_error = error_code_for(error)
    now_ms = broker.clock.now_ms()
    events, topics = commit_partitions(broker, request.topics, group_id, group_error, now_ms,
                                       module.OffsetCommitResponseTopic, module.OffsetCommitResponsePartition)
    if events:
        broker.stage(events)
        await broker.durable()
    if member is not None:
        coordinator(broker).sessions.touch(group_id, member.member_id, now_ms)
    return make(module.OffsetCommitResponse, throttle_time=datetime.timedelta(0), topics=topics)


def check_committer(broker: Broker, group_id: str, generation: int, member_id: str,
                    group_instance_id: str | None) -> GroupMember | None:
    """Whether this member (or a simple committer) may commit the group's offsets now; raises if not.

    A KIP-848 consumer group checks the member epoch, a classic group the generation; the classic member
    is returned so its session can be touched."""
    consumer = consumer_group(broker, group_id)
    if consumer is not None:
        check_member_epoch(consumer, member_id, generation, commit=True)
        return None
    return check_offset_commit(group_state(broker, group_id), generation, member_id, group_instance_id)


def commit_partitions(broker: Broker, requested: Any, group_id: str, refusal: ErrorCode | None, now_ms: int,
                      topic_cls: Any, partition_cls: Any) -> tuple[list[OffsetCommitted], tuple[Any, ...]]:
    """The commits an OffsetCommit or TxnOffsetCommit asks for and its per-partition answers; ``refusal`` (the
    group's or the transaction's) fails every partition."""
    events: list[OffsetCommitted] = []
    topics = []
    for topic in requested:
        partitions = []
        for partition in topic.partitions:
            code = refusal or partition_error(broker, topic.name, partition)
            if code is None:
                code = ErrorCode.NONE
                events.append(committed_offset(group_id, topic.name, partition, now_ms))
            partitions.append(make(partition_cls, partition_index=partition.partition_index, error_code=code))
        topics.append(make(topic_cls, name=topic.name, partitions=tuple(partitions)))
    return events, tuple(topics)


def partition_error(broker: Broker, topic: str, partition: Any) -> ErrorCode | None:
    """Why one partition of an OffsetCommit or TxnOffsetCommit cannot be committed, if it cannot."""
    if broker.partition_id(topic, partition.partition_index) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    try:
        check_offset_metadata(partition.committed_metadata)
    except DomainError as error:
        return error_code_for(error)
    return None


def committed_offset(group_id: str, topic: str, partition: Any, now_ms: int) -> OffsetCommitted:
    """The commit one request partition asks for (null metadata stored as "")."""
    return OffsetCommitted(group_id, topic, int(partition.partition_index), int(partition.committed_offset),
                           int(getattr(partition, "committed_leader_epoch", -1)), partition.committed_metadata or "",
                           now_ms)
