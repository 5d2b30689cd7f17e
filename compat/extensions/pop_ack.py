"""LogwrightPopAck (extension key 32010): settle a popped record by its receipt handle (RocketMQ's ack).

Only the record's current handle settles it; a superseded one (the invisible time was changed, the record was
nacked, or it was revived and popped again) is refused as stale, never taken as success, and the record stays
in flight under its newer handle. A revived record not yet popped again is settled by its last handle (it
was processed; delivering it again would be the duplicate).

Request (msgpack map): ``group_id: str, handle: str, consumer: str (default: the client id)``, or ``handles:
[str, ...]`` (1 to 1024) instead of ``handle``. Response for ``handle``: nothing but the error fields,
durable on success; refusals: INVALID_REQUEST for a malformed handle or one of another group,
INVALID_RECORD_STATE for an unknown or stale one, with ``handle_error`` = ``invalid``, ``foreign``,
``unknown`` or ``stale``. Response for ``handles``: ``results: [{error_code, error_message, handle_error}]``
in request order (error code 0: settled); the accepted ones are settled, one event per partition.

Version 1 (compact): ``group_id``, ``consumer`` and ``acks: [{topic_id: bin 16, partition, epoch, ranges:
[[first, last], ...]}, ...]`` (1 to 1024 entries, at most 32,768 offsets in all; a compact pop's ``epoch``
and ``ranges``). Every offset is checked as its handle ``(offset, epoch)`` would be; response ``results:
[{refused: [[offset, error_code, handle_error, error_message], ...]}]`` per entry in request order, every
offset not listed settled (one event per partition), durable on return.
"""

from __future__ import annotations

from logwright.compat.coordinators.pop_coordinator import pop_coordinator
from logwright.compat.extensions.access import settling
from logwright.compat.extensions.pop import (
    MAX_NAME_LENGTH,
    ack_range_results,
    ack_ranges,
    ack_results,
    handle_list,
    name,
    refused,
    versioned,
)
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body
from logwright.core.pop.receipt_handle import HANDLE_ERRORS

API_KEY = 32010


async def handle(context: RequestContext, body: Body) -> Body:
    group_id = name(body, "group_id")
    consumer = name(body, "consumer", (context.client_id or "-")[:MAX_NAME_LENGTH])
    coordinator = pop_coordinator(context.broker)
    if "handles" in body:
        results = coordinator.ack_many(group_id, consumer, handle_list(body, "handles"))
        await context.broker.durable()
        return {"results": ack_results(results)}
    try:
        coordinator.ack(group_id, consumer, body.get("handle"))
    except HANDLE_ERRORS as error:
        return refused(error)
    await context.broker.durable()
    return {}


async def handle_v1(context: RequestContext, body: Body) -> Body:
    group_id = name(body, "group_id")
    consumer = name(body, "consumer", (context.client_id or "-")[:MAX_NAME_LENGTH])
    refusals = pop_coordinator(context.broker).ack_ranges(group_id, consumer, ack_ranges(body, "acks"))
    await context.broker.durable()
    return {"results": ack_range_results(refusals)}


versioned(API_KEY, "LogwrightPopAck", (handle, handle_v1), settling)
