"""Event-loop callbacks that hold the loop too long, reported with where the loop was (``serve --log-stalls-ms``).

Why: one event loop serves every connection, so any step that runs long without yielding (a synchronous disk sync,
a large request handled in one stretch) is a pause every client sees, and the clients' latencies only say *that*
it happened. This times each callback the loop runs and logs those over a threshold by name; a watchdog thread
looks at the loop thread's stack once a callback has run past the threshold, so the report also says *where*
(session 53 found RocksDB's log sync held the loop 20-35 ms at each topic deletion this way). A native call that
holds the GIL keeps the watchdog out too: such a stall is reported with its callback and duration only.

asyncio times callbacks only in debug mode, whose other checks cost far more; this wraps `asyncio.Handle._run` for
the process instead (~0.5 us a callback), so it is off unless asked for. It measures wall time and changes nothing
the broker does or when: the broker's clock is not involved.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

STACK_FRAMES = 12
"""Innermost frames of the loop thread's stack kept in a report."""


@dataclass(frozen=True, slots=True)
class Stall:
    """A callback that ran ``held_ms``; ``stack`` is where the loop was past the threshold, innermost first (empty
    when the watchdog could not look in time)."""

    held_ms: float
    callback: str
    stack: tuple[str, ...]

    def describe(self) -> str:
        where = f" at {' < '.join(self.stack)}" if self.stack else ""
        return f"the event loop was held {self.held_ms:.1f} ms by {self.callback}{where}"


def _report(stall: Stall) -> None:
    log.warning("%s", stall.describe())


def callback_name(handle: asyncio.Handle) -> str:
    """What a handle runs, as a name: the method's qualified name, or the task whose step it is."""
    callback: Any = handle._callback  # type: ignore[attr-defined]  # noqa: SLF001 - no public accessor
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        return f"task {owner.get_coro()!r}"[:200]
    return str(getattr(callback, "__qualname__", None) or repr(callback))[:200]


class LoopStalls:
    """Times every callback of the loops in this process; past ``threshold_s`` one is reported (`Stall`).

    ``watch``: a watchdog thread samples the loop thread's stack during a long callback, every ``threshold_s / 2``.
    ``clock`` and ``report`` are the tests' to replace."""

    def __init__(self, threshold_s: float, *, watch: bool = True, clock: Callable[[], float] = time.perf_counter,
                 report: Callable[[Stall], None] = _report) -> None:
        self.threshold_s = threshold_s
        self._watch = watch
        self._clock = clock
        self._report = report
        self._running: tuple[int, float] | None = None
        """The callback the loop runs now: its number and when it began."""
        self._count = 0
        self._sampled: dict[int, tuple[str, ...]] = {}
        self._loop_thread = 0
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None
        self._original: Callable[[asyncio.Handle], None] | None = None

    def install(self) -> None:
        """Start timing callbacks (from the loop's thread: the one whose stack is sampled)."""
        if self._original is not None:
            return
        self._loop_thread = threading.get_ident()
        original = self._original = asyncio.Handle._run  # noqa: SLF001
        stalls = self

        def timed_run(handle: asyncio.Handle) -> None:
            stalls._count += 1
            number, started = stalls._count, stalls._clock()
            stalls._running = (number, started)
            try:
                original(handle)
            finally:
                stalls._running = None
                held = stalls._clock() - started
                stack = stalls._sampled.pop(number, ())
                if held >= stalls.threshold_s:
                    stalls._report(Stall(held * 1000, callback_name(handle), stack))

        asyncio.Handle._run = timed_run  # type: ignore[method-assign,assignment]  # noqa: SLF001
        if self._watch:
            self._stop.clear()
            self._watchdog = threading.Thread(target=self._look, name="logwright-loop-stalls", daemon=True)
            self._watchdog.start()

    def uninstall(self) -> None:
        if self._original is None:
            return
        asyncio.Handle._run = self._original  # type: ignore[method-assign,assignment]  # noqa: SLF001
        self._original = None
        self._stop.set()
        if self._watchdog is not None:
            self._watchdog.join()
            self._watchdog = None

    def _look(self) -> None:
        interval = self.threshold_s / 2
        while not self._stop.wait(interval):
            self.look_once()

    def look_once(self) -> None:
        """If the running callback has passed the threshold and its stack was not taken yet, take it."""
        running = self._running
        if running is None or running[0] in self._sampled or self._clock() - running[1] < self.threshold_s:
            return
        frame = sys._current_frames().get(self._loop_thread)  # noqa: SLF001 - the one way to see another thread
        if frame is None or self._running != running:
            return
        stack = traceback.extract_stack(frame)[-STACK_FRAMES:]
        self._sampled.clear()  # at most the one running callback's
        self._sampled[running[0]] = tuple(
            f"{entry.name} ({os.path.basename(entry.filename)}:{entry.lineno})" for entry in reversed(stack))
