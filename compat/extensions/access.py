"""Who may call logwright's own keys when an authorizer is on: the ACLs a Kafka client needs for the same work.

Kafka's ACLs name no logwright key, so each key says what its request amounts to in Kafka's terms and asks for
that: popping is a Fetch and an offset commit in one (READ on the topic and on the group), settling a popped or
shared record is a ShareAcknowledge (READ on the group and the record's topic), inspecting a cursor is a
DescribeGroups and a look at the topic (DESCRIBE on both), the broker's counters are a DescribeCluster (DESCRIBE
on the cluster). A key registers its `Access` with `extension` or `versioned`; the dispatcher then lets its
requests through (`checked_by_handler`) and the key's wrapper runs the check on the decoded body, before the
handler, so a refusal costs no second decode. The group is checked before the topics, as Kafka does; a topic is
refused whether or not it exists (a refusal must not tell which topics exist). Keys with no `Access`
(LogwrightAdvanceClock) stay for super users.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from typing import Any

from logwright.compat.authorization import allowed, allowed_on_cluster
from logwright.compat.errors import ErrorCode, KafkaError
from logwright.compat.registry import RequestContext
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.pop.pop_commands import MAX_HANDLES
from logwright.core.pop.receipt_handle import InvalidReceiptHandle, ReceiptHandle

Access = Callable[[RequestContext, dict[str, Any]], None]
"""Raises `KafkaError` (an authorization code) when the request's principal may not make the request."""

READ, DESCRIBE = AclOperation.READ, AclOperation.DESCRIBE


def checked_by_handler(context: RequestContext, body: bytes) -> bool:
    """`HandlerEntry.authorize` of a key with an `Access`: its wrapper checks the decoded body itself."""
    return True


def enforced(context: RequestContext) -> bool:
    return context.broker.authorizer is not None


def require_group(context: RequestContext, group_id: object, operation: int = READ) -> None:
    if isinstance(group_id, str) and not allowed(context, operation, ResourceType.GROUP, group_id):
        raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED,
                         f"{AclOperation(operation).name} on group {group_id!r} is not allowed")


def require_topic(context: RequestContext, topic: object, operation: int = READ) -> None:
    if isinstance(topic, str) and not allowed(context, operation, ResourceType.TOPIC, topic):
        raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                         f"{AclOperation(operation).name} on topic {topic!r} is not allowed")


def require_topic_ids(context: RequestContext, topic_ids: Iterable[uuid.UUID], operation: int = READ) -> None:
    """Each named topic that exists, by its name (a deleted topic's handles are refused by the handler anyway)."""
    for topic_id in set(topic_ids):
        topic = context.broker.topic_by_id(topic_id)
        if topic is not None:
            require_topic(context, topic.name, operation)


def require_cluster(context: RequestContext, operation: int) -> None:
    if not allowed_on_cluster(context, operation):
        raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                         f"{AclOperation(operation).name} on the cluster is not allowed")


def group_and_topic(operation: int = READ) -> Access:
    """The access of a key naming one ``group_id`` and one ``topic``."""

    def check(context: RequestContext, body: dict[str, Any]) -> None:
        require_group(context, body.get("group_id"), operation)
        require_topic(context, body.get("topic"), operation)

    return check


def _handle_topic_ids(body: dict[str, Any]) -> Iterable[uuid.UUID]:
    """The topic ids of the receipt handles a request names: v0 texts (``handle``, ``handles``, ``ack_handles``),
    compact acks (``acks``); a malformed one names none (the handler refuses it)."""
    texts = [body.get("handle")]
    for field in ("handles", "ack_handles"):
        listed = body.get(field)
        # a longer list is refused by the handler unread: parsing 8 MiB of handles here would hold the loop
        if isinstance(listed, list) and len(listed) <= MAX_HANDLES:
            texts.extend(listed)
    for text in texts:
        if text is not None:
            try:
                yield ReceiptHandle.parse(text).topic_id
            except InvalidReceiptHandle:
                pass
    acks = body.get("acks")
    if isinstance(acks, list) and len(acks) <= MAX_HANDLES:
        for entry in acks:
            topic_id = entry.get("topic_id") if isinstance(entry, dict) else None
            if isinstance(topic_id, bytes) and len(topic_id) == 16:
                yield uuid.UUID(bytes=topic_id)


def popping(context: RequestContext, body: dict[str, Any]) -> None:
    """A pop: READ on its group and topic, and on the topics of the handles it acknowledges first."""
    require_group(context, body.get("group_id"))
    require_topic(context, body.get("topic"))
    require_topic_ids(context, _handle_topic_ids(body))


def settling(context: RequestContext, body: dict[str, Any]) -> None:
    """An ack, nack or invisible-time change of popped records: READ on the group and each handle's topic."""
    require_group(context, body.get("group_id"))
    require_topic_ids(context, _handle_topic_ids(body))


def group_only(operation: int = READ) -> Access:
    def check(context: RequestContext, body: dict[str, Any]) -> None:
        require_group(context, body.get("group_id"), operation)

    return check


def describing_the_cluster(context: RequestContext, body: dict[str, Any]) -> None:
    require_cluster(context, DESCRIBE)
