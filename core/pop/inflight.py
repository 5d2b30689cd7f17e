"""The in-flight table of one group's pops on one partition: a projection folded from the pop events (the fold:
`inflight_fold`).

Each record popped and not yet settled is in flight: how often it was delivered, the epoch of its current
handle, and until when it is invisible; a revived record waits, visible, for the next pop. Everything below
``next_offset`` not in flight is settled (acknowledged, dead-lettered, or no record at all). Deadlines are the
broker clock's; the fold never reads a clock, so a restart rebuilds exactly this from the log.

The table holds *runs*, not one entry per offset: a `PopRun` is consecutive offsets in the same state (a pop
of 1,024 fresh records is one run per page; an ack of them removes the run), split only where an ack, a
change, a nack, a revival or a dead letter cuts it. Folding, acking and searching cost per run, not per record
(py-spy: building an entry per popped offset and judging each acked offset were half a pop's broker time).

The table is stored as rows: a head (`PopHead`: topic, position, last epoch, which pages hold runs) and one
`PopPage` per `PAGE_OFFSETS` offsets holding runs (a run never crosses a page), so an event rewrites the head
(when it changes it) and the pages of the offsets it names, not the whole table. Readers see the table whole
as a `PopPartition` (`table_in`). The head's page list may name a page an ack just emptied until the
`PopEntriesDropped` with reason ``pages emptied`` the coordinator stages in the same WriteBatch prunes it;
readers skip a listed page without a row.

Older stores kept one entry per offset (projections ``pop_inflight``, then ``pop_tables``); this projection has
another name (``pop_runs``), so the store folds the pop events into it once at the first start, and deletes the
old rows (`Projection.replaces`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any, NamedTuple

PROJECTION_NAME = "pop_runs"
PAGE_OFFSETS = 256
"""Offsets per page row: a pop of 1,024 fresh records writes about five pages of one run each; a page holds at
most 256 runs however the records were cut, so a row stays bounded."""
_FIRST = itemgetter(0)
_LAST = itemgetter(1)


class PopEntry(NamedTuple):
    """One popped, unsettled record as readers ask for it: delivered ``deliveries`` times, held under handle
    ``epoch`` until ``invisible_until_ms`` (``visible``: revived, waiting for the next pop)."""

    offset: int
    deliveries: int
    """0: a delayed record passed over by a pop, waiting for its due time (``invisible_until_ms``)."""
    epoch: int
    invisible_until_ms: int
    visible: bool = False

    @property
    def reconsume_times(self) -> int:
        """RocketMQ's count: 0 on the first delivery, one more for each delivery after it."""
        return self.deliveries - 1


class PopRun(NamedTuple):
    """Offsets ``first..last`` (inclusive), all in flight in the same state (`PopEntry`'s fields). A named
    tuple: msgpack packs tuples natively where the codec's tagged dataclasses cost microseconds each."""

    first: int
    last: int
    deliveries: int
    epoch: int
    invisible_until_ms: int
    visible: bool = False

    def entries(self) -> Iterable[PopEntry]:
        new, rest = tuple.__new__, self[2:]
        return (new(PopEntry, (offset, *rest)) for offset in range(self.first, self.last + 1))


_new = tuple.__new__
"""`PopRun`'s own ``__new__`` is a Python function; the folds build runs with this instead."""


def run_like(first: int, last: int, like: Sequence[Any]) -> PopRun:
    """A run over ``first..last`` in the state of ``like`` (a run)."""
    return _new(PopRun, (first, last, like[2], like[3], like[4], like[5]))


def runs_of_entries(entries: Iterable[PopEntry]) -> tuple[PopRun, ...]:
    """The runs of ``entries`` (sorted by offset): neighbours in the same state joined."""
    runs: list[PopRun] = []
    for entry in entries:
        if runs and runs[-1].last + 1 == entry.offset and runs[-1][2:] == tuple(entry[1:]):
            runs[-1] = runs[-1]._replace(last=entry.offset)
        else:
            runs.append(PopRun(entry.offset, entry.offset, *entry[1:]))
    return tuple(runs)


def ranges_of(offsets: Sequence[int]) -> list[tuple[int, int]]:
    """The ``(first, last)`` ranges of ascending distinct ``offsets``: a contiguous stretch is found by its
    ends (last - first + 1 == count), so 1,024 consecutive offsets cost one check, not a look at each."""
    count = len(offsets)
    if not count:
        return []
    if offsets[-1] - offsets[0] == count - 1:
        return [(offsets[0], offsets[-1])]
    if count <= 8:
        found: list[tuple[int, int]] = []
        for offset in offsets:
            if found and found[-1][1] + 1 == offset:
                found[-1] = (found[-1][0], offset)
            else:
                found.append((offset, offset))
        return found
    middle = count // 2
    left, right = ranges_of(offsets[:middle]), ranges_of(offsets[middle:])
    if left[-1][1] + 1 == right[0][0]:
        return [*left[:-1], (left[-1][0], right[0][1]), *right[1:]]
    return [*left, *right]


@dataclass(frozen=True, slots=True)
class PopHead:
    """The stored head of a table: what the pops need besides the runs, and the pages holding runs."""

    group: str
    partition_id: int
    topic: str
    next_offset: int
    last_epoch: int = 0
    pages: tuple[int, ...] = ()
    """Page numbers (offset // `PAGE_OFFSETS`) that may hold runs, ascending."""


