"""ConsumerGroupHeartbeat (key 68), versions 0-1: the KIP-848 consumer group protocol.

v1 adds a subscribed topic regex (matched in full, compiled by RE2 as Kafka's RE2J: `compat.topic_regex`). A member
joins with epoch 0 (librdkafka 2.16 and Java 4.x generate their member id, which v1 requires, KIP-1082; an
empty one gets a UUID in v0), heartbeats with its epoch, leaves with -1 (-2: a static member leaving
temporarily). The assignment is
sent, as Kafka 4.4 sends it, on a join, to a full request (rebalance timeout, subscription and owned partitions all
given: a client resynchronizing after an error) and when its partitions changed; null otherwise ("unchanged"), an
epoch moved alone included. Refusals are Kafka's: UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
UNRELEASED_INSTANCE_ID, UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, INVALID_REQUEST (also for an empty
instance or rack id and for epoch -2 without an instance id, as Kafka 4.4),
INCONSISTENT_GROUP_PROTOCOL (a classic group of that id has members), GROUP_ID_NOT_FOUND (a share group).
With an authorizer, a subscription naming a topic the principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED,
and a regex matches only the topics it may (`ConsumerCoordinator.regex_topics`), as Kafka.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator, consumer_group
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.kafka.heartbeat_answer import heartbeat_answer, refusal
from logwright.compat.kafka.join_group import milliseconds
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.consumer_groups.consumer_groups import as_tuple
from logwright.core.consumer_groups.consumer_reconciliation import ConsumerHeartbeat
from logwright.core.errors import DomainError

if TYPE_CHECKING:
    from kio.schema.consumer_group_heartbeat import v0, v1
    from typing_extensions import TypeIs

    ConsumerGroupHeartbeatRequest: TypeAlias = v0.ConsumerGroupHeartbeatRequest | v1.ConsumerGroupHeartbeatRequest
    """Every version served: mypy checks each field read against all of them."""


def owned_partitions(broker: Broker, owned: Any) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    """The request's ``topic_partitions`` by topic name (unknown topic ids are dropped)."""
    if owned is None:
        return None
    named: list[tuple[str, int]] = []
    for entry in owned:
        topic = broker.topic_by_id(entry.topic_id) if entry.topic_id is not None else None
        if topic is not None:
            named.extend((topic.name, int(index)) for index in entry.partitions)
    return as_tuple(named)


def wire_assignment(broker: Broker, module: Any, partitions: tuple[tuple[str, tuple[int, ...]], ...]) -> Any:
    """An assignment of this API's or ConsumerGroupDescribe's ``module``: only the latter names topics."""
    entries = []
    for name, indexes in partitions:
        topic = broker.topic(name)
        if topic is not None:
            named = {"topic_name": name} if has_field(module.TopicPartitions, "topic_name") else {}
            entries.append(make(module.TopicPartitions, topic_id=uuid.UUID(bytes=topic.topic_id), partitions=indexes,
                                **named))
    return make(module.Assignment, topic_partitions=tuple(entries))


@handler(68, "ConsumerGroupHeartbeat", 0, 1)
async def handle(context: RequestContext, request: ConsumerGroupHeartbeatRequest) -> Any:
    broker = context.broker
    module = response_module("consumer_group_heartbeat", context.api_version)
    coordinator = consumer_coordinator(broker)
    names = request.subscribed_topic_names
    owned = owned_partitions(broker, request.topic_partitions)
    command = ConsumerHeartbeat(
        group_id=request.group_id or "",
        member_id=request.member_id or "",
        member_epoch=int(request.member_epoch),
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=milliseconds(request.rebalance_timeout),
        subscribed_topic_names=tuple(names) if names is not None else None,
        subscribed_topic_regex=request.subscribed_topic_regex if _may_subscribe_by_regex(request) else None,
        server_assignor=request.server_assignor,
        owned=owned,
        client_id=context.client_id or "",
        client_host=f"/{context.client_host}",
        member_id_required=context.api_version >= 1,
    )

    answer = heartbeat_answer(module.ConsumerGroupHeartbeatResponse, coordinator, command.group_id)

    if names and context.broker.authorizer is not None and not all(
            allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name) for name in names):
        # a subscription naming a topic the principal may not DESCRIBE: refused alone, nothing else told (Kafka)
        return answer(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, None, 0, None)
    before = consumer_group(broker, command.group_id)
    describable = None
    if broker.authorizer is not None:
        def describable(name: str) -> bool:
            return allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
    try:
        member_id, state = await coordinator.heartbeat(command, describable)
    except DomainError as error:
        return refusal(answer, error_code_for(error), str(error))
    member = state.member(member_id)
    if member is None or command.member_epoch < 0:
        return answer(ErrorCode.NONE, None, member_id, command.member_epoch, None)
    previous = before.member(member_id) if before is not None else None
    changed = previous is None or previous.assigned != member.assigned
    full = command.rebalance_timeout_ms != -1 and owned is not None and (
        command.subscribed_topic_names is not None or command.subscribed_topic_regex is not None)
    assignment = None
    if command.member_epoch == 0 or full or changed:
        assignment = wire_assignment(broker, module, member.assigned)
    return answer(ErrorCode.NONE, None, member_id, member.member_epoch, assignment)


def _may_subscribe_by_regex(request: ConsumerGroupHeartbeatRequest) -> TypeIs[v1.ConsumerGroupHeartbeatRequest]:
    """v1+ may subscribe by a regular expression."""
    return has_field(request, "subscribed_topic_regex")
