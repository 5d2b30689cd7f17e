"""CreatePartitions (key 37), versions 0-3: grow a topic's partition count.

The new partitions take the next global partition ids (one `PartitionsCreated` event) and start empty.
A count that is not larger than the current one is INVALID_PARTITIONS; a manual assignment must give one
broker list per new partition, each exactly this broker (INVALID_REPLICA_ASSIGNMENT otherwise); a topic
named twice in one request is INVALID_REQUEST, answered once. ``validate_only`` decides without writing. A timeout
of zero or less is REQUEST_TIMED_OUT, as Kafka's controller answers it (`controller_deadline`).
"""

from __future__ import annotations

import datetime
from collections import Counter
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.controller_deadline import expired
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.config_resources import failure
from logwright.compat.kafka.create_topics import MAX_PARTITIONS_PER_REQUEST
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError, InvalidRequest, UnknownTopic
from logwright.core.log.catalog import COUNTER_KEY, PartitionIdCounter, create_partitions
from logwright.core.log.placement import check_new_partition_assignments

if TYPE_CHECKING:
    from kio.schema.create_partitions import v0, v1, v2, v3

    CreatePartitionsRequest: TypeAlias = (
        v0.CreatePartitionsRequest | v1.CreatePartitionsRequest | v2.CreatePartitionsRequest
        | v3.CreatePartitionsRequest
    )
    """Every version served: mypy checks each field read against all of them."""


def _partitions_added(broker: Broker, topics: Any) -> int:
    """What the request would add, counted as Kafka's controller does before it checks anything else: each
    existing topic's count over what it has."""
    total = 0
    for topic in topics:
        state = broker.topic(topic.name)
        if state is not None:
            total += max(0, int(topic.count) - len(state.partition_ids))
    return total


@handler(37, "CreatePartitions", 0, 3)
async def handle(context: RequestContext, request: CreatePartitionsRequest) -> Any:
    broker = context.broker
    module = response_module("create_partitions", context.api_version)
    validate_only = bool(request.validate_only)
    counts = Counter(topic.name for topic in request.topics)
    if _partitions_added(broker, request.topics) > MAX_PARTITIONS_PER_REQUEST:
        return make(module.CreatePartitionsResponse, throttle_time=datetime.timedelta(0), results=tuple(
            make(module.CreatePartitionsTopicResult, name=topic.name, error_code=ErrorCode.POLICY_VIOLATION,
                 error_message="Excessively large number of additional partitions per request.")
            for topic in request.topics))
    results, staged, answered = [], False, set()
    timed_out = expired(request.timeout)
    mutations = broker.client_quotas.mutations(context.client_id, strict=context.api_version >= 3,
                                                  user=context.principal)
    for topic in request.topics:
        if topic.name in answered:
            continue  # named twice: answered once, as Kafka does
        answered.add(topic.name)
        code, message = ErrorCode.NONE, None
        try:
            if counts[topic.name] > 1:
                raise InvalidRequest(f"topic {topic.name!r} appears {counts[topic.name]} times in the request")
            if timed_out:
                results.append(make(module.CreatePartitionsTopicResult, name=topic.name,
                                    error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=None))
                continue
            if not allowed(context, AclOperation.ALTER, ResourceType.TOPIC, topic.name):  # before whether it exists
                results.append(make(module.CreatePartitionsTopicResult, name=topic.name,
                                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=None))
                continue
            state = broker.topic(topic.name)
            counter = broker.store.state("catalog", COUNTER_KEY)
            event = create_partitions(state, counter if isinstance(counter, PartitionIdCounter) else None,
                                      topic.name, int(topic.count))
            assignments = None if topic.assignments is None else [entry.broker_ids for entry in topic.assignments]
            current = int(topic.count) - len(event.partition_ids)
            check_new_partition_assignments(current, int(topic.count), assignments, broker.node_id)
            mutations.apply(len(event.partition_ids))
            if not validate_only:
                broker.stage([event])
                staged = True
        except UnknownTopic:
            code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None  # Kafka 4.4 gives no message
        except DomainError as error:
            code, message = failure(error)
        results.append(make(module.CreatePartitionsTopicResult, name=topic.name, error_code=code,
                            error_message=message))
    if staged:
        await broker.durable()
    broker.client_quotas.throttle(context.connection_id, mutations.throttle_ms)
    return make(module.CreatePartitionsResponse, throttle_time=datetime.timedelta(milliseconds=mutations.throttle_ms),
                results=tuple(results))
