"""The manual clock's event (tag 11): where a test broker's time stands, so a restart resumes from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events.base import Event


@dataclass(frozen=True, slots=True)
class ManualClockSet(Event):
    """A manual clock (``serve --manual-clock``, tests) started or was advanced to ``now_ms``.

    A restarted broker resumes from the last one, so deadlines recorded before a restart stay where
    they were in the broker's time. A broker on the wall clock never writes it.
    """

    TAG: ClassVar[int] = 11
    now_ms: int


CLOCK_EVENT_TYPES: tuple[type[Event], ...] = (ManualClockSet,)
