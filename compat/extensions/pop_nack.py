"""LogwrightPopNack (extension key 32012): give a popped record back as failed, to come back after a retry delay.

Without ``delay_ms`` the delay is the next level of the group's retry table: its redelivery backoff policy
(``logwright.redelivery.backoff.*``) if it set one, else RocketMQ's default table (1 s, 5 s, 10 s, 30 s, 1 m ...
2 h), the first failure waiting the first level. The record revives then with its reconsume count one higher;
a failure past ``logwright.pop.max.reconsume.times`` (default 16) sends it to the dead-letter topic at once.

Request (msgpack map): ``group_id: str, handle: str, delay_ms: int 0..43200000 (optional), consumer: str
(optional)``. Response: ``invisible_until_ms`` (when it revives), ``dead_lettered: bool``. Refusals as
LogwrightPopAck's.
"""

from __future__ import annotations

from logwright.compat.coordinators.pop_coordinator import pop_coordinator
from logwright.compat.extensions.access import settling
from logwright.compat.extensions.pop import MAX_NAME_LENGTH, name, refused
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, extension, integer
from logwright.core.pop.pop_commands import check_changed_invisible_time
from logwright.core.pop.receipt_handle import HANDLE_ERRORS

API_KEY = 32012


@extension(API_KEY, "LogwrightPopNack", settling)
async def handle(context: RequestContext, body: Body) -> Body:
    group_id = name(body, "group_id")
    consumer = name(body, "consumer", (context.client_id or "-")[:MAX_NAME_LENGTH])
    delay_ms = check_changed_invisible_time(integer(body, "delay_ms")) if "delay_ms" in body else None
    try:
        due = pop_coordinator(context.broker).nack(group_id, consumer, body.get("handle"), delay_ms)
    except HANDLE_ERRORS as error:
        return refused(error)
    await context.broker.durable()
    return {"invisible_until_ms": due, "dead_lettered": due < 0}
