"""How long a negatively acknowledged record waits before it may go out again.

Pulsar's client offers a fixed ``negativeAckRedeliveryDelay`` (default 1 min, at least 100 ms) and a
``MultiplierRedeliveryBackoff`` (min 10 s, max 10 min, multiplier 2.0, ``next(n) = min(min * 2^n, max)``
for the n-th redelivery). Here the broker computes the delay from the persisted delivery count, so the
backoff keeps growing across reconnects and restarts instead of starting over.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.core.errors import InvalidConfig

MINIMUM_DELAY_MS = 100


@dataclass(frozen=True, slots=True)
class FixedDelay:
    delay_ms: int = 60_000

    def __post_init__(self) -> None:
        if self.delay_ms < MINIMUM_DELAY_MS:
            raise InvalidConfig(f"a negative-ack delay must be at least {MINIMUM_DELAY_MS} ms, got {self.delay_ms}")

    def delay_for(self, redelivery_count: int) -> int:
        return self.delay_ms


@dataclass(frozen=True, slots=True)
class MultiplierBackoff:
    """``min(min_delay * multiplier ** redelivery_count, max_delay)``."""

    min_delay_ms: int = 10_000
    max_delay_ms: int = 600_000
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        if self.min_delay_ms < MINIMUM_DELAY_MS:
            raise InvalidConfig(f"the minimum backoff must be at least {MINIMUM_DELAY_MS} ms, got {self.min_delay_ms}")
        if self.max_delay_ms < self.min_delay_ms:
            raise InvalidConfig(f"the maximum backoff ({self.max_delay_ms} ms) is below the minimum "
                                f"({self.min_delay_ms} ms)")
        if self.multiplier < 1.0:
            raise InvalidConfig(f"the backoff multiplier must be at least 1.0, got {self.multiplier}")

    def delay_for(self, redelivery_count: int) -> int:
        if redelivery_count < 0:
            raise ValueError(f"a redelivery count cannot be negative: {redelivery_count}")
        delay = float(self.min_delay_ms)
        for _ in range(redelivery_count):
            delay *= self.multiplier
            if delay >= self.max_delay_ms:
                return self.max_delay_ms
        return int(delay)


RedeliveryBackoff = FixedDelay | MultiplierBackoff
