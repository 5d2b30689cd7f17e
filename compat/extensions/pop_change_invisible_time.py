"""LogwrightPopChangeInvisibleTime (extension key 32011): keep a popped record invisible longer (or shorter).

RocketMQ's ``changeInvisibleDuration``: the record stays in flight, invisible ``invisible_time_ms`` from now
(0 to 12 h; 0 revives it at once), under a new receipt handle the answer carries. The old handle is stale
from then on: an ack or another change with it is refused with ``handle_error`` ``stale`` and the record is
not lost (RocketMQ #9583 acknowledged nothing and redelivered it). The change is one event, durable on answer.

Request (msgpack map): ``group_id: str, handle: str, invisible_time_ms: int, consumer: str (optional)``.
Response: ``handle`` (the new one), ``invisible_until_ms``. Refusals as LogwrightPopAck's, and INVALID_REQUEST
for an invisible time out of range.
"""

from __future__ import annotations

from logwright.compat.coordinators.pop_coordinator import pop_coordinator
from logwright.compat.extensions.access import settling
from logwright.compat.extensions.pop import MAX_NAME_LENGTH, name, refused
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, extension, integer
from logwright.core.pop.receipt_handle import HANDLE_ERRORS

API_KEY = 32011


@extension(API_KEY, "LogwrightPopChangeInvisibleTime", settling)
async def handle(context: RequestContext, body: Body) -> Body:
    group_id = name(body, "group_id")
    consumer = name(body, "consumer", (context.client_id or "-")[:MAX_NAME_LENGTH])
    invisible_time_ms = integer(body, "invisible_time_ms")
    try:
        changed = pop_coordinator(context.broker).change_invisible_time(group_id, consumer, body.get("handle"),
                                                                        invisible_time_ms)
    except HANDLE_ERRORS as error:
        return refused(error)
    await context.broker.durable()
    return {"handle": changed.handle, "invisible_until_ms": changed.invisible_until_ms}
