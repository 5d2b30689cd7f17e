"""DeleteTopics (key 20), versions 1-6: delete topics by name, or (v6) by topic id.

A deletion is one `TopicDeleted` event; its partitions' batches and time index go in the same write. The answer
waits until that write is durable, and until every group's committed offsets on the topic are deleted too (as
Kafka's group coordinator deletes them: a topic created again under the name starts without them). Unknown names
get UNKNOWN_TOPIC_OR_PARTITION, unknown ids UNKNOWN_TOPIC_ID; a v6 entry naming both a name and an id, or
neither, and a topic named twice in one request are INVALID_REQUEST (Kafka's rules; one named twice is answered
once). A timeout of zero or less is REQUEST_TIMED_OUT, as Kafka's controller answers it (`controller_deadline`).
A broker started with ``delete.topic.enable=false`` answers every entry TOPIC_DELETION_DISABLED.
v0 is not in kio and no target client sends it.
"""

from __future__ import annotations

import datetime
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.controller_deadline import expired
from logwright.compat.coordinators.group_coordinator import forget_topic_offsets
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.config_resources import failure
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.turns import give_way
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError, InvalidRequest, UnknownTopicId, quoted
from logwright.core.log.catalog import TopicState, delete_topic

if TYPE_CHECKING:
    from kio.schema.delete_topics import v1, v2, v3, v4, v5, v6
    from typing_extensions import TypeIs

    DeleteTopicsRequest: TypeAlias = (
        v1.DeleteTopicsRequest | v2.DeleteTopicsRequest | v3.DeleteTopicsRequest | v4.DeleteTopicsRequest
        | v5.DeleteTopicsRequest | v6.DeleteTopicsRequest
    )
    """Every version served: mypy checks each field read against all of them."""

ZERO_UUID = uuid.UUID(int=0)
PARTITIONS_PER_TURN = 2_000
"""Partitions deleted before the request gives way: each topic's deletion is its own (as in Kafka), and ten
10,000-partition topics deleted in one stretch held every client 98 ms."""


@handler(20, "DeleteTopics", 1, 6)
async def handle(context: RequestContext, request: DeleteTopicsRequest) -> Any:
    broker = context.broker
    module = response_module("delete_topics", context.api_version)
    if _names_topics_by_id(request):
        wanted = [(entry.name, entry.topic_id or ZERO_UUID) for entry in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    if broker.broker_config("delete.topic.enable") == "false":
        return _deletion_disabled(module, context.api_version, wanted)
    counts = Counter(wanted)
    results: list[Any] = []
    deleted: list[str] = []
    staged = 0
    answered: set[tuple[str | None, uuid.UUID]] = set()
    timed_out = expired(request.timeout)
    mutations = broker.client_quotas.mutations(context.client_id, strict=context.api_version >= 5,
                                                  user=context.principal)
    for name, topic_id in wanted:
        if (name, topic_id) in answered:
            continue  # named twice: answered once, as Kafka does
        answered.add((name, topic_id))
        if staged >= PARTITIONS_PER_TURN:
            staged = 0
            await give_way()
        state: TopicState | None = None
        try:
            if counts[(name, topic_id)] > 1:
                raise InvalidRequest(f"topic {quoted(name) if name else topic_id} appears {counts[(name, topic_id)]} "
                                     f"times in the request")
            if timed_out:
                _check_named_once(name, topic_id)
                results.append(make(module.DeletableTopicResult, name=name, topic_id=topic_id,
                                    error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=None))
                continue
            state = _lookup(broker, name, topic_id)
            denied = _denied(context, name, topic_id, state)
            if denied is not None:
                results.append(make(module.DeletableTopicResult, name=denied[0], topic_id=denied[1],
                                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                    error_message="Topic authorization failed."))
                continue
            event = delete_topic(state, state.name if state is not None else str(name))
            mutations.apply(len(event.partition_ids))
        except DomainError as error:
            code, message = failure(error)
            results.append(make(module.DeletableTopicResult, name=name, topic_id=topic_id, error_code=code,
                                error_message=message))
            continue
        broker.stage([event])
        staged += len(event.partition_ids)
        deleted.append(event.topic)
        results.append(make(module.DeletableTopicResult, name=event.topic, topic_id=uuid.UUID(bytes=event.topic_id),
                            error_code=ErrorCode.NONE, error_message=None))
    if deleted:
        await broker.durable()
        await forget_topic_offsets(broker, deleted)
    broker.client_quotas.throttle(context.connection_id, mutations.throttle_ms)
    return make(module.DeleteTopicsResponse, throttle_time=datetime.timedelta(milliseconds=mutations.throttle_ms),
                responses=tuple(results))


def _deletion_disabled(module: Any, version: int, wanted: Sequence[tuple[str | None, uuid.UUID]]) -> Any:
    """A broker started with ``delete.topic.enable=false`` deletes nothing, as Kafka 4.4's controller refuses before
    it looks at a topic: every entry as the request gave it, TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3,
    which has no such code), no message, whatever else is wrong with the request."""
    code = ErrorCode.TOPIC_DELETION_DISABLED if version >= 3 else ErrorCode.INVALID_REQUEST
    return make(module.DeleteTopicsResponse, throttle_time=datetime.timedelta(0), responses=tuple(
        make(module.DeletableTopicResult, name=name, topic_id=topic_id, error_code=code, error_message=None)
        for name, topic_id in wanted))


def _denied(context: RequestContext, name: str | None, topic_id: uuid.UUID, state: TopicState | None
            ) -> tuple[str | None, uuid.UUID] | None:
    """How a topic the principal may not DELETE is answered (the name and id it is given), as Kafka 4.4's
    controller answers: named, with its name and no id, whether it exists or not unless the principal may DESCRIBE
    it (then a missing one is UNKNOWN_TOPIC_OR_PARTITION); by id, with its name only if it may be described.
    ``None``: allowed (or no authorizer)."""
    if context.broker.authorizer is None:
        return None
    if name is not None:
        if not allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
            return name, ZERO_UUID
        return None if state is None or allowed(context, AclOperation.DELETE, ResourceType.TOPIC, name) \
            else (name, ZERO_UUID)
    if state is None or allowed(context, AclOperation.DELETE, ResourceType.TOPIC, state.name):
        return None
    return (state.name if allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, state.name) else None), topic_id


def _check_named_once(name: str | None, topic_id: uuid.UUID) -> None:
    """A v6 entry names a topic by its name or its id, not both and not neither."""
    if name is not None and topic_id != ZERO_UUID:
        raise InvalidRequest(f"topic {quoted(name)} is named by both name and id {topic_id}; give one of them")
    if name is None and topic_id == ZERO_UUID:
        raise InvalidRequest("a topic to delete needs a name or a topic id")


def _lookup(broker: Broker, name: str | None, topic_id: uuid.UUID) -> TopicState | None:
    _check_named_once(name, topic_id)
    if name is not None:
        return broker.topic(name)
    state = broker.topic_by_id(topic_id)
    if state is None:
        raise UnknownTopicId(f"no topic has id {topic_id}")
    return state


def _names_topics_by_id(request: DeleteTopicsRequest) -> TypeIs[v6.DeleteTopicsRequest]:
    """v6 names topics by name or id, in entries rather than a list of names."""
    return has_field(request, "topics")
