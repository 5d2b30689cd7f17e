"""Background tasks' deadlines on the broker clock, kept by `DeadlineTimer`s like the coordinators' own.

A plugin asks its `BrokerFacade` for a timer (``deadline_timer``): one deadline at a time, given by the plugin
(``next_deadline``), re-armed when it calls ``schedule`` with an earlier one or ``wake`` after anything that may
move it. The broker keeps these timers beside the coordinators', so LogwrightAdvanceClock runs every plugin tick
that fell due before it answers (`PluginTimers.run_due`), with what the tick staged durable: a test advances
the manual clock and reads the result, with no sleep and no poll.
"""

from __future__ import annotations

from collections.abc import Callable

from logwright.core.clock import Clock

from .deadline_timer import DeadlineTimer


class PluginTimer:
    """One plugin's timer: ``tick`` runs when ``next_deadline()`` (ms on the broker clock, ``None``: none) is due."""

    def __init__(self, owner: PluginTimers, clock: Clock, name: str, next_deadline: Callable[[], int | None],
                 tick: Callable[[], object]) -> None:
        self._owner = owner
        self._clock = clock
        self._next_deadline = next_deadline
        self._tick = tick
        self._timer = DeadlineTimer(clock, next_deadline, tick, name)

    def schedule(self, deadline_ms: int) -> None:
        """A deadline was set: the timer re-arms if it is earlier than the one it sleeps toward."""
        self._timer.schedule(deadline_ms)

    def wake(self) -> None:
        """Ask ``next_deadline`` again (after a change that may move the deadline either way)."""
        self._timer.wake()

    def close(self) -> None:
        """Stop for good (the task ends)."""
        self._timer.close()
        self._owner.forget(self)

    def run_due(self) -> None:
        due = self._next_deadline()
        if due is not None and due <= self._clock.now_ms():
            self._tick()


class PluginTimers:
    """The timers of one broker's background tasks."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._timers: list[PluginTimer] = []

    def add(self, name: str, next_deadline: Callable[[], int | None], tick: Callable[[], object]) -> PluginTimer:
        timer = PluginTimer(self, self._clock, name, next_deadline, tick)
        self._timers.append(timer)
        timer.wake()
        return timer

    def forget(self, timer: PluginTimer) -> None:
        if timer in self._timers:
            self._timers.remove(timer)

    def run_due(self) -> None:
        """Run every tick due now (after a manual clock moved); effects are staged."""
        for timer in list(self._timers):
            timer.run_due()

    def close(self) -> None:
        for timer in list(self._timers):
            timer.close()
