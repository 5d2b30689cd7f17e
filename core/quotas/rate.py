"""Kafka's sampled rate (``Rate`` over a ``SampledStat``) and the throttle time a quota violation asks for
(``QuotaUtils.throttleTime``), on the broker clock, so a quota throttles here exactly when and as long as on Kafka.

Written by hand: the arithmetic is Kafka's (samples of ``quota.window.size.seconds``, ``quota.window.num`` of them
kept, a sample reset once no event fell in the whole window, the window counted as at least ``num - 1`` whole
samples), and no library computes it that way. `ByteRates` holds one rate per client (or user) a quota applies to,
bounded as Kafka bounds its sensors: one idle for an hour is dropped.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import TypeVar

SENSOR_IDLE_MS = 3_600_000
"""Kafka drops a client's quota sensors after an hour without a request (``InactiveSensorExpirationTimeSeconds``)."""

MAX_RATES = 100_000
"""Rates kept at most; the client chooses its id, so past this the longest idle goes first."""


@dataclass(slots=True)
class _Sample:
    value: float
    event_count: int
    start_ms: int
    last_event_ms: int

    def reset(self, now_ms: int) -> None:
        self.value, self.event_count, self.start_ms, self.last_event_ms = 0.0, 0, now_ms, now_ms


class SampledRate:
    """A value per second over the last ``samples`` windows of ``window_ms``, as Kafka's ``Rate`` measures it."""

    __slots__ = ("_samples", "_current", "_count", "_window_ms", "last_used_ms")

    def __init__(self, samples: int, window_ms: int, now_ms: int) -> None:
        self._count = samples
        self._window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0
        self.last_used_ms = now_ms

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self._window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.event_count += 1
        sample.last_event_ms = now_ms
        self.last_used_ms = now_ms

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(0.0, 0, now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        self._current = (self._current + 1) % (self._count + 1)  # one more: the sample overlapping the window
        if self._current >= len(self._samples):
            sample = _Sample(0.0, 0, now_ms, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge(self, now_ms: int) -> None:
        expire = self._count * self._window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire:
                sample.reset(now_ms)

    def window_ms(self, now_ms: int) -> int:
        """The span the rate divides by: since the oldest sample, at least ``samples - 1`` whole windows, 1 ms
        at least."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(0.0, 0, now_ms, now_ms))
        elapsed = now_ms - min(sample.start_ms for sample in self._samples)
        whole = elapsed // self._window_ms
        if whole < self._count - 1:
            elapsed += (self._count - 1 - whole) * self._window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """The rate per second now."""
        self._purge(now_ms)
        total = sum(sample.value for sample in self._samples)
        return total / (self.window_ms(now_ms) / 1000.0)

    def throttle_ms(self, bound: float, now_ms: int) -> int:
        """How long the client waits to bring the rate back to ``bound``: 0 within it, else Kafka's
        ``(rate - bound) / bound * window`` rounded."""
        rate = self.measure(now_ms)
        if rate <= bound:
            return 0
        return int(_java_round((rate - bound) / bound * self.window_ms(now_ms)))


def _java_round(value: float) -> int:
    """Java's ``Math.round``: half up."""
    import math

    return math.floor(value + 0.5)


class TokenBucket:
    """Kafka's ``TokenBucket`` for the controller mutation quota (KIP-599): full at first, ``bound`` tokens a second
    back up to a burst of ``samples`` windows' worth; a mutation takes its partitions' count and may leave it
    below zero, after which a strict quota refuses until it is back at zero."""

    __slots__ = ("_tokens", "_last_ms", "_burst_s", "last_used_ms")

    def __init__(self, samples: int, window_ms: int, now_ms: int) -> None:
        self._tokens: float | None = None
        self._last_ms = now_ms
        self._burst_s = samples * window_ms / 1000.0
        self.last_used_ms = now_ms

    def tokens(self, bound: float, now_ms: int) -> float:
        burst = self._burst_s * bound
        if self._tokens is None:
            self._tokens = burst
        else:
            self._tokens = min(burst, self._tokens + bound * (now_ms - self._last_ms) / 1000.0)
        self._last_ms = now_ms
        return self._tokens

    def record(self, value: float, bound: float, now_ms: int) -> None:
        self._tokens = min(self._burst_s * bound, self.tokens(bound, now_ms) - value)
        self.last_used_ms = now_ms

    @staticmethod
    def throttle_ms(tokens: float, bound: float) -> int:
        """The time until ``tokens`` (below zero) are back at zero: Kafka's ``-tokens / bound``, rounded."""
        return _java_round(-tokens / bound * 1000) if tokens < 0 else 0


class ByteRates:
    """One `SampledRate` (or `TokenBucket`) per quota metric (user and client id), dropped after an hour idle, at
    most `MAX_RATES` of each."""

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._rates: collections.OrderedDict[tuple[str, str], SampledRate] = collections.OrderedDict()
        self._buckets: collections.OrderedDict[tuple[str, str], TokenBucket] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._rates)

    def record(self, metric: tuple[str, str], value: float, bound: float, now_ms: int) -> int:
        """Record ``value`` bytes under ``metric`` and answer the throttle time its quota ``bound`` asks for."""
        rate = self._rates.get(metric)
        if rate is None:
            _expire(self._rates, now_ms)
            rate = self._rates[metric] = SampledRate(self.samples, self.window_ms, now_ms)
        else:
            self._rates.move_to_end(metric)
        rate.record(value, now_ms)
        return rate.throttle_ms(bound, now_ms)

    def bucket(self, metric: tuple[str, str], now_ms: int) -> TokenBucket:
        """The token bucket of ``metric`` (for a controller mutation quota), made full if it has none."""
        bucket = self._buckets.get(metric)
        if bucket is None:
            _expire(self._buckets, now_ms)
            bucket = self._buckets[metric] = TokenBucket(self.samples, self.window_ms, now_ms)
        else:
            self._buckets.move_to_end(metric)
        return bucket

    def max_value_in_window(self, bound: float) -> float:
        """The most one request may take without being throttled on an idle rate (Kafka caps a Fetch at it)."""
        return bound * (self.samples - 1) * self.window_ms / 1000.0



_Meter = TypeVar("_Meter", SampledRate, TokenBucket)


def _expire(meters: collections.OrderedDict[tuple[str, str], _Meter], now_ms: int) -> None:
    """Drop the meters idle for an hour, and the longest idle while there are `MAX_RATES` (least recently used
    first: the dict is kept in that order)."""
    while meters:
        metric, oldest = next(iter(meters.items()))
        if now_ms - oldest.last_used_ms < SENSOR_IDLE_MS and len(meters) < MAX_RATES:
            return
        del meters[metric]
