"""Which rows of the delayed-delivery index each partition has, in memory, to answer and prune without scans.

The rows themselves (`delayed_delivery.DelayedIndex` in the ``delayed_records`` projection) are the truth;
this view only knows their ids, offset spans and due times, so finding a partition's held offsets or its
rows that may go costs the rows concerned, never every row of every partition. A partition's held offsets are
kept as its entries come due (each row's entries in due order, a heap of the rows by their next due entry),
so a query after a due time passed costs what came due, not a rescan of every entry still waiting (46-56 ms a
query with 500,000 waiting in one partition; `bench/delayed_view.py`). It is derived: built from
the rows once, kept current from the events that change them, and thrown away whenever the store reloads.
A drop it proposes names only rows that are stored; a row staged and then lost with a failed write is
forgotten when the store reloads (the broker empties the plugins' memo then).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right, insort
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
    """``(offset, due)`` in offset order."""
    by_due: tuple[tuple[int, int], ...]
    """The same entries in due order: the same tuple when the delays rise with the offsets (one delay for a whole
    append), so most rows cost no second copy."""
    came_due: int = 0
    """``by_due[:came_due]`` are out of the partition's held offsets (they came due by its ``as_of``)."""


def _row(entries: tuple[tuple[int, int], ...]) -> _Row:
    rising = all(entries[index][1] <= entries[index + 1][1] for index in range(len(entries) - 1))
    by_due = entries if rising else tuple(sorted(entries, key=_due_of))
    return _Row(entries[0][0], entries[-1][0], by_due[-1][1], entries, by_due)


