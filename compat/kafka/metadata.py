"""Metadata (key 3), versions 0-13: one broker, every partition led by it, topics auto-created on request.

v0 treats an empty topic list as "all topics"; v1+ use null for that. v10+ carry topic ids, and from v12 a
topic may be named by id (a non-zero id names it, whatever name comes with it). Auto-creation needs both the
request's permission (v4+) and the broker's ``auto.create.topics.enable``; a name Kafka would refuse gets
INVALID_TOPIC_EXCEPTION, asked to create it or not. A topic auto-created is answered at once, where Kafka 4.4 answers
UNKNOWN_TOPIC_OR_PARTITION until its controller has made it (clients ask again either way).
``__consumer_offsets`` is reported with ``is_internal`` (even while it does not exist, as Kafka does) and
created with Kafka's partition count whenever the request allows auto-creation. A topic named more than once
is answered once, as Kafka takes the names into a set (`_wanted`).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat import authorized_operations
from logwright.compat.authorization import allowed, operations
from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.leader_epochs import PARTITION_LEADER_EPOCH
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.wire.encoder import Encoded, encode_entity
from logwright.core.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType
from logwright.core.errors import DomainError
from logwright.core.log.catalog import TopicState, validate_topic_name
from logwright.core.log.internal_topics import is_internal_topic

if TYPE_CHECKING:
    from kio.schema.metadata import v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13
    from typing_extensions import TypeIs

    MetadataRequest: TypeAlias = (
        v0.MetadataRequest | v1.MetadataRequest | v2.MetadataRequest | v3.MetadataRequest | v4.MetadataRequest
        | v5.MetadataRequest | v6.MetadataRequest | v7.MetadataRequest | v8.MetadataRequest | v9.MetadataRequest
        | v10.MetadataRequest | v11.MetadataRequest | v12.MetadataRequest | v13.MetadataRequest
    )
    """Every version served: mypy checks each field read against all of them."""


@handler(3, "Metadata", 0, 13, at_once=True)
async def handle(context: RequestContext, request: MetadataRequest) -> Any:
    broker = context.broker
    module = response_module("metadata", context.api_version)
    requested = request.topics
    if requested is None or (context.api_version == 0 and not requested):
        wanted: list[tuple[str | uuid.UUID | None, TopicState | None]] = [(state.name, state)
                                                                          for state in broker.topics()]
    else:
        if context.api_version in (10, 11) and any(_named_by_id(entry) for entry in requested):
            return _ids_refused(module, requested)
        wanted = _wanted(broker, requested)
    may_create = bool(request.allow_auto_topic_creation) if _may_create(request) else True
    allow_auto_create = may_create and broker.auto_create_enabled()
    denied: list[tuple[str | uuid.UUID, bool]] = []
    if broker.authorizer is not None:
        all_topics = requested is None or (context.api_version == 0 and not requested)
        by_id = not all_topics and any(_names_topic_id(entry) and entry.topic_id is not None
                                       and entry.topic_id.int != 0 for entry in requested or ())
        wanted, denied = _authorized(context, wanted, all_topics, by_id, allow_auto_create)
    errors: dict[str, ErrorCode] = {}
    created = False
    for name, state in wanted:
        if state is not None or not isinstance(name, str):
            continue
        try:  # a name that cannot be a topic's is INVALID_TOPIC_EXCEPTION, asked to create it or not, as Kafka
            validate_topic_name(name)
        except DomainError as error:
            errors[name] = error_code_for(error)
            continue
        if may_create and is_internal_topic(name):
            created = broker.ensure_consumer_offsets_topic() or created
        elif allow_auto_create:
            try:
                broker.create_topic(name, int(broker.broker_config("num.partitions")))
                created = True
            except DomainError as error:
                errors[name] = error_code_for(error)
    if created:
        await broker.durable()
    asked_topic_operations = bool(getattr(request, "include_topic_authorized_operations", False))  # v8+
    topic_operations = authorized_operations.reported(asked_topic_operations, authorized_operations.TOPIC)
    topics = []
    for name, state in wanted:
        if isinstance(name, uuid.UUID):  # a topic id the broker does not know: Kafka answers it with the id
            topics.append(make(module.MetadataResponseTopic, error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None,
                               topic_id=name, partitions=(), is_internal=False,
                               topic_authorized_operations=authorized_operations.UNKNOWN))
            continue
        state = broker.topic(name) if name is not None else state
        if asked_topic_operations and broker.authorizer is not None:
            topic_operations = operations(context, ResourceType.TOPIC, name or "", authorized_operations.TOPIC)
        if state is None:
            code = errors.get(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) if name is not None \
                else ErrorCode.UNKNOWN_TOPIC_ID  # neither a name nor an id
            topics.append(make(module.MetadataResponseTopic, error_code=code, name=name,
                               topic_id=uuid.UUID(int=0), partitions=(), is_internal=is_internal_topic(name),
                               topic_authorized_operations=topic_operations))
            continue
        topics.append(_topic(module, state, broker.node_id, topic_operations))
    for named, internal in denied:  # after the others, never looked up, as Kafka answers them
        by_id = isinstance(named, uuid.UUID)
        topics.append(make(module.MetadataResponseTopic, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                           name=None if by_id else named, topic_id=named if by_id else uuid.UUID(int=0),
                           partitions=(), is_internal=internal,
                           topic_authorized_operations=authorized_operations.UNKNOWN))
    settings = broker.settings
    return make(
        module.MetadataResponse,
        throttle_time=datetime.timedelta(0),
        brokers=(make(module.MetadataResponseBroker, node_id=broker.node_id, host=context.advertised[0],
                      port=context.advertised[1], rack=None),),
        cluster_id=settings.cluster_id,
        controller_id=broker.node_id,
        topics=tuple(topics),
        cluster_authorized_operations=authorized_operations.reported(  # v8-v10
            bool(getattr(request, "include_cluster_authorized_operations", False)),
            operations(context, ResourceType.CLUSTER, CLUSTER_NAME, authorized_operations.CLUSTER)),
        error_code=ErrorCode.NONE,
    )


def _authorized(context: RequestContext, wanted: list[tuple[str | uuid.UUID | None, TopicState | None]],
                all_topics: bool, by_id: bool, allow_auto_create: bool
                ) -> tuple[list[tuple[str | uuid.UUID | None, TopicState | None]], list[tuple[str | uuid.UUID, bool]]]:
    """The topics the principal may DESCRIBE, and those it may not: answered TOPIC_AUTHORIZATION_FAILED after the
    others (by id when the request names topics by id), left out of an all-topics answer, as Kafka decides them. A
    topic to be auto-created also needs CREATE on the cluster or on itself, else it is answered so too (before those
    denied DESCRIBE, marked internal if it would be). Denied: the name or id, and whether internal."""
    kept: list[tuple[str | uuid.UUID | None, TopicState | None]] = []
    not_described: list[tuple[str | uuid.UUID, bool]] = []
    not_created: list[tuple[str | uuid.UUID, bool]] = []
    may_create_any = None
    for name, state in wanted:
        topic_name = state.name if state is not None else name
        if not isinstance(topic_name, str):  # an unknown topic id: no name to check
            kept.append((name, state))
            continue
        if not allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic_name):
            if not all_topics:
                not_described.append((uuid.UUID(bytes=state.topic_id) if by_id and state is not None else topic_name,
                                      False))
            continue
        if state is None and allow_auto_create:
            if may_create_any is None:
                may_create_any = allowed(context, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME)
            if not may_create_any and not allowed(context, AclOperation.CREATE, ResourceType.TOPIC, topic_name):
                not_created.append((topic_name, is_internal_topic(topic_name)))
                continue
        kept.append((name, state))
    return kept, [*not_created, *not_described]


def _wanted(broker: Broker, requested: Sequence[Any]) -> list[tuple[str | uuid.UUID | None, TopicState | None]]:
    """The topics named, as Kafka 4.4 takes them (a set): each once, unknown topic ids (given as their id) first,
    then the topics the broker has, then the names it does not (which auto-creation may create), each group in the
    order first named. (Kafka's set keeps that order up to four topics; past four it answers in hash order.)"""
    unknown_ids: dict[uuid.UUID, None] = {}
    known: dict[str, TopicState] = {}
    missing: dict[str | None, None] = {}
    for entry in requested:
        name: str | None = entry.name
        topic_id = entry.topic_id if _names_topic_id(entry) else None
        if topic_id is not None and topic_id.int != 0:  # an id names the topic, whatever name comes with it
            state = broker.topic_by_id(topic_id)
            if state is None:
                unknown_ids[topic_id] = None
            else:
                known.setdefault(state.name, state)
        elif name is not None and (state := broker.topic(name)) is not None:
            known.setdefault(name, state)
        else:
            missing[name] = None
    return [*((topic_id, None) for topic_id in unknown_ids), *known.items(), *((name, None) for name in missing)]


def _named_by_id(entry: Any) -> bool:
    """A requested topic without a name, or with a topic id (not all zeros)."""
    return entry.name is None or (_names_topic_id(entry) and entry.topic_id is not None and entry.topic_id.int != 0)


def _ids_refused(module: Any, requested: Any) -> Any:
    """Versions 10 and 11 carry a topic id field but Kafka serves ids from v12 on: a topic named by id (or not named)
    makes Kafka's InvalidRequestException answer, every requested topic INVALID_REQUEST, a null name as ""."""
    return make(
        module.MetadataResponse, throttle_time=datetime.timedelta(0), brokers=(), cluster_id=None, controller_id=-1,
        topics=tuple(make(module.MetadataResponseTopic, error_code=ErrorCode.INVALID_REQUEST, name=entry.name or "",
                          topic_id=entry.topic_id, partitions=(), is_internal=False,
                          topic_authorized_operations=authorized_operations.UNKNOWN) for entry in requested),
        cluster_authorized_operations=authorized_operations.UNKNOWN, error_code=ErrorCode.NONE)


_ENCODED_TOPICS: dict[tuple[str, int, str, int], tuple[TopicState, Encoded]] = {}
ENCODED_TOPICS_KEPT = 10_000
"""Topic entries kept encoded (per version, node id, name and authorized operations), each with the state it was
written from: a
client refreshing a 10,000-partition topic cost 40 ms of building and encoding its partitions per request."""


def _topic(module: Any, state: TopicState, node_id: int, operations: int) -> Encoded:
    """The topic's entry, encoded once per `TopicState` (the catalog replaces the state on every change, so an
    entry kept for an older state is never answered)."""
    key = (module.__name__, node_id, state.name, operations)
    kept = _ENCODED_TOPICS.get(key)
    if kept is not None and kept[0] is state:
        return kept[1]
    if len(_ENCODED_TOPICS) >= ENCODED_TOPICS_KEPT:
        _ENCODED_TOPICS.clear()
    encoded = Encoded(encode_entity(_topic_entity(module, state, node_id, operations)))
    _ENCODED_TOPICS[key] = (state, encoded)
    return encoded


def _topic_entity(module: Any, state: TopicState, node_id: int, operations: int) -> Any:
    partitions = tuple(
        make(module.MetadataResponsePartition, error_code=ErrorCode.NONE, partition_index=index,
             leader_id=node_id, leader_epoch=PARTITION_LEADER_EPOCH, replica_nodes=(node_id,), isr_nodes=(node_id,),
             offline_replicas=())
        for index in range(len(state.partition_ids))
    )
    return make(module.MetadataResponseTopic, error_code=ErrorCode.NONE, name=state.name,
                topic_id=uuid.UUID(bytes=state.topic_id), is_internal=is_internal_topic(state.name),
                partitions=partitions,
                topic_authorized_operations=operations)


def _may_create(request: MetadataRequest) -> TypeIs[
    v4.MetadataRequest | v5.MetadataRequest | v6.MetadataRequest | v7.MetadataRequest | v8.MetadataRequest
    | v9.MetadataRequest | v10.MetadataRequest | v11.MetadataRequest | v12.MetadataRequest | v13.MetadataRequest
]:
    """v4+ say whether the request allows auto-creation; earlier versions always do."""
    return has_field(request, "allow_auto_topic_creation")


def _names_topic_id(entry: object) -> TypeIs[
    v10.request.MetadataRequestTopic | v11.request.MetadataRequestTopic | v12.request.MetadataRequestTopic
    | v13.request.MetadataRequestTopic
]:
    """v10+ may name a topic by id alone."""
    return has_field(entry, "topic_id")
