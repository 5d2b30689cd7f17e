"""An immutable set of integer offsets stored as sorted, disjoint, non-adjacent closed ranges.

Cursors keep individually acknowledged offsets above the mark-delete position here; retention and
ack holes need range operations, not per-offset sets. Immutable so projections stay pure folds.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RangeSet:
    """Closed ranges ``(first, last)``, sorted, disjoint and never touching (they are merged)."""

    ranges: tuple[tuple[int, int], ...] = ()

    @classmethod
    def of(cls, offsets: Iterable[int]) -> RangeSet:
        result = cls()
        for offset in sorted(set(offsets)):
            result = result.add(offset, offset)
        return result

    @classmethod
    def from_ranges(cls, ranges: Iterable[tuple[int, int]]) -> RangeSet:
        """Ranges in any order, overlapping or touching, merged into one set."""
        merged: list[tuple[int, int]] = []
        for first, last in sorted(ranges):
            if first > last:
                raise ValueError(f"range ({first}, {last}) is empty")
            if merged and first <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], last))
            else:
                merged.append((first, last))
        return cls(tuple(merged))

    def __post_init__(self) -> None:
        previous_last: int | None = None
        for first, last in self.ranges:
            if first > last:
                raise ValueError(f"range ({first}, {last}) is empty")
            if previous_last is not None and first <= previous_last + 1:
                raise ValueError(f"ranges overlap or touch at {first}: {self.ranges}")
            previous_last = last

    def __contains__(self, offset: object) -> bool:
        if not isinstance(offset, int):
            return False
        index = bisect_right(self.ranges, (offset, _MAX)) - 1
        return index >= 0 and self.ranges[index][1] >= offset

    def __iter__(self) -> Iterator[int]:
        for first, last in self.ranges:
            yield from range(first, last + 1)

    def __len__(self) -> int:
        return sum(last - first + 1 for first, last in self.ranges)

    def __bool__(self) -> bool:
        return bool(self.ranges)

    @property
    def first(self) -> int | None:
        return self.ranges[0][0] if self.ranges else None

    @property
    def last(self) -> int | None:
        return self.ranges[-1][1] if self.ranges else None

    def add(self, first: int, last: int | None = None) -> RangeSet:
        """The set with ``first..last`` (inclusive) added, merging neighbours."""
        last = first if last is None else last
        if first > last:
            raise ValueError(f"cannot add the empty range ({first}, {last})")
        kept_before: list[tuple[int, int]] = []
        kept_after: list[tuple[int, int]] = []
        for range_first, range_last in self.ranges:
            if range_last < first - 1:
                kept_before.append((range_first, range_last))
            elif range_first > last + 1:
                kept_after.append((range_first, range_last))
            else:
                first = min(first, range_first)
                last = max(last, range_last)
        return RangeSet((*kept_before, (first, last), *kept_after))

    def remove(self, first: int, last: int | None = None) -> RangeSet:
        """The set with ``first..last`` (inclusive) taken out."""
        last = first if last is None else last
        kept: list[tuple[int, int]] = []
        for range_first, range_last in self.ranges:
            if range_last < first or range_first > last:
                kept.append((range_first, range_last))
                continue
            if range_first < first:
                kept.append((range_first, first - 1))
            if range_last > last:
                kept.append((last + 1, range_last))
        return RangeSet(tuple(kept))

    def below(self, limit: int) -> RangeSet:
        """Only the offsets strictly below ``limit`` (found by bisection: backlogs ask it of big sets)."""
        ranges = self.ranges
        if not ranges or ranges[-1][1] < limit:
            return self
        cut = bisect_right(ranges, (limit, _MIN))  # the ranges starting below ``limit``
        kept = ranges[:cut]
        if kept and kept[-1][1] >= limit:
            kept = (*kept[:-1], (kept[-1][0], limit - 1))
        return _trusted(kept)

    def at_or_above(self, limit: int) -> RangeSet:
        """Only the offsets at or above ``limit``: what is left after a mark-delete moves to ``limit - 1`` (found by
        bisection: every ack that moves it asked it of every hole)."""
        ranges = self.ranges
        if not ranges or ranges[0][0] >= limit:
            return self
        cut = bisect_right(ranges, (limit, _MAX)) - 1  # the last range starting at or before ``limit``
        if cut >= 0 and ranges[cut][1] >= limit:
            return _trusted(((limit, ranges[cut][1]), *ranges[cut + 1:]))
        return _trusted(ranges[cut + 1:])

    def within(self, first: int, last: int) -> RangeSet:
        """Only the offsets inside ``first..last``: the ranges concerned found by bisection (every share fetch asks
        it of a partition's held offsets, and backlogs of the ack holes)."""
        ranges = self.ranges
        if first > last or not ranges:
            return _EMPTY
        start = bisect_right(ranges, (first, _MAX)) - 1  # the last range starting at or before ``first``
        if start < 0 or ranges[start][1] < first:
            start += 1
        end = bisect_right(ranges, (last, _MAX))  # past the last range starting at or before ``last``
        if start >= end:
            return _EMPTY
        clipped = ranges[start:end]
        if clipped[0][0] < first or clipped[-1][1] > last:
            clipped = ((max(clipped[0][0], first), clipped[0][1]), *clipped[1:])
            clipped = (*clipped[:-1], (clipped[-1][0], min(clipped[-1][1], last)))
        return _trusted(clipped)

    def union(self, other: RangeSet) -> RangeSet:
        return RangeSet.from_ranges((*self.ranges, *other.ranges))

    def with_ranges(self, ranges: Iterable[tuple[int, int]]) -> RangeSet:
        """The set with a few ``ranges`` (any order, overlapping or touching) added: each spliced in where bisection
        finds its place, so adding a handful to a set of 100,000 ranges (a cursor's ack holes at every ack) costs a
        copy, not a sort and a check of all of them (22 ms each)."""
        added = RangeSet.from_ranges(ranges).ranges
        if not added:
            return self
        if not self.ranges:
            return _trusted(added)
        merged = list(self.ranges)
        for first, last in added:
            start = bisect_right(merged, (first, _MAX)) - 1  # the range starting at or before ``first``
            if start < 0 or merged[start][1] < first - 1:
                start += 1
            end = start
            while end < len(merged) and merged[end][0] <= last + 1:
                end += 1
            if end > start:
                first, last = min(first, merged[start][0]), max(last, merged[end - 1][1])
            merged[start:end] = [(first, last)]
        return _trusted(tuple(merged))

    def without_ranges(self, ranges: Iterable[tuple[int, int]]) -> RangeSet:
        """The set with ``ranges`` (any order, overlapping or touching) taken out: each found by bisection and the
        untouched ranges between copied as slices, so taking a few offsets that came due out of 500,000 held
        ranges costs one copy, not a sweep of every range in Python (`difference`: ~100 ms there)."""
        removing = RangeSet.from_ranges(ranges).ranges
        held = self.ranges
        if not removing or not held:
            return self
        kept: list[tuple[int, int]] = []
        copied = 0  # the ranges of ``held`` before this index are handled
        carry: tuple[int, int] | None = None  # what is left of a range above the last removal, not yet kept
        for first, last in removing:
            if carry is not None:
                if carry[1] < first:
                    kept.append(carry)
                else:
                    if carry[0] < first:
                        kept.append((carry[0], first - 1))
                    if carry[1] > last:
                        carry = (last + 1, carry[1])
                        continue
                carry = None
            start = bisect_right(held, (first, _MAX), lo=copied) - 1  # the range starting at or before ``first``
            if start < copied or held[start][1] < first:
                start += 1
            kept.extend(held[copied:start])
            end = start
            while end < len(held) and held[end][0] <= last:
                range_first, range_last = held[end]
                if range_first < first:
                    kept.append((range_first, first - 1))
                end += 1
                if range_last > last:
                    carry = (last + 1, range_last)
                    break
            copied = end
        if carry is not None:
            kept.append(carry)
        kept.extend(held[copied:])
        return _trusted(tuple(kept))

    def missing(self, first: int, last: int) -> RangeSet:
        """The offsets of ``first..last`` that are not in the set (the holes)."""
        if first > last:
            return RangeSet()
        return RangeSet(((first, last),)).difference(self)

    def difference(self, other: RangeSet) -> RangeSet:
        """One sweep over both sorted range lists: O(len(self.ranges) + len(other.ranges))."""
        kept: list[tuple[int, int]] = []
        removing = other.ranges
        index = 0
        for first, last in self.ranges:
            while index < len(removing) and removing[index][1] < first:
                index += 1
            position = first
            probe = index
            while probe < len(removing) and removing[probe][0] <= last:
                if removing[probe][0] > position:
                    kept.append((position, removing[probe][0] - 1))
                position = max(position, removing[probe][1] + 1)
                probe += 1
            if position <= last:
                kept.append((position, last))
        return RangeSet(tuple(kept))


_MAX = 2**63 - 1
_MIN = -(2**63)


def _trusted(ranges: tuple[tuple[int, int], ...]) -> RangeSet:
    """A set of ranges known to be sorted, disjoint and not touching (built by this module's own splicing): not
    checked again range by range."""
    made = object.__new__(RangeSet)
    object.__setattr__(made, "ranges", ranges)
    return made


_EMPTY = RangeSet()
