"""A timer that sleeps until the next due deadline on the broker clock, not a fixed tick.

Every coordinator keeps its deadlines (session and rebalance timeouts, lock expiry, delayed redeliveries,
switch delays, transaction timeouts) and one of these timers, so deadlines fire when they are due rather than
up to a tick later, and nothing polls. Whoever sets a deadline calls `schedule`, which wakes the sleeping
timer only when the new deadline is earlier than the one it sleeps toward; `wake` makes it look again after
anything else that may move deadlines (a config change). The timer runs on the event loop of the first
`schedule`, `wake` or `ensure_running` made inside one, until `close`.

On a manual clock time moves only through LogwrightAdvanceClock, which runs the tick itself: the timer
then runs only deadlines that are already due when scheduled, and otherwise sleeps until woken.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from logwright.core.clock import Clock, ManualClock

log = logging.getLogger(__name__)

_RETRY_S = 0.1


class DeadlineTimer:
    """Calls ``tick`` whenever ``next_deadline()`` (ms on ``clock``, ``None``: nothing scheduled) comes due."""

    def __init__(self, clock: Clock, next_deadline: Callable[[], int | None], tick: Callable[[], object],
                 name: str) -> None:
        self._clock = clock
        self._next_deadline = next_deadline
        self._tick = tick
        self._name = name
        self._planned: int | None = None
        self._wake = asyncio.Event()
        self._ticked_at: int | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def ensure_running(self) -> None:
        """Run on the current event loop (anew if the loop changed); outside a loop or once closed, do nothing."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if self._closed:
            return
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._wake = asyncio.Event()
            self._planned = None
            self._task = loop.create_task(self._run(), name=self._name)

    def schedule(self, deadline_ms: int) -> None:
        """A deadline was set: wake the timer if it sleeps toward a later one (or none)."""
        if self._planned is None or deadline_ms < self._planned:
            self.wake()

    def wake(self) -> None:
        self.ensure_running()
        self._planned = None
        self._ticked_at = None
        self._wake.set()

    def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()

    def _delay_s(self, deadline: int | None) -> float | None:
        """How long to sleep toward ``deadline``; ``None``: until woken."""
        if deadline is None:
            return None
        now = self._clock.now_ms()
        if isinstance(self._clock, ManualClock):
            return 0.0 if deadline <= now and self._ticked_at != now else None
        if self._ticked_at is not None and deadline <= self._ticked_at:
            return _RETRY_S  # the last tick left it due (or failed): look again a little later, never spin
        return max(deadline - now, 1) / 1000

    async def _run(self) -> None:
        while True:
            deadline = self._next_deadline()
            self._planned = deadline
            delay = self._delay_s(deadline)
            self._wake.clear()
            woken = False
            if delay != 0.0:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await self._wake.wait()
                        woken = True
            if woken:
                continue
            self._ticked_at = self._clock.now_ms()
            try:
                self._tick()
            except Exception:
                log.exception("the %s timer failed; retrying", self._name)


async def wait_first(timeout_s: float, *waits: Awaitable[object]) -> None:
    """Sleep until the first of ``waits`` finishes or ``timeout_s`` passes, then cancel the others: a long poll
    (pops, ShareFetch) wakes on appended records or on records released anywhere, whichever comes first."""
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
