"""The Clock port: everything that waits reads time through it, so tests advance time instead of sleeping.

`core` never reads the wall clock; the running broker injects a system clock from the wiring layer.
A manual clock's time is persisted (`ManualClockSet`, folded by `MANUAL_CLOCK`) so it survives restarts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from logwright.core.events import Event, ManualClockSet
from logwright.core.projection import Projection


class Clock(Protocol):
    """Milliseconds since the Unix epoch, as the broker should see them."""

    def now_ms(self) -> int: ...


class ManualClock:
    """A clock that only moves when told to: the deterministic time source for tests and replays."""

    __slots__ = ("_now_ms",)

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = start_ms

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, milliseconds: int) -> int:
        """Move time forward (never backwards) and return the new time."""
        if milliseconds < 0:
            raise ValueError(f"a clock cannot go backwards (asked to advance by {milliseconds} ms)")
        self._now_ms += milliseconds
        return self._now_ms

    def set(self, now_ms: int) -> None:
        if now_ms < self._now_ms:
            raise ValueError(f"a clock cannot go backwards (from {self._now_ms} to {now_ms})")
        self._now_ms = now_ms


@dataclass(frozen=True, slots=True)
class ManualClockState:
    """The time a manual clock was last set to (the ``manual_clock`` projection's one entity)."""

    now_ms: int


MANUAL_CLOCK_KEY = "manual"


def _evolve(state: ManualClockState | None, event: Event, key: str) -> ManualClockState | None:
    return ManualClockState(event.now_ms) if isinstance(event, ManualClockSet) else state


MANUAL_CLOCK: Projection[ManualClockState] = Projection(
    name="manual_clock", entity_keys=lambda event: (MANUAL_CLOCK_KEY,) if isinstance(event, ManualClockSet) else (),
    evolve=_evolve, handles=frozenset({ManualClockSet}),
)
