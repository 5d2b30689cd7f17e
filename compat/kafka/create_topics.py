"""CreateTopics (key 19), versions 2-7: topics with one replica each on this broker.

``num_partitions`` -1 takes the broker's ``num.partitions``; a replication factor must be -1 or 1 and a
manual assignment must put each partition on this broker alone (INVALID_REPLICATION_FACTOR and
INVALID_REPLICA_ASSIGNMENT say why otherwise). Configs are validated by the registry (INVALID_CONFIG
naming the key). A name given twice in one request is refused for that name (INVALID_REQUEST), as
Kafka does. v5+ answer with the topic's partition count, replication factor and every config with its
source; v7 with the topic id. ``validate_only`` decides without writing. Created topics are durable
before the answer. v0 and v1 are not in kio (Kafka 4 dropped them) and no target client sends them.
"""

from __future__ import annotations

import datetime
import uuid
from collections import Counter
from collections.abc import Container, Iterable
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.controller_deadline import expired
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.config_resources import Resource, describe, failure
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from logwright.core.errors import DomainError, InvalidConfig, InvalidRequest
from logwright.core.events import TopicCreated
from logwright.core.log.catalog import check_new_topic_name
from logwright.core.log.placement import partitions_to_create

if TYPE_CHECKING:
    from kio.schema.create_topics import v2, v3, v4, v5, v6, v7

    CreateTopicsRequest: TypeAlias = (
        v2.CreateTopicsRequest | v3.CreateTopicsRequest | v4.CreateTopicsRequest | v5.CreateTopicsRequest
        | v6.CreateTopicsRequest | v7.CreateTopicsRequest
    )
    """Every version served: mypy checks each field read against all of them."""
    CreatableTopic: TypeAlias = (
        v2.request.CreatableTopic | v3.request.CreatableTopic | v4.request.CreatableTopic | v5.request.CreatableTopic
        | v6.request.CreatableTopic | v7.request.CreatableTopic
    )

ZERO_UUID = uuid.UUID(int=0)


