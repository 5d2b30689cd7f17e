"""LogwrightAdvanceClock: an extension API key (outside Kafka's range) that moves a manual broker clock.

Served only by a broker started with ``logwright serve --manual-clock`` (tests and replays), and only
then advertised in ApiVersions. After moving the clock it runs every coordinator's due deadlines at once
(`Coordinators.run_due`), so when the answer arrives every lock that ran out has expired, every silent
member of a classic, KIP-848 or share group has been removed, every transaction past its timeout has been
aborted, and those events are durable: tests advance time instead of sleeping. Each advance is a `ManualClockSet`
event, so a restarted broker resumes at the same time (`logwright.app.resume_manual_clock`).
Background tasks' timers (`BrokerFacade.deadline_timer`) that came due are run with the coordinators', their
effects durable in the answer; tasks sleeping on the broker clock (`Broker.sleep_until`) that came due have
run up to their next ``await`` by then, too.

Wire format (request header v1, response header v0, big-endian):
request ``advance_ms: int64``; response ``error_code: int16, now_ms: int64`` (-1 when the handler failed).
"""

from __future__ import annotations

import struct

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import HandlerEntry, RequestContext, register_extension
from logwright.core.clock import ManualClock
from logwright.core.events import ManualClockSet

API_KEY = 32001
NAME = "LogwrightAdvanceClock"
_REQUEST = struct.Struct(">q")
_RESPONSE = struct.Struct(">hq")


async def handle(context: RequestContext, body: bytes) -> bytes:
    broker = context.broker
    clock = broker.clock
    if not isinstance(clock, ManualClock) or len(body) < _REQUEST.size:
        return _RESPONSE.pack(ErrorCode.INVALID_REQUEST, broker.clock.now_ms())
    (advance_ms,) = _REQUEST.unpack_from(body)
    if advance_ms < 0:
        return _RESPONSE.pack(ErrorCode.INVALID_REQUEST, clock.now_ms())
    now = clock.advance(advance_ms)
    if advance_ms:
        broker.stage([ManualClockSet(now)])
    broker.clock_advanced()
    broker.coordinators.run_due()
    await broker.durable()
    return _RESPONSE.pack(ErrorCode.NONE, now)


def enable() -> None:
    """Register the key (idempotent): called by the wiring when the broker runs on a manual clock."""
    from logwright.compat.registry import HANDLERS

    if API_KEY not in HANDLERS:
        register_extension(HandlerEntry(API_KEY, NAME, 0, 0, handle, error_answer=_error_answer))


def _error_answer(code: int, _message: str) -> bytes:
    return _RESPONSE.pack(code, -1)
