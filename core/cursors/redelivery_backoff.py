"""How long a record that came back unacknowledged waits before it may go out again.

Pulsar's client offers a fixed ``negativeAckRedeliveryDelay`` (default 1 min, at least 100 ms) and a
``MultiplierRedeliveryBackoff`` (min 10 s, max 10 min, multiplier 2.0, ``next(n) = min(min * 2^n, max)``
for the n-th redelivery). Here the broker computes the delay from the persisted delivery count, so the
backoff keeps growing across reconnects and restarts instead of starting over.

The same policies are group configs (``logwright.redelivery.backoff.*``, read by the built-in
``redelivery`` plugin), plus RocketMQ's delay-level table, so RELEASE, a nack without a delay and lock
expiry back off for every client. ``delay_for(n)`` takes the redelivery number n = delivery count - 1:
the first return waits ``delay_for(0)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from logwright.core.errors import InvalidConfig

MINIMUM_DELAY_MS = 100
MAXIMUM_GROUP_DELAY_MS = 365 * 86_400_000
"""The longest delay a group config may set (a year), so a due time always fits the events' 64-bit fields."""


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
        if not (math.isfinite(self.multiplier) and self.multiplier >= 1.0):
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


@dataclass(frozen=True, slots=True)
class NoBackoff:
    """Kafka's behaviour (it has no backoff): available again at once."""

    def delay_for(self, redelivery_count: int) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class LevelBackoff:
    """RocketMQ's delay levels: the n-th redelivery waits ``levels_ms[n]``, capped at the last level."""

    levels_ms: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.levels_ms:
            raise InvalidConfig("a delay-level table needs at least one level")
        if any(level < 0 for level in self.levels_ms):
            raise InvalidConfig(f"delay levels must not be negative, got {list(self.levels_ms)}")

    def delay_for(self, redelivery_count: int) -> int:
        return self.levels_ms[min(max(redelivery_count, 0), len(self.levels_ms) - 1)]


GroupBackoff = NoBackoff | FixedDelay | MultiplierBackoff | LevelBackoff

POLICY_KEY = "logwright.redelivery.backoff.policy"
DELAY_KEY = "logwright.redelivery.backoff.delay.ms"
MIN_KEY = "logwright.redelivery.backoff.min.ms"
MAX_KEY = "logwright.redelivery.backoff.max.ms"
MULTIPLIER_KEY = "logwright.redelivery.backoff.multiplier"
LEVELS_KEY = "logwright.redelivery.backoff.levels"
POLICIES = ("none", "fixed", "multiplier", "levels")
ROCKETMQ_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
"""RocketMQ's ``messageDelayLevel`` default, the table of ``levels``."""

_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_levels(text: str) -> tuple[int, ...]:
    """``"1s 5s 1m 2h"`` (RocketMQ's form; units ms, s, m, h, d; spaces or commas) in milliseconds."""
    levels: list[int] = []
    for item in text.replace(",", " ").split():
        number = item.rstrip("smhd")
        unit = item[len(number):]
        if not number.isdigit() or unit not in _UNIT_MS:
            raise InvalidConfig(f"delay level {item!r} is not a whole number with a unit (ms, s, m, h, d), e.g. 30s")
        levels.append(int(number) * _UNIT_MS[unit])
    return LevelBackoff(tuple(levels)).levels_ms


def backoff_from_settings(settings: Mapping[str, str]) -> GroupBackoff:
    """The group's policy from its effective configs (each key already validated on its own).

    A minimum above the maximum is refused when either is set (`min_not_above_max`); should a stored set
    still disagree, it reads as a constant backoff of the minimum rather than failing every redelivery.
    """
    policy = settings.get(POLICY_KEY, "none")
    if policy == "none":
        return NoBackoff()
    if policy == "fixed":
        return FixedDelay(int(settings.get(DELAY_KEY, "60000")))
    if policy == "multiplier":
        minimum = int(settings.get(MIN_KEY, "10000"))
        return MultiplierBackoff(minimum, max(minimum, int(settings.get(MAX_KEY, "600000"))),
                                 float(settings.get(MULTIPLIER_KEY, "2.0")))
    if policy == "levels":
        return LevelBackoff(parse_levels(settings.get(LEVELS_KEY, ROCKETMQ_LEVELS)))
    raise InvalidConfig(f"unknown redelivery backoff policy {policy!r}: must be one of {', '.join(POLICIES)}")


def min_not_above_max(values: Mapping[str, str]) -> str | None:
    """The rule across the multiplier keys, given a group's effective configs."""
    try:
        minimum, maximum = int(values.get(MIN_KEY, "10000")), int(values.get(MAX_KEY, "600000"))
    except ValueError:
        return None  # each key's own validator names that
    if minimum > maximum:
        return f"the minimum backoff ({MIN_KEY}={minimum}) is above the maximum ({MAX_KEY}={maximum})"
    return None


def validator(key: str) -> Callable[[str], str | None]:
    """The value check of one backoff key for the config registry (``None``: valid, else why not)."""

    def check(value: str) -> str | None:
        try:
            if key in (DELAY_KEY, MIN_KEY, MAX_KEY) and int(value) > MAXIMUM_GROUP_DELAY_MS:
                return f"must be at most {MAXIMUM_GROUP_DELAY_MS} ms (a year)"
            if key == LEVELS_KEY and max(parse_levels(value)) > MAXIMUM_GROUP_DELAY_MS:
                return f"delay levels must be at most {MAXIMUM_GROUP_DELAY_MS} ms (a year)"
            if key == POLICY_KEY:
                if value not in POLICIES:
                    return f"must be one of {', '.join(POLICIES)}"
            elif key == LEVELS_KEY:
                parse_levels(value)
            elif key == MULTIPLIER_KEY:
                MultiplierBackoff(multiplier=float(value))
            elif key == MIN_KEY:
                MultiplierBackoff(min_delay_ms=int(value), max_delay_ms=max(int(value), MINIMUM_DELAY_MS))
            elif key == MAX_KEY:
                MultiplierBackoff(min_delay_ms=MINIMUM_DELAY_MS, max_delay_ms=int(value))
            else:
                FixedDelay(int(value))
        except InvalidConfig as error:
            return str(error)
        except ValueError:
            return "must be a number"
        return None

    return check