@handler(19, "CreateTopics", 2, 7)
async def handle(context: RequestContext, request: CreateTopicsRequest) -> Any:
    broker = context.broker
    module = response_module("create_topics", context.api_version)
    validate_only = bool(request.validate_only)
    counts = Counter(topic.name for topic in request.topics)
    if _partitions_asked(request.topics, int(broker.broker_config("num.partitions"))) > MAX_PARTITIONS_PER_REQUEST:
        return make(module.CreateTopicsResponse, throttle_time=datetime.timedelta(0), topics=tuple(
            make(module.CreatableTopicResult, name=name, topic_id=ZERO_UUID, error_code=ErrorCode.POLICY_VIOLATION,
                 error_message="Excessively large number of partitions per request.", num_partitions=-1,
                 replication_factor=-1, configs=()) for name in counts))
    timed_out = expired(request.timeout)
    mutations = broker.client_quotas.mutations(context.client_id, strict=context.api_version >= 6,
                                                  user=context.principal)
    results, answered, staged = [], set(), False
    created: set[str] = set()  # by this request: Kafka's controller checks collisions against what came before it
    refused = _not_creatable(context, counts.items())
    for topic in request.topics:
        if topic.name in answered or topic.name in refused:
            continue
        answered.add(topic.name)
        try:
            if counts[topic.name] > 1:
                raise InvalidRequest(f"topic {topic.name!r} appears {counts[topic.name]} times in the request; "
                                     f"name each topic once")
            if timed_out:
                results.append(_failed(module, topic.name, ErrorCode.REQUEST_TIMED_OUT, None))
                continue
            if mutations.bounded:  # the quota is the last check, after everything else about the topic held
                event = _create(broker, topic, True, created)
                mutations.apply(len(event.partition_ids))
            if not validate_only or not mutations.bounded:
                event = _create(broker, topic, validate_only, created)
        except DomainError as error:
            results.append(_failed(module, topic.name, *failure(error)))
            continue
        staged = staged or not validate_only
        if not validate_only:
            created.add(event.topic)
        results.append(_created(module, broker, event, validate_only,
                                allowed(context, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, event.topic)))
    results.extend(_failed(module, name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
                   for name in refused)  # after the others, as Kafka's controller answers them
    if staged:
        await broker.durable()
    broker.client_quotas.throttle(context.connection_id, mutations.throttle_ms)
    return make(module.CreateTopicsResponse, throttle_time=datetime.timedelta(milliseconds=mutations.throttle_ms),
                topics=tuple(results))


def _not_creatable(context: RequestContext, counts: Iterable[tuple[str, int]]) -> dict[str, None]:
    """The names (each once, named once) the principal may not create: neither CREATE on the cluster nor on the
    topic. Empty without an authorizer."""
    if context.broker.authorizer is None or allowed(context, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
        return {}
    return {name: None for name, count in counts
            if count == 1 and not allowed(context, AclOperation.CREATE, ResourceType.TOPIC, name)}


def _failed(module: Any, name: str, code: ErrorCode, message: str | None) -> Any:
    """A topic not created: its configs an empty list, as Kafka sends them (null is for a version without them)."""
    return make(module.CreatableTopicResult, name=name, topic_id=ZERO_UUID, error_code=code, error_message=message,
                num_partitions=-1, replication_factor=-1, configs=())


MAX_PARTITIONS_PER_REQUEST = 10_000
"""Kafka's controller refuses a CreateTopics whose topics add up to more partitions (every topic POLICY_VIOLATION):
one request of 50 topics of 10,000 partitions each made 500,000 partitions here in 0.25 s."""


def _partitions_asked(topics: Any, default: int) -> int:
    """Partitions the request's topics ask for, counted as Kafka does: the assignments when given, else the count
    (-1: the broker's ``num.partitions``); a count that is not valid adds nothing (it is refused on its own)."""
    return sum(len(topic.assignments) if topic.assignments else
               (default if int(topic.num_partitions) == -1 else max(0, int(topic.num_partitions)))
               for topic in topics)


def _create(broker: Broker, topic: CreatableTopic, validate_only: bool, created: Container[str]) -> TopicCreated:
    """One entry decided (and staged unless ``validate_only``) in Kafka's order: its name, whether it exists or
    collides with a topic other than those the request ``created``, its partitions, its configs."""
    check_new_topic_name(topic.name, broker.topic(topic.name), broker.topic_colliding_with(topic.name, created))
    partitions = partitions_to_create(
        int(topic.num_partitions), int(topic.replication_factor),
        [(int(assignment.partition_index), assignment.broker_ids) for assignment in topic.assignments],
        broker.node_id, int(broker.broker_config("num.partitions")),
    )
    configs: dict[str, str] = {}
    for config in topic.configs:
        if config.value is None:
            raise InvalidConfig(f"topic config {config.name!r} has a null value; leave it out to use the default")
        if config.name in configs:
            raise InvalidRequest(f"topic config {config.name!r} appears more than once for topic {topic.name!r}")
        configs[config.name] = config.value
    return broker.create_topic(topic.name, partitions, tuple(configs.items()), validate_only=validate_only)


def _created(module: Any, broker: Broker, event: TopicCreated, validate_only: bool, describable: bool) -> Any:
    """A topic created (or validated); its configs only for a principal that may DESCRIBE_CONFIGS it, else
    ``topic_config_error_code`` TOPIC_AUTHORIZATION_FAILED (v5+), as Kafka."""
    if not describable:
        return make(module.CreatableTopicResult, name=event.topic,
                    topic_id=ZERO_UUID if validate_only else uuid.UUID(bytes=event.topic_id),
                    error_code=ErrorCode.NONE, error_message=None, num_partitions=len(event.partition_ids),
                    replication_factor=1, configs=(), topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    configs = None if not has_field(module.CreatableTopicResult, "configs") else tuple(
        make(module.CreatableTopicConfigs, name=entry.name, value=entry.value, read_only=entry.read_only,
             config_source=int(entry.source), is_sensitive=entry.sensitive)
        for entry in describe(broker, Resource("topic", event.topic), own=dict(event.configs))
    )
    return make(module.CreatableTopicResult, name=event.topic,
                topic_id=ZERO_UUID if validate_only else uuid.UUID(bytes=event.topic_id),
                error_code=ErrorCode.NONE, error_message=None, num_partitions=len(event.partition_ids),
                replication_factor=1, configs=configs)
