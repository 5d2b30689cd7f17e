"""What the logwright extension API keys share: a msgpack body, validation, and error answers.

Kafka's request format cannot say what the bundled client needs (a negative ack with a delay, acks
without a share session, cumulative acks, cursor inspection, Failover and Key_Shared consumer
options), so these keys live outside Kafka's range (32002 and up, next to ``LogwrightAdvanceClock``
32001) and are always advertised in ApiVersions: standard clients ignore keys they do not know.

Wire format of every key here (version 0): request header v1 (api key, version, correlation id,
client id) followed by one msgpack map; response header v0 (correlation id) followed by one msgpack
map that always holds ``error_code`` (a Kafka error code, 0 for success) and ``error_message`` (a
string or nil), plus the key's own fields. Offsets ranges are ``[first, last]`` pairs, inclusive.

A body that is not a map, a missing or mistyped field, an unknown group, member, topic or partition
are answered with the matching Kafka error code and a message; the connection stays open.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack
from logwright.compat.broker import Broker
from logwright.compat.coordinators.share_coordinator import ShareCoordinator
from logwright.compat.errors import ErrorCode, KafkaError, error_code_for
from logwright.compat.extensions.access import Access, checked_by_handler, enforced
from logwright.compat.registry import HandlerEntry, RequestContext, register_extension
from logwright.core.errors import DomainError, InvalidRequest, UnknownMember, UnknownPartition, UnknownTopic
from logwright.core.log.catalog import TopicState
from logwright.core.share_groups.share_groups import ShareGroupState

Body = dict[str, Any]
ExtensionHandler = Callable[[RequestContext, Body], Awaitable[Body]]
RawHandler = Callable[[RequestContext, bytes], Awaitable[bytes]]

MAX_RANGES = 100_000
"""Ranges one request may name: bounds the work a single request can ask for."""


def answer(code: int = ErrorCode.NONE, message: str | None = None, **fields: Any) -> bytes:
    packed: bytes = msgpack.packb({"error_code": int(code), "error_message": message, **fields}, use_bin_type=True)
    return packed


MAX_BODY_BYTES = 8 * 1024 * 1024
"""The largest extension body decoded. msgpack builds every object of a body at once on the event loop: 95 MiB of
small items held every other client 1.5-1.7 s (a hostile-values fuzz find), 8 MiB of them about 0.15 s. The largest
body the bundled client sends, an acknowledge_batch of `MAX_RANGES` entries, is about 4 MB."""


def decode(body: bytes) -> Body:
    """The request's msgpack map; `InvalidRequest` for anything else (a body over `MAX_BODY_BYTES` is not read)."""
    if len(body) > MAX_BODY_BYTES:
        raise InvalidRequest(f"the request body is {len(body)} bytes, over the {MAX_BODY_BYTES} an extension key reads")
    try:
        value = msgpack.unpackb(body, raw=False, strict_map_key=True)
    except Exception as error:  # msgpack raises several unrelated exception types
        raise InvalidRequest(f"the request body is not msgpack: {type(error).__name__}: {error}") from error
    if not isinstance(value, dict):
        raise InvalidRequest(f"the request body must be a msgpack map, got {type(value).__name__}")
    return value


def extension(api_key: int, name: str, access: Access | None = None) -> Callable[[ExtensionHandler], ExtensionHandler]:
    """Register ``handle`` (taking the decoded map, returning the answer's fields) for ``api_key`` v0.

    Every failure becomes an answer: a `DomainError` or `KafkaError` its Kafka code, anything else (through the
    server's guard, which logs it) UNKNOWN_SERVER_ERROR with the exception's text, never a dropped
    connection. ``access``: what the key needs when an authorizer is on (`compat.extensions.access`); without
    it only super users may call the key then.
    """

    def register(handle: ExtensionHandler) -> ExtensionHandler:
        register_extension(HandlerEntry(api_key, name, 0, 0, wrapped((handle,), access), error_answer=answer,
                                        authorize=None if access is None else checked_by_handler))
        return handle

    return register


def wrapped(handlers: Sequence[ExtensionHandler], access: Access | None) -> RawHandler:
    """The raw handler of ``handlers[version]``: the body decoded, ``access`` checked when an authorizer is on,
    the answer packed, a refusal answered with its code."""

    async def raw(context: RequestContext, body: bytes) -> bytes:
        try:
            decoded = decode(body)
            if access is not None and enforced(context):
                access(context, decoded)
            return answer(**await handlers[context.api_version](context, decoded))
        except DomainError as error:
            return answer(error_code_for(error), str(error))
        except KafkaError as error:
            return answer(error.code, error.message)

    raw.__module__ = handlers[0].__module__  # the handler table checks which module serves each key
    return raw


def text(body: Body, field: str) -> str:
    value = body.get(field)
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"field {field!r} must be a non-empty string, got {value!r}")
    return value


def integer(body: Body, field: str, minimum: int = 0, default: int | None = None) -> int:
    value = body.get(field, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InvalidRequest(f"field {field!r} must be an integer of at least {minimum}, got {value!r}")
    return value


_MAX_OFFSET = 2**63 - 1


def ranges(value: Any, field: str = "ranges") -> tuple[tuple[int, int], ...]:
    """A non-empty list of ``[first, last]`` pairs with ``0 <= first <= last`` < 2**63 (offsets are int64)."""
    if not isinstance(value, list) or not value or len(value) > MAX_RANGES:
        raise InvalidRequest(f"field {field!r} must be a list of 1 to {MAX_RANGES} [first, last] pairs")
    found = []
    for pair in value:
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in pair)
                or not 0 <= pair[0] <= pair[1] <= _MAX_OFFSET):
            raise InvalidRequest(f"{pair!r} in {field!r} is not an inclusive [first, last] offset range")
        found.append((int(pair[0]), int(pair[1])))
    return tuple(found)


def member_of(coordinator: ShareCoordinator, group_id: str, member_id: str) -> ShareGroupState:
    """The group, if ``member_id`` is one of its members (`UnknownMember` otherwise)."""
    group = coordinator.group(group_id)
    if group is None or group.member(member_id) is None:
        raise UnknownMember(f"member {member_id!r} is not in share group {group_id!r}; join it first")
    return group


def partition_of(broker: Broker, topic_name: str, index: Any) -> tuple[TopicState, int]:
    """The topic and the partition id of its partition ``index``."""
    topic = broker.topic(topic_name)
    if topic is None:
        raise UnknownTopic(f"topic {topic_name!r} does not exist")
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(topic.partition_ids):
        raise UnknownPartition(f"topic {topic_name!r} has no partition {index!r}")
    return topic, topic.partition_ids[index]


@dataclass(frozen=True, slots=True)
class MemberPartition:
    """The member and the one partition a request names (``group_id, member_id, topic, partition``), checked in
    the order errors are reported: the two ids, then the topic and partition looked up."""

    group_id: str
    member_id: str
    topic: TopicState
    partition_id: int

    @classmethod
    def parse(cls, body: Body, broker: Broker) -> MemberPartition:
        group_id, member_id = text(body, "group_id"), text(body, "member_id")
        topic, partition_id = partition_of(broker, text(body, "topic"), body.get("partition"))
        return cls(group_id, member_id, topic, partition_id)
