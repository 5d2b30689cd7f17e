"""DescribeTopicPartitions (key 75), version 0: topics and their partitions, a page at a time.

Kafka 4's replacement for describing topics through Metadata. Topics are answered in name order (an
empty request means every topic); ``response_partition_limit`` (at most the broker's
``max.request.partition.size.limit``, 2000 unless started with another; zero or less is one, as Kafka reads it)
bounds the partitions of one answer,
and ``next_cursor`` names the topic and partition the next page starts at. As Kafka 4.4: a name that cannot be a
topic's is INVALID_TOPIC_EXCEPTION, an empty one fails the request (every topic UNKNOWN_SERVER_ERROR), and a cursor
on a topic not asked for, or on a negative partition, is INVALID_REQUEST for every topic.

One broker leads every partition and is its only
replica, in sync; there are no eligible leader replicas (ELR) to report. Without an authorizer every
topic operation is allowed.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from bisect import bisect_left
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat import authorized_operations
from logwright.compat.authorization import allowed
from logwright.compat.authorization import operations as permitted
from logwright.compat.errors import ErrorCode
from logwright.compat.leader_epochs import PARTITION_LEADER_EPOCH
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError
from logwright.core.log.catalog import TopicState, validate_topic_name
from logwright.core.log.internal_topics import is_internal_topic

if TYPE_CHECKING:
    from kio.schema.describe_topic_partitions import v0

    DescribeTopicPartitionsRequest: TypeAlias = v0.DescribeTopicPartitionsRequest
    """Every version served: mypy checks each field read against all of them."""

@handler(75, "DescribeTopicPartitions", 0, 0)
async def handle(context: RequestContext, request: DescribeTopicPartitionsRequest) -> Any:
    broker = context.broker
    module = response_module("describe_topic_partitions", context.api_version)
    if any(not topic.name for topic in request.topics):  # Kafka fails the whole request on an empty name
        return _refused(module, [str(topic.name) for topic in request.topics], ErrorCode.UNKNOWN_SERVER_ERROR)
    names: Sequence[str] = (sorted({str(topic.name) for topic in request.topics}) if request.topics
                            else broker.topic_names())  # sorted, kept between pages
    denied: list[str] = []
    if broker.authorizer is not None:  # a topic the principal may not DESCRIBE: told only when named, last
        readable = [name for name in names if allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name)]
        if request.topics:
            denied = sorted(set(names) - set(readable))
        names = readable
    first_partition = 0
    if request.cursor is not None:
        cursor_topic, first_partition = request.cursor.topic_name, int(request.cursor.partition_index)
        if first_partition < 0 or (request.topics and cursor_topic not in names):
            return _refused(module, list(names), ErrorCode.INVALID_REQUEST)  # a cursor the request cannot have
        names = names[bisect_left(names, cursor_topic):]
    most = int(broker.broker_config("max.request.partition.size.limit"))
    remaining = max(1, min(int(request.response_partition_limit), most))  # Kafka: at least one
    topics: list[Any] = []
    next_cursor = None
    for position, name in enumerate(names):
        start = first_partition if request.cursor is not None and name == request.cursor.topic_name else 0
        state = broker.topic(name)
        if state is None:
            try:
                validate_topic_name(name)
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            except DomainError:
                code = ErrorCode.INVALID_TOPIC_EXCEPTION
            topics.append(_missing(module, name, code))
            continue
        if remaining == 0:
            next_cursor = make(module.Cursor, topic_name=name, partition_index=start)
            break
        end = min(len(state.partition_ids), start + remaining)
        topics.append(_topic(module, state, range(start, end), broker.node_id))
        remaining -= end - start
        if end < len(state.partition_ids):
            next_cursor = make(module.Cursor, topic_name=name, partition_index=end)
            break
        if remaining == 0 and position + 1 < len(names):
            next_cursor = make(module.Cursor, topic_name=names[position + 1], partition_index=0)
            break
    if broker.authorizer is not None:
        topics = [_with_operations(context, topic) for topic in topics]
        topics += [make(module.DescribeTopicPartitionsResponseTopic, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        name=name, topic_id=uuid.UUID(int=0), is_internal=False, partitions=(),
                        topic_authorized_operations=authorized_operations.UNKNOWN) for name in denied]
    return make(module.DescribeTopicPartitionsResponse, throttle_time=datetime.timedelta(0), topics=tuple(topics),
                next_cursor=next_cursor)


def _with_operations(context: RequestContext, topic: Any) -> Any:
    """A topic's entry with the operations the principal may perform on it (an authorizer's answer)."""
    return dataclasses.replace(topic, topic_authorized_operations=permitted(
        context, ResourceType.TOPIC, topic.name, authorized_operations.TOPIC))


def _missing(module: Any, name: str, code: ErrorCode) -> Any:
    return make(module.DescribeTopicPartitionsResponseTopic, error_code=code, name=name, topic_id=uuid.UUID(int=0),
                is_internal=is_internal_topic(name), partitions=(),
                topic_authorized_operations=authorized_operations.TOPIC)


def _refused(module: Any, names: list[str], code: ErrorCode) -> Any:
    """Every topic of a request Kafka refuses whole, with ``code`` and no partitions, and no cursor."""
    return make(module.DescribeTopicPartitionsResponse, throttle_time=datetime.timedelta(0), next_cursor=None,
                topics=tuple(_missing(module, name, code) for name in names))


def _topic(module: Any, state: TopicState, indexes: range, node_id: int) -> Any:
    partitions = tuple(
        make(module.DescribeTopicPartitionsResponsePartition, error_code=ErrorCode.NONE, partition_index=index,
             leader_id=node_id, leader_epoch=PARTITION_LEADER_EPOCH, replica_nodes=(node_id,), isr_nodes=(node_id,),
             eligible_leader_replicas=(), last_known_elr=(), offline_replicas=())
        for index in indexes
    )
    return make(module.DescribeTopicPartitionsResponseTopic, error_code=ErrorCode.NONE, name=state.name,
                topic_id=uuid.UUID(bytes=state.topic_id), is_internal=is_internal_topic(state.name),
                partitions=partitions,
                topic_authorized_operations=authorized_operations.TOPIC)
