"""Which rows of the delayed-delivery index each partition has, in memory, to answer and prune without scans.

The rows themselves (`delayed_delivery.DelayedIndex` in the ``delayed_records`` projection) are the truth;
this view only knows their ids, offset spans and due times, so finding a partition's held offsets or its
rows that may go costs the rows concerned, never every row of every partition. It is derived: built from
the rows once, kept current from the events that change them, and thrown away whenever the store reloads.
A drop it proposes names only rows that are stored; a row staged and then lost with a failed write is
forgotten when the store reloads (the broker empties the plugins' memo then).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from logwright.core.events import Event
from logwright.core.events.log import DelayedRecordsDropped, DelayedRecordsIndexed
from logwright.core.log.delayed_delivery import LEGACY_ROW, DelayedIndex, parse_row_key, row_key
from logwright.core.rangeset import RangeSet


@dataclass(frozen=True, slots=True)
class HeldSpan:
    """Offsets ``first..last`` (inclusive) that may not be acquired before ``until_ms`` (broker clock)."""

    first: int
    last: int
    until_ms: int


@dataclass(slots=True)
class _Row:
    first: int
    last: int
    due_max: int
    entries: tuple[tuple[int, int], ...]


@dataclass(slots=True)
class _Partition:
    rows: dict[int, _Row] = field(default_factory=dict)
    by_due: list[tuple[int, int]] = field(default_factory=list)
    """Heap of ``(latest due time, row id)``: the rows that may go once the clock passes it."""
    held: tuple[int, RangeSet, int | None] | None = None
    """``(computed at, offsets held then, first due time after that)``: the answer until that due time or a
    change of rows, so repeated acquisitions of a busy partition cost a lookup, not a scan."""

    def add(self, row: int, entries: tuple[tuple[int, int], ...]) -> None:
        first, last, due = entries[0][0], entries[-1][0], max(at for _, at in entries)
        known = self.rows.get(row)
        if known is not None:  # the legacy row grows: widen what it may cover
            known.first, known.last, known.due_max = min(known.first, first), max(known.last, last), \
                max(known.due_max, due)
            known.entries = tuple(sorted((*known.entries, *entries)))
            first, due = known.first, known.due_max
        else:
            self.rows[row] = _Row(first, last, due, entries)
        self._held_grows(entries)
        heapq.heappush(self.by_due, (due, row))

    def _held_grows(self, entries: tuple[tuple[int, int], ...]) -> None:
        """Add a new row to the cached answer (appends come in offset order: usually a cheap extension)."""
        if self.held is None:
            return
        computed_at, offsets, due = self.held
        pending = [entry for entry in entries if entry[1] > computed_at]
        if not pending:
            return
        merged = offsets.with_ranges(_offsets(sorted(pending)).ranges)  # spliced in: a union sorted them all
        first_due = min(at for _, at in pending)
        self.held = (computed_at, merged, first_due if due is None else min(due, first_due))

    def remove(self, row: int) -> None:
        known = self.rows.pop(row, None)
        if known is not None and self.held is not None and known.due_max > self.held[0]:
            self.held = None  # it still held offsets in the cached answer


class DelayedView:
    """A broker's map of the index rows per partition (see the module's docstring)."""

    def __init__(self) -> None:
        self._partitions: dict[int, _Partition] = {}

    @classmethod
    def of(cls, rows: Mapping[str, object]) -> DelayedView:
        """The view of every stored row (a scan, once per broker start or store reload)."""
        view = cls()
        for key, state in rows.items():
            if isinstance(state, DelayedIndex) and state.entries:
                partition_id, row = parse_row_key(key)
                view._partition(partition_id).add(row, state.entries)
        return view

    def has(self, partition_id: int) -> bool:
        """Whether the partition has rows (most have none: a change staged there then costs one lookup)."""
        return partition_id in self._partitions

    def partition_ids(self) -> tuple[int, ...]:
        return tuple(pid for pid, partition in self._partitions.items() if partition.rows)

    def _partition(self, partition_id: int) -> _Partition:
        partition = self._partitions.get(partition_id)
        if partition is None:
            partition = self._partitions[partition_id] = _Partition()
        return partition

    def note(self, event: Event) -> None:
        """Follow an index event being staged (the plugin's own or anyone's)."""
        if isinstance(event, DelayedRecordsIndexed) and event.entries:
            self._partition(event.partition_id).add(event.entries[0][0] if event.own_row else LEGACY_ROW,
                                                     event.entries)
        elif isinstance(event, DelayedRecordsDropped) and event.partition_id in self._partitions:
            partition = self._partitions[event.partition_id]
            for row in event.rows:
                partition.remove(row)

    def _dropped(self, partition_id: int, rows: Iterable[int], stored: Mapping[str, object]
                 ) -> DelayedRecordsDropped | None:
        """The drop of those ``rows`` that are stored (forgotten here either way)."""
        partition = self._partitions.get(partition_id)
        if partition is None:
            return None
        present: list[int] = []
        for row in sorted(set(rows)):
            partition.remove(row)
            if row_key(partition_id, row) in stored:
                present.append(row)
        if not partition.rows:
            del self._partitions[partition_id]
        return DelayedRecordsDropped(partition_id, tuple(present)) if present else None

    def drop_due(self, partition_id: int, now_ms: int, stored: Mapping[str, object]) -> DelayedRecordsDropped | None:
        """The rows of the partition whose every entry is due at ``now_ms`` (cheap when none is)."""
        partition = self._partitions.get(partition_id)
        if partition is None:
            return None
        due: list[int] = []
        while partition.by_due and partition.by_due[0][0] <= now_ms:
            at, row = heapq.heappop(partition.by_due)
            known = partition.rows.get(row)
            if known is not None and known.due_max == at:
                due.append(row)
        return self._dropped(partition_id, due, stored) if due else None

    def drop_below(self, partition_id: int, log_start_offset: int, stored: Mapping[str, object]
                   ) -> DelayedRecordsDropped | None:
        """The rows of the partition wholly below its new log start offset (truncation, retention)."""
        partition = self._partitions.get(partition_id)
        if partition is None:
            return None
        gone = [row for row, known in partition.rows.items() if known.last < log_start_offset and row != LEGACY_ROW]
        return self._dropped(partition_id, gone, stored) if gone else None

    def drop_partition(self, partition_id: int, stored: Mapping[str, object]) -> DelayedRecordsDropped | None:
        """Every row of a partition whose topic is deleted (its legacy row the deletion folds itself)."""
        partition = self._partitions.get(partition_id)
        if partition is None:
            return None
        return self._dropped(partition_id, [row for row in partition.rows if row != LEGACY_ROW], stored)

    def held(self, partition_id: int, first: int, last: int, now_ms: int, detailed: bool = False
             ) -> tuple[RangeSet, int | None, tuple[HeldSpan, ...]]:
        """Offsets in ``first..last`` not yet due at ``now_ms``, the earliest time one of the partition's is due
        (it wakes a coordinator, which asks again), and, if ``detailed``, spans of one due time each in
        offset order. Scans the entries not yet due only when the rows changed or one came due since."""
        partition = self._partitions.get(partition_id)
        if partition is None or first > last:
            return RangeSet(), None, ()
        if detailed:
            entries = _pending(partition, now_ms)
            entries = [entry for entry in entries if first <= entry[0] <= last]
            return _offsets(entries), min((at for _, at in entries), default=None), _spans(entries)
        cached = partition.held
        if cached is None or now_ms < cached[0] or (cached[2] is not None and now_ms >= cached[2]):
            entries = _pending(partition, now_ms)
            cached = partition.held = (now_ms, _offsets(entries), min((at for _, at in entries), default=None))
        offsets = cached[1].within(first, last)
        return offsets, cached[2] if offsets else None, ()


def _pending(partition: _Partition, now_ms: int) -> list[tuple[int, int]]:
    """The partition's entries not due at ``now_ms``, in offset order."""
    entries: list[tuple[int, int]] = []
    for row in partition.rows.values():
        if row.due_max > now_ms:
            entries.extend(entry for entry in row.entries if entry[1] > now_ms)
    entries.sort()
    return entries


def _offsets(entries: list[tuple[int, int]]) -> RangeSet:
    """The offsets of sorted entries as ranges."""
    if not entries:
        return RangeSet()
    ranges: list[tuple[int, int]] = []
    start = end = entries[0][0]
    for offset, _ in entries:
        if offset > end + 1:
            ranges.append((start, end))
            start = offset
        end = offset
    ranges.append((start, end))
    return RangeSet(tuple(ranges))


def _spans(entries: list[tuple[int, int]]) -> tuple[HeldSpan, ...]:
    """Sorted ``(offset, due)`` entries as spans of consecutive offsets due at the same time."""
    spans: list[HeldSpan] = []
    for offset, at in entries:
        if spans and spans[-1].last == offset - 1 and spans[-1].until_ms == at:
            spans[-1] = HeldSpan(spans[-1].first, offset, at)
        else:
            spans.append(HeldSpan(offset, offset, at))
    return tuple(spans)
