"""LogwrightPop (extension key 32009): pop up to 32 records of a topic, each with a receipt handle (RocketMQ 5).

Any consumer pops from any partition, with no rebalance: revived records that are due first (oldest deadline
first), then new records partition by partition from a start that rotates with each pop. Each record stays
invisible to other pops for ``invisible_time_ms`` unless acknowledged (32010), its invisible time changed
(32011) or nacked (32012); then it is revived with its reconsume count one higher. With ``long_poll_ms`` the
request waits (up to 20 s) for the first record appended or revived.

Request (msgpack map): ``group_id: str, topic: str, max_messages: 1..32 (default 32), invisible_time_ms:
10000..43200000 (default 60000), long_poll_ms: 0..20000 (default 0), orderly: bool (default false),
consumer: str (default: the client id), ack_handles: [str, ...] (optional, 1 to 1024: acknowledged before
the pop, as LogwrightPopAck's ``handles``: one round trip per batch instead of two)``.
Response: ``messages: [{partition, offset, timestamp, key, value, headers: [[name, value], ...], handle,
reconsume_times, invisible_until_ms}]``, and ``ack_results`` (as LogwrightPopAck's ``results``) when
``ack_handles`` was given. INVALID_REQUEST for a parameter out of range, UNKNOWN_TOPIC_OR_PARTITION
for a missing topic, UNSUPPORTED_VERSION (35) when the plugin ``pop`` is disabled.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.compat.broker import Broker
from logwright.compat.coordinators.pop_coordinator import PoppedRecord, pop_coordinator
from logwright.compat.errors import error_code_for
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, extension, integer, text
from logwright.core.errors import DomainError, InvalidRequest, UnknownTopic
from logwright.core.log.catalog import TopicState
from logwright.core.pop.pop_commands import DEFAULT_INVISIBLE_TIME_MS, MAX_MESSAGES, PopLimits

API_KEY = 32009
MAX_NAME_LENGTH = 255
"""Longest group id or consumer name a pop request may carry (it travels in every receipt handle)."""


def name(body: Body, field: str, default: str | None = None) -> str:
    """A non-empty string field of at most `MAX_NAME_LENGTH` characters."""
    value = text(body, field) if default is None or field in body else default
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidRequest(f"field {field!r} is {len(value)} characters long; the limit is {MAX_NAME_LENGTH}")
    return value


def flag(body: Body, field: str) -> bool:
    value = body.get(field, False)
    if not isinstance(value, bool):
        raise InvalidRequest(f"field {field!r} must be true or false, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class PopRequest:
    """The request map, checked field by field in the order errors are reported."""

    group_id: str
    topic: TopicState
    consumer: str
    limits: PopLimits

    @classmethod
    def parse(cls, body: Body, broker: Broker, client_id: str | None) -> PopRequest:
        group_id = name(body, "group_id")
        topic_name = text(body, "topic")
        limits = PopLimits(integer(body, "max_messages", 1, MAX_MESSAGES),
                           integer(body, "invisible_time_ms", 0, DEFAULT_INVISIBLE_TIME_MS),
                           integer(body, "long_poll_ms", 0, 0), flag(body, "orderly"))
        consumer = name(body, "consumer", (client_id or "-")[:MAX_NAME_LENGTH])
        topic = broker.topic(topic_name)
        if topic is None:
            raise UnknownTopic(f"topic {topic_name!r} does not exist")
        return cls(group_id, topic, consumer, limits)


def refused(error: DomainError) -> Body:
    """The answer to a refused receipt handle: its Kafka code and message, and ``handle_error`` (``invalid``,
    ``foreign``, ``unknown`` or ``stale``) so a client tells a stale handle from an unknown one."""
    return {"error_code": int(error_code_for(error)), "error_message": str(error),
            "handle_error": getattr(error, "KIND", "")}


MAX_HANDLES = 1_024
"""Handles one batch ack may carry (32 pops' worth)."""


def handle_list(body: Body, field: str) -> list[object]:
    """A list of 1 to `MAX_HANDLES` receipt handles (each checked when it is resolved)."""
    handles = body.get(field)
    if not isinstance(handles, list) or not 1 <= len(handles) <= MAX_HANDLES:
        raise InvalidRequest(f"field {field!r} must be a list of 1 to {MAX_HANDLES} receipt handles")
    return handles


def ack_results(results: list[DomainError | None]) -> list[Body]:
    """Each handle's outcome in request order: error code 0 for settled, else its refusal."""
    return [refused(error) if error is not None else {"error_code": 0, "error_message": None, "handle_error": None}
            for error in results]


def message(popped: PoppedRecord) -> Body:
    record = popped.record
    return {"partition": popped.partition, "offset": record.offset, "timestamp": record.timestamp,
            "key": record.key, "value": record.value, "headers": [[k, v] for k, v in record.headers],
            "handle": popped.handle, "reconsume_times": popped.reconsume_times,
            "invisible_until_ms": popped.invisible_until_ms}


@extension(API_KEY, "LogwrightPop")
async def handle(context: RequestContext, body: Body) -> Body:
    request = PopRequest.parse(body, context.broker, context.client_id)
    coordinator = pop_coordinator(context.broker)
    acked = (coordinator.ack_many(request.group_id, request.consumer, handle_list(body, "ack_handles"))
             if "ack_handles" in body else None)
    popped = await coordinator.pop(request.group_id, request.topic, request.consumer, request.limits)
    answer: Body = {"messages": [message(record) for record in popped]}
    if acked is not None:
        answer["ack_results"] = ack_results(acked)
    return answer
