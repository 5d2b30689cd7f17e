"""OffsetDelete (key 47), version 0: delete a group's committed offsets for some partitions.

Refused per partition with GROUP_SUBSCRIBED_TO_TOPIC while a member subscribes to the topic (read
from the members' ``consumer`` protocol subscriptions with kio's ConsumerProtocolSubscription
schema), and for the whole group with NON_EMPTY_GROUP when it has members whose subscriptions
cannot be read (another protocol type). A KIP-848 consumer group refuses the topics its members'
subscriptions resolve to (names and regex matches). A share group's id is GROUP_ID_NOT_FOUND, and a partition of a
topic that does not exist UNKNOWN_TOPIC_OR_PARTITION (nothing deleted for it), as in Kafka 4.4.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.coordinators.consumer_coordinator import consumer_group
from logwright.compat.coordinators.group_coordinator import committed_offsets, group_state, subscribed_topics
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError
from logwright.core.groups.group_admin import decide_offset_delete
from logwright.core.groups.groups import GroupMember, GroupState

if TYPE_CHECKING:
    from kio.schema.offset_delete import v0

    OffsetDeleteRequest: TypeAlias = v0.OffsetDeleteRequest
    """Every version served: mypy checks each field read against all of them."""

_CONSUMER_PROTOCOL_MEMBER = GroupMember("", None, "", "", 0, 0, ())
"""Stands for the members of a KIP-848 consumer group, whose subscriptions the coordinator knows."""


def _partition_count(broker: Broker, name: str) -> int:
    topic = broker.topic(name)
    return len(topic.partition_ids) if topic is not None else 0


@handler(47, "OffsetDelete", 0, 0)
async def handle(context: RequestContext, request: OffsetDeleteRequest) -> Any:
    broker = context.broker
    module = response_module("offset_delete", context.api_version)
    if share_coordinator(broker).group(request.group_id) is not None:  # one namespace: not a group of offsets
        return make(module.OffsetDeleteResponse, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    throttle_time=datetime.timedelta(0), topics=())
    state = group_state(broker, request.group_id)
    offsets = committed_offsets(broker, request.group_id)
    partition_counts = {topic.name: _partition_count(broker, topic.name) for topic in request.topics}
    denied = {topic.name for topic in request.topics if broker.authorizer is not None
              and not allowed(context, AclOperation.READ, ResourceType.TOPIC, topic.name)}
    unknown = {(topic.name, int(p.partition_index)) for topic in request.topics for p in topic.partitions
               if topic.name in denied or not 0 <= p.partition_index < partition_counts[topic.name]}
    requested = [(topic.name, int(p.partition_index)) for topic in request.topics for p in topic.partitions
                 if (topic.name, int(p.partition_index)) not in unknown]
    consumer = consumer_group(broker, request.group_id)
    subscribed = subscribed_topics(state)
    if consumer is not None and consumer.members:
        subscribed = frozenset(name for name, _, _ in consumer.subscription_metadata)
        state = GroupState(request.group_id, members=(_CONSUMER_PROTOCOL_MEMBER,))
    try:
        outcome = decide_offset_delete(request.group_id, state, offsets,
                                       requested, subscribed)
    except DomainError as error:
        return make(module.OffsetDeleteResponse, error_code=error_code_for(error),
                    throttle_time=datetime.timedelta(0), topics=())
    if outcome.events:
        broker.stage(outcome.events)
        await broker.durable()
    def code(key: tuple[str, int]) -> ErrorCode:
        if key[0] in denied:  # before whether it exists, as Kafka
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if key in unknown:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return error_code_for(outcome.errors[key]) if key in outcome.errors else ErrorCode.NONE

    topics = tuple(
        make(module.OffsetDeleteResponseTopic, name=topic.name, partitions=tuple(
            make(module.OffsetDeleteResponsePartition, partition_index=p.partition_index,
                 error_code=code((topic.name, int(p.partition_index))))
            for p in topic.partitions))
        for topic in request.topics
    )
    return make(module.OffsetDeleteResponse, error_code=ErrorCode.NONE, throttle_time=datetime.timedelta(0),
                topics=topics)
