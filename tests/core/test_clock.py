"""The manual clock and the projection that lets it resume after a restart."""

from __future__ import annotations

import pytest
from logwright.core.clock import MANUAL_CLOCK, MANUAL_CLOCK_KEY, ManualClock, ManualClockState
from logwright.core.events import ManualClockSet, TopicCreated
from logwright.core.projection import fold


def test_the_projection_keeps_the_last_time_the_clock_was_set_to() -> None:
    events = [ManualClockSet(1_000), TopicCreated("t", b"\x00" * 16, (1,), ()), ManualClockSet(61_000)]
    assert fold(MANUAL_CLOCK, events) == {MANUAL_CLOCK_KEY: ManualClockState(61_000)}
    assert fold(MANUAL_CLOCK, events[1:2]) == {}


def test_a_manual_clock_never_goes_backwards() -> None:
    clock = ManualClock(5)
    assert clock.advance(10) == 15
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        clock.set(14)