@dataclass(slots=True)
class _Partition:
    """A partition's rows, and the offsets they hold kept as entries come due, so no query rescans them.

    ``held`` is built from the rows once (the first query, a clock that went back, a legacy row that grew); after
    that an entry leaves it when a query finds its due time passed (`_advance`: the rows whose next entry is due,
    from a heap, each cut at the clock by bisection), and appends and drops splice their offsets in and out.
    """

    rows: dict[int, _Row] = field(default_factory=dict)
    starts: list[int] = field(default_factory=list)
    """The per-append rows' ids (their first offsets), sorted: a span's rows found by bisection (per-append rows
    cover disjoint offsets, as appends do)."""
    rows_by_due_max: list[tuple[int, int]] = field(default_factory=list)
    """Heap of ``(latest due time, row id)``: the rows that may go once the clock passes it."""
    rows_by_next_due: list[tuple[int, int]] = field(default_factory=list)
    """Heap of ``(due time of the row's next entry still held, row id)``; stale items are passed over."""
    held: RangeSet | None = None
    """The offsets not due at ``as_of``; ``None``: not built yet (or to be built again)."""
    as_of: int = 0

    def add(self, row_id: int, entries: tuple[tuple[int, int], ...], in_order: bool = True) -> None:
        """Follow a new row (``in_order=False``: the caller sorts `starts` once it has added many)."""
        known = self.rows.get(row_id)
        if known is not None:  # the legacy row grows: built again at the next query
            row = self.rows[row_id] = _row(tuple(sorted((*known.entries, *entries))))
            self.held = None
        else:
            row = self.rows[row_id] = _row(entries)
            if row_id != LEGACY_ROW:
                if not in_order or not self.starts or self.starts[-1] < row_id:
                    self.starts.append(row_id)  # appends come in offset order
                else:
                    insort(self.starts, row_id)
            if self.held is not None:
                row.came_due = bisect_right(row.by_due, self.as_of, key=_due_of)
                if row.came_due < len(row.by_due):
                    pending = [offset for offset, at in entries if at > self.as_of]
                    self.held = self.held.with_ranges(_runs(pending))
                    heapq.heappush(self.rows_by_next_due, (row.by_due[row.came_due][1], row_id))
        heapq.heappush(self.rows_by_due_max, (row.due_max, row_id))

    def remove(self, row_ids: Iterable[int]) -> None:
        """Forget rows (dropped: all due, truncated or deleted), their offsets still held taken out in one splice."""
        released: list[int] = []
        removed: set[int] = set()
        for row_id in row_ids:
            row = self.rows.pop(row_id, None)
            if row is None:
                continue
            removed.add(row_id)
            if self.held is not None and row.came_due < len(row.by_due):
                released.extend(offset for offset, _ in row.by_due[row.came_due:])
        removed.discard(LEGACY_ROW)
        if len(removed) > 16:
            self.starts = [start for start in self.starts if start not in removed]
        else:
            for row_id in removed:
                index = bisect_left(self.starts, row_id)
                if index < len(self.starts) and self.starts[index] == row_id:
                    del self.starts[index]
        if released and self.held is not None:
            released.sort()
            self.held = self.held.without_ranges(_runs(released))

    def advance(self, now_ms: int) -> RangeSet:
        """The offsets held at ``now_ms``: those that came due since the last query taken out."""
        if self.held is None or now_ms < self.as_of:
            return self._rebuild(now_ms)
        heap = self.rows_by_next_due
        released: list[int] = []
        while heap and heap[0][0] <= now_ms:
            at, row_id = heapq.heappop(heap)
            row = self.rows.get(row_id)
            if row is None or row.came_due >= len(row.by_due) or row.by_due[row.came_due][1] != at:
                continue  # dropped, or an item pushed twice
            end = bisect_right(row.by_due, now_ms, lo=row.came_due, key=_due_of)
            released.extend(offset for offset, _ in row.by_due[row.came_due:end])
            row.came_due = end
            if end < len(row.by_due):
                heapq.heappush(heap, (row.by_due[end][1], row_id))
        if released:
            released.sort()
            self.held = self.held.without_ranges(_runs(released))
        self.as_of = now_ms
        return self.held

    def _rebuild(self, now_ms: int) -> RangeSet:
        offsets: list[int] = []
        heap: list[tuple[int, int]] = []
        for row_id, row in self.rows.items():
            row.came_due = bisect_right(row.by_due, now_ms, key=_due_of)
            if row.came_due < len(row.by_due):
                offsets.extend(offset for offset, _ in row.by_due[row.came_due:])
                heap.append((row.by_due[row.came_due][1], row_id))
        heapq.heapify(heap)
        offsets.sort()
        self.rows_by_next_due, self.as_of = heap, now_ms
        self.held = RangeSet.from_ranges(_runs(offsets)) if offsets else RangeSet()
        return self.held

    def next_due(self) -> int | None:
        """The earliest due time of an entry still held (after `advance`)."""
        heap = self.rows_by_next_due
        while heap:
            at, row_id = heap[0]
            row = self.rows.get(row_id)
            if row is not None and row.came_due < len(row.by_due) and row.by_due[row.came_due][1] == at:
                return at
            heapq.heappop(heap)
        return None

    def pending(self, first: int, last: int, now_ms: int) -> list[tuple[int, int]]:
        """The entries of ``first..last`` not due at ``now_ms``, in offset order: only the rows covering the span
        are read, each from the bisection of its first offset in the span."""
        entries: list[tuple[int, int]] = []
        starts = self.starts
        index = max(bisect_right(starts, first) - 1, 0)
        while index < len(starts) and starts[index] <= last:
            row = self.rows[starts[index]]
            index += 1
            if row.last < first:
                continue
            low = bisect_left(row.entries, first, key=_offset_of)
            high = bisect_right(row.entries, last, key=_offset_of)
            entries.extend(entry for entry in row.entries[low:high] if entry[1] > now_ms)
        legacy = self.rows.get(LEGACY_ROW)
        if legacy is not None:
            entries.extend(entry for entry in legacy.entries if first <= entry[0] <= last and entry[1] > now_ms)
            entries.sort()
        return entries


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
                view._partition(partition_id).add(row, state.entries, in_order=False)
        for partition in view._partitions.values():
            partition.starts.sort()  # keys come in text order ("7/100" before "7/20")
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
            self._partitions[event.partition_id].remove(event.rows)

    def _dropped(self, partition_id: int, rows: Iterable[int], stored: Mapping[str, object]
                 ) -> DelayedRecordsDropped | None:
        """The drop of those ``rows`` that are stored (forgotten here either way)."""
        partition = self._partitions.get(partition_id)
        if partition is None:
            return None
        gone = sorted(set(rows))
        partition.remove(gone)
        present = [row for row in gone if row_key(partition_id, row) in stored]
        if not partition.rows:
            del self._partitions[partition_id]
        return DelayedRecordsDropped(partition_id, tuple(present)) if present else None

    def drop_due(self, partition_id: int, now_ms: int, stored: Mapping[str, object]) -> DelayedRecordsDropped | None:
        """The rows of the partition whose every entry is due at ``now_ms`` (cheap when none is)."""
        partition = self._partitions.get(partition_id)
        if partition is None:
            return None
        due: list[int] = []
        while partition.rows_by_due_max and partition.rows_by_due_max[0][0] <= now_ms:
            at, row = heapq.heappop(partition.rows_by_due_max)
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
        offset order (then the earliest time is of those in the span). Costs what came due since the last
        query, and a detailed one the entries of the span."""
        partition = self._partitions.get(partition_id)
        if partition is None or first > last:
            return RangeSet(), None, ()
        if detailed:
            entries = partition.pending(first, last, now_ms)
            return _offsets(entries), min((at for _, at in entries), default=None), _spans(entries)
        offsets = partition.advance(now_ms).within(first, last)
        return offsets, partition.next_due() if offsets else None, ()


def _offsets(entries: list[tuple[int, int]]) -> RangeSet:
    """The offsets of entries in offset order as ranges."""
    return RangeSet.from_ranges(_runs([offset for offset, _ in entries])) if entries else RangeSet()


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    """Sorted offsets as ranges of consecutive ones (a repeated offset joins its run)."""
    ranges: list[tuple[int, int]] = []
    if not offsets:
        return ranges
    start = end = offsets[0]
    for offset in offsets:
        if offset > end + 1:
            ranges.append((start, end))
            start = offset
        end = offset
    ranges.append((start, end))
    return ranges


def _due_of(entry: tuple[int, int]) -> int:
    return entry[1]


def _offset_of(entry: tuple[int, int]) -> int:
    return entry[0]


def _spans(entries: list[tuple[int, int]]) -> tuple[HeldSpan, ...]:
    """Sorted ``(offset, due)`` entries as spans of consecutive offsets due at the same time."""
    spans: list[HeldSpan] = []
    for offset, at in entries:
        if spans and spans[-1].last == offset - 1 and spans[-1].until_ms == at:
            spans[-1] = HeldSpan(spans[-1].first, offset, at)
        else:
            spans.append(HeldSpan(offset, offset, at))
    return tuple(spans)