@dataclass(frozen=True, slots=True)
class PopPage:
    """The runs of one page of a table, sorted (never empty: an emptied page's row is deleted)."""

    runs: tuple[PopRun, ...]

    def __post_init__(self) -> None:
        if self.runs and type(self.runs[0]) is not PopRun:  # read back from the store: all plain tuples
            object.__setattr__(self, "runs", tuple(_new(PopRun, run) for run in self.runs))


@dataclass(frozen=True, slots=True)
class PopPartition:
    """A group's pop position and in-flight runs (sorted) on one partition: the table as readers see it,
    assembled from its head and pages (`table_in`); never stored itself."""

    group: str
    partition_id: int
    topic: str
    next_offset: int
    last_epoch: int = 0
    runs: tuple[PopRun, ...] = ()

    @classmethod
    def of_entries(cls, group: str, partition_id: int, topic: str, next_offset: int, last_epoch: int,
                   entries: Iterable[PopEntry]) -> PopPartition:
        """A table holding ``entries`` (sorted by offset)."""
        return cls(group, partition_id, topic, next_offset, last_epoch, runs_of_entries(entries))

    @property
    def entries(self) -> tuple[PopEntry, ...]:
        """Every record in flight, one entry each (inspection, tests, rare paths: the pops use the runs)."""
        return tuple(chain.from_iterable(run.entries() for run in self.runs))

    def in_flight(self) -> int:
        """How many records are in flight (held, revived or delayed)."""
        return sum(run.last - run.first for run in self.runs) + len(self.runs)

    def last_offset(self) -> int:
        """The highest offset in flight, -1 if none."""
        return self.runs[-1].last if self.runs else -1

    def run_at(self, offset: int) -> PopRun | None:
        index = bisect_right(self.runs, offset, key=_FIRST) - 1
        if index >= 0 and self.runs[index].last >= offset:
            return self.runs[index]
        return None

    def entry(self, offset: int) -> PopEntry | None:
        run = self.run_at(offset)
        return None if run is None else _new(PopEntry, (offset, *run[2:]))

    def held(self) -> tuple[PopEntry, ...]:
        return tuple(chain.from_iterable(run.entries() for run in self.runs if not run.visible))

    def revived(self) -> tuple[PopEntry, ...]:
        return tuple(chain.from_iterable(run.entries() for run in self.runs if run.visible))

    def holds_any(self) -> bool:
        """Whether anything is in flight and invisible (an orderly pop waits for it)."""
        return any(not run.visible for run in self.runs)

    def next_deadline(self) -> int | None:
        """The earliest invisible time running out: when this table next needs the revive timer."""
        return min((run.invisible_until_ms for run in self.runs if not run.visible), default=None)

    def due(self, now_ms: int) -> tuple[PopEntry, ...]:
        """Held entries whose deadline is ``<= now_ms``, in deadline order."""
        found = chain.from_iterable(run.entries() for run in self.runs
                                    if not run.visible and run.invisible_until_ms <= now_ms)
        return tuple(sorted(found, key=lambda entry: (entry.invisible_until_ms, entry.offset)))

    def consumed_offset(self) -> int:
        """The first offset not settled: RocketMQ's consumer offset (everything below it is done)."""
        return self.runs[0].first if self.runs else self.next_offset


def pop_key(group: str, partition_id: int) -> str:
    """A table's head key: partition first (as cursors are keyed), then the group."""
    return f"{partition_id}/{group}"


def page_key(group: str, partition_id: int, page: int) -> str:
    """A page row's key: ``<partition>#<page>/<group>`` (a head key has no ``#`` before its first ``/``)."""
    return f"{partition_id}#{page}/{group}"


def page_of(offset: int) -> int:
    return offset // PAGE_OFFSETS


def page_ranges(pages: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """The offset ranges ``pages`` (ascending page numbers) cover, adjacent pages merged: what a
    `PopEntriesDropped` of whole pages names (its rows then go, and the head forgets them)."""
    ranges: list[tuple[int, int]] = []
    for page in pages:
        first, last = page * PAGE_OFFSETS, (page + 1) * PAGE_OFFSETS - 1
        if ranges and ranges[-1][1] + 1 == first:
            ranges[-1] = (ranges[-1][0], last)
        else:
            ranges.append((first, last))
    return tuple(ranges)


# -- readers ---------------------------------------------------------------------------------------------

def assemble(head: PopHead, pages: Iterable[PopPage | None]) -> PopPartition:
    """The table whole: ``head`` with the runs of its ``pages`` (in page order; ``None``: no row)."""
    runs = tuple(chain.from_iterable(page.runs for page in pages if page is not None))
    return PopPartition(head.group, head.partition_id, head.topic, head.next_offset, head.last_epoch, runs)


def table_in(states: Mapping[str, Any], group: str, partition_id: int) -> PopPartition | None:
    """The table of ``group`` on ``partition_id`` in the projection's ``states``; ``None``: never popped there."""
    head = states.get(pop_key(group, partition_id))
    if not isinstance(head, PopHead):
        return None
    return assemble(head, (pop_page(states.get(page_key(group, partition_id, page))) for page in head.pages))


def tables_in(states: Mapping[str, Any]) -> dict[str, PopPartition]:
    """Every table in ``states``, by head key (`check`-style readers and tests)."""
    return {key: table for key, head in states.items() if isinstance(head, PopHead)
            and (table := table_in(states, head.group, head.partition_id)) is not None}


def pop_page(state: object) -> PopPage | None:
    """A stored row as a `PopPage` (``None``: no row, or a head)."""
    return state if isinstance(state, PopPage) else None


def pop_head(state: object) -> PopHead | None:
    """A stored row as a `PopHead` (``None`` for a page or anything else)."""
    return state if isinstance(state, PopHead) else None
