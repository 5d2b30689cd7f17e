"""DescribeShareGroupOffsets (key 90), versions 0-1: each share-partition's start offset (and lag, v1).

Groups are named with their topics and partitions, or with null topics for every partition the group
has state on. A partition without state (unknown group, topic or partition included) answers start
offset and lag -1 without an error, as Kafka 4.4 does; lag is ``high watermark - start offset - records
settled above it`` (see `core.share_group_offsets`). An empty group id gets INVALID_GROUP_ID.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.share_offsets import LEADER_EPOCH, cursors_of
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import answered_once_in_turns
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.cursors.cursor import CursorState
from logwright.core.log.catalog import TopicState
from logwright.core.share_groups.share_group_offsets import UNINITIALIZED, describe

if TYPE_CHECKING:
    from kio.schema.describe_share_group_offsets import v0, v1

    DescribeShareGroupOffsetsRequest: TypeAlias = (
        v0.DescribeShareGroupOffsetsRequest | v1.DescribeShareGroupOffsetsRequest
    )
    """Every version served: mypy checks each field read against all of them."""
    DescribeShareGroupOffsetsRequestGroup: TypeAlias = (
        v0.request.DescribeShareGroupOffsetsRequestGroup | v1.request.DescribeShareGroupOffsetsRequestGroup
    )


@handler(90, "DescribeShareGroupOffsets", 0, 1)
async def handle(context: RequestContext, request: DescribeShareGroupOffsetsRequest) -> Any:
    module = response_module("describe_share_group_offsets", context.api_version)

    held: dict[str, list[int]] | None = None

    def held_by(group_id: str) -> list[int]:
        """The partitions the group has a cursor on, from one pass over the cursors for the request (a search of
        every topic's partitions per group grew with the groups named times the broker's partitions)."""
        nonlocal held
        if held is None:
            held = {}
            for state in context.broker.store.entities("cursors").values():
                if isinstance(state, CursorState):
                    held.setdefault(state.subscription, []).append(state.partition_id)
        return held.get(group_id, [])

    def describe(group: DescribeShareGroupOffsetsRequestGroup) -> Any:
        if not allowed(context, AclOperation.DESCRIBE, ResourceType.GROUP, group.group_id):
            return make(module.DescribeShareGroupOffsetsResponseGroup, group_id=group.group_id, topics=(),
                        error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message="Group authorization failed.")
        return _group(context.broker, module, group, held_by,
                      lambda topic: allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic))

    groups: Sequence[DescribeShareGroupOffsetsRequestGroup] = request.groups
    return make(module.DescribeShareGroupOffsetsResponse, throttle_time=datetime.timedelta(0),
                groups=await answered_once_in_turns(groups, describe))  # a group asked for again: the same bytes


def _group(broker: Broker, module: Any, request: DescribeShareGroupOffsetsRequestGroup,
           held_by: Callable[[str], list[int]], describable: Callable[[str], bool]) -> Any:
    """``held_by``: the partition ids a group has a cursor on, for a group asking for all of them. A topic the
    principal may not DESCRIBE (``describable``) is left out of all of them, and TOPIC_AUTHORIZATION_FAILED named."""
    group_id = request.group_id
    if not group_id:
        return make(module.DescribeShareGroupOffsetsResponseGroup, group_id=group_id, topics=(),
                    error_code=ErrorCode.INVALID_GROUP_ID, error_message="the group id must not be empty")
    cursor_of = cursors_of(broker, group_id)
    wanted: list[tuple[str, TopicState | None, list[int]]] = []
    if request.topics is None:  # by topic name, indexes ascending
        by_topic: dict[str, tuple[TopicState, list[int]]] = {}
        for partition_id in held_by(group_id):
            located = broker.topic_of_partition(partition_id)
            if located is not None:
                by_topic.setdefault(located[0].name, (located[0], []))[1].append(located[1])
        wanted = [(name, state, sorted(indexes)) for name, (state, indexes) in sorted(by_topic.items())
                  if describable(name)]
    else:
        wanted = [(entry.topic_name, broker.topic(entry.topic_name), [int(p) for p in entry.partitions])
                  for entry in request.topics]
    topics = []
    for name, topic, indexes in wanted:
        partitions = []
        if not describable(name):
            topics.append(make(module.DescribeShareGroupOffsetsResponseTopic, topic_name=name, topic_id=None,
                               partitions=tuple(make(
                                   module.DescribeShareGroupOffsetsResponsePartition, partition_index=index,
                                   start_offset=UNINITIALIZED, leader_epoch=LEADER_EPOCH, lag=UNINITIALIZED,
                                   error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                   error_message="Topic authorization failed.") for index in indexes)))
            continue
        for index in indexes:
            start, lag = UNINITIALIZED, UNINITIALIZED
            if topic is not None and 0 <= index < len(topic.partition_ids):
                partition_id = topic.partition_ids[index]
                offsets = describe(cursor_of(partition_id), broker.high_watermark(partition_id))
                start, lag = offsets.start_offset, offsets.lag
            partitions.append(make(module.DescribeShareGroupOffsetsResponsePartition, partition_index=index,
                                   start_offset=start, leader_epoch=LEADER_EPOCH, lag=lag,
                                   error_code=ErrorCode.NONE, error_message=None))
        topics.append(make(module.DescribeShareGroupOffsetsResponseTopic, topic_name=name,
                           topic_id=uuid.UUID(bytes=topic.topic_id) if topic is not None else None,
                           partitions=tuple(partitions)))
    return make(module.DescribeShareGroupOffsetsResponseGroup, group_id=group_id, topics=tuple(topics),
                error_code=ErrorCode.NONE, error_message=None)
