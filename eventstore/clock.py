"""The wall clock, for the running broker only; tests and replays inject `core.clock.ManualClock`."""

from __future__ import annotations

import time


class SystemClock:
    __slots__ = ()

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000
