"""The due times of the held-back offsets a pop reads past, asked of the plugins a stretch at a time.

A pop's read window runs from the group's position to the last stable offset: with 500,000 delayed records
waiting there, asking ``logwright_hold_back`` for the window's detailed spans cost 100-675 ms a pop, though a pop
reads at most a few hundred records. The plain answer (which offsets, the earliest time) is cheap and says which
offsets are held at all; the spans with each offset's time are asked only from the first held offset the read
meets, for a stretch that doubles each time the read passes its end.
"""

from __future__ import annotations

from bisect import bisect_right

from logwright.compat.broker import Broker
from logwright.core.log.delayed_view import HeldSpan
from logwright.core.rangeset import RangeSet

FIRST_STRETCH = 256
"""Offsets the first detailed question covers; each next one twice the last, up to `LONGEST_STRETCH`."""
LONGEST_STRETCH = 65_536


class HeldDueTimes:
    """What the plugins hold back in ``first..last`` of a partition at ``now_ms``, with each held offset's time."""

    def __init__(self, broker: Broker, partition_id: int, offsets: RangeSet, last: int, now_ms: int) -> None:
        self._broker, self._partition_id, self._last, self._now_ms = broker, partition_id, last, now_ms
        self.offsets = offsets
        """The held offsets of the window (the plugins' plain answer)."""
        self._spans: tuple[HeldSpan, ...] = ()
        self._starts: list[int] = []
        self._disjoint = True
        self._asked_from, self._asked_to = 0, -1
        self._stretch = FIRST_STRETCH

    @classmethod
    def of(cls, broker: Broker, partition_id: int, first: int, last: int) -> HeldDueTimes | None:
        """``None`` when nothing in ``first..last`` is held (one plain question)."""
        now_ms = broker.clock.now_ms()
        offsets = broker.held_back(partition_id, first, last, now_ms=now_ms).offsets if first <= last else None
        return cls(broker, partition_id, offsets, last, now_ms) if offsets else None

    def due(self, offset: int) -> int | None:
        """The time ``offset`` may go, if it is held back (two plugins may both hold it: the later time counts)."""
        if offset not in self.offsets:
            return None
        if offset > self._asked_to or offset < self._asked_from:
            self._ask(offset)
        index = bisect_right(self._starts, offset)
        if self._disjoint:
            span = self._spans[index - 1] if index else None
            return span.until_ms if span is not None and span.last >= offset else None
        return max((span.until_ms for span in self._spans[:index] if span.last >= offset), default=None)

    def _ask(self, offset: int) -> None:
        end = min(self._last, offset + self._stretch - 1)
        self._stretch = min(self._stretch * 2, LONGEST_STRETCH)
        spans = self._broker.held_back(self._partition_id, offset, end, now_ms=self._now_ms, detailed=True).spans
        self._spans, self._starts = spans, [span.first for span in spans]
        self._disjoint = all(before.last < after.first for before, after in zip(spans, spans[1:], strict=False))
        self._asked_from, self._asked_to = offset, end
