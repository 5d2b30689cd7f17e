"""A pass over stored state every interval of broker time, in slices: the group metadata cleanup and the producer
state expiry are each one.

On a `DeadlineTimer` from the broker's start: nothing polls, and on a manual clock LogwrightAdvanceClock runs a due
pass whole inside the tick. On the system clock a pass is a task that gives way to other requests between slices
(`give_way`); each slice is decided and staged in one turn, from the states of that turn, so whatever changes
between two slices is seen. A pass that fails is logged and runs again at its next interval.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator

from logwright.compat.broker import Broker
from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.compat.turns import give_way
from logwright.core.clock import ManualClock

log = logging.getLogger(__name__)


class PeriodicPass:
    """Subclasses give `slices` (yield between slices) and ``what`` (for the logs)."""

    what = "a periodic pass"

    def __init__(self, broker: Broker, interval_key: str, timer_name: str) -> None:
        self.broker = broker
        self._interval_ms = int(broker.broker_config(interval_key))
        self._next_ms = broker.clock.now_ms() + self._interval_ms
        self._pass: asyncio.Task[None] | None = None
        self._timer_name = timer_name
        self.timer = DeadlineTimer(broker.clock, self.next_deadline, self.tick, timer_name)

    def slices(self) -> Iterator[None]:
        raise NotImplementedError

    def in_slices(self, keys: list[str], per_turn: int, forget: Callable[[list[str]], int]) -> Iterator[None]:
        """``forget`` each slice of ``per_turn`` keys in its own turn (it returns how many it forgot); log the sum."""
        forgotten = 0
        for start in range(0, len(keys), per_turn):
            if start:
                yield
            forgotten += forget(keys[start:start + per_turn])
        if forgotten:
            log.info("%s: %d forgotten", self.what, forgotten)

    def next_deadline(self) -> int | None:
        return None if self._pass is not None and not self._pass.done() else self._next_ms

    def tick(self) -> None:
        """Run the pass if it is due: whole on a manual clock, else as a task that gives way between slices."""
        now = self.broker.clock.now_ms()
        if now < self._next_ms or (self._pass is not None and not self._pass.done()):
            return
        self._next_ms = now + self._interval_ms
        if isinstance(self.broker.clock, ManualClock):
            for _ in self.slices():
                pass
            return
        self._pass = asyncio.get_running_loop().create_task(self._run(), name=f"{self._timer_name}-pass")

    async def _run(self) -> None:
        try:
            for _ in self.slices():
                await give_way()
        except Exception:
            log.exception("%s failed; it runs again at its next interval", self.what)
        finally:
            self.timer.wake()

    def staged(self) -> None:
        """After a slice staged its changes: a failed write is logged (the next pass decides again)."""
        self.broker.durable().add_done_callback(self._log_failure)

    def _log_failure(self, durable: asyncio.Future[None]) -> None:
        if not durable.cancelled() and durable.exception() is not None:
            log.warning("%s's changes were not written: %s", self.what, durable.exception())

    def close(self) -> None:
        self.timer.close()
        if self._pass is not None and not self._pass.done():
            self._pass.cancel()  # each slice it staged is whole; the next pass does the rest
