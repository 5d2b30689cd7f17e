"""A callback run every few tenths of a second on the running event loop: the coordinators' timers.

Each coordinator reads the broker clock when its callback runs, so the period only bounds how late a
timeout is noticed on the system clock; a manual clock is driven by LogwrightAdvanceClock instead. The task
is started again when the running loop changed (tests run brokers on fresh loops) and logs, then survives,
a failing callback.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


class PeriodicTask:
    def __init__(self, name: str, seconds: float, callback: Callable[[], object]) -> None:
        self.name = name
        self.seconds = seconds
        self._callback = callback
        self._task: asyncio.Task[None] | None = None

    def ensure_running(self) -> None:
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._task = loop.create_task(self._forever(), name=self.name)

    async def _forever(self) -> None:
        while True:
            await asyncio.sleep(self.seconds)
            try:
                outcome = self._callback()
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:
                log.exception("%s failed; retrying", self.name)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
