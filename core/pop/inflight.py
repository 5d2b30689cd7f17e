"""The in-flight table of one group's pops on one partition: a projection folded from the pop events.

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

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import singledispatch
from itertools import chain
from operator import itemgetter
from typing import Any, NamedTuple

from logwright.core.events import Event
from logwright.core.events.pop import (
    CheckpointAcked,
    CheckpointCreated,
    HandleSuperseded,
    PopCursorCreated,
    PopCursorDeleted,
    PopDeadLettered,
    PopDelayed,
    PopEntriesDropped,
    PopEvent,
    PopPositionMoved,
    Revived,
)
from logwright.core.projection import Projection

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


def _run(first: int, last: int, like: Sequence[Any]) -> PopRun:
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


def _page_number(key: str) -> int:
    return int(key[key.index("#") + 1:key.index("/")])


# -- changing runs ----------------------------------------------------------------------------------------

OnRun = Callable[[PopRun, int, int], PopRun | None]
"""What becomes of the part ``first..last`` of a run inside a change (``None``: settled)."""
OnGap = Callable[[int, int], Sequence[PopRun]]
"""What fills ``first..last`` inside a change where nothing was in flight."""


def _settle(run: PopRun, first: int, last: int) -> PopRun | None:
    return None


def _no_gap(first: int, last: int) -> Sequence[PopRun]:
    return ()


def _overlay(runs: tuple[PopRun, ...], first: int, last: int, on_run: OnRun, on_gap: OnGap = _no_gap
             ) -> tuple[PopRun, ...]:
    """``runs`` with ``first..last`` changed: each run's part inside by ``on_run``, the gaps inside by
    ``on_gap``; runs are split only at ``first`` and ``last``, and neighbours left in the same state joined.
    Costs the runs it touches plus a copy of the tuple, whatever the number of offsets."""
    low = bisect_left(runs, first, key=_LAST)  # the first run ending at or after `first`
    high = bisect_right(runs, last, key=_FIRST)  # the first run starting after `last`
    middle: list[PopRun] = []
    position = first
    for run in runs[low:high]:
        start, end = max(run.first, first), min(run.last, last)
        if position < start:
            middle.extend(on_gap(position, start - 1))
        if run.first < first:
            middle.append(_run(run.first, first - 1, run))
        changed = on_run(run if run.first == start and run.last == end else _run(start, end, run), start, end)
        if changed is not None:
            middle.append(changed)
        if run.last > last:
            middle.append(_run(last + 1, run.last, run))
        position = end + 1
    if position <= last:
        middle.extend(on_gap(position, last))
    if low > 0:  # join with the neighbours where the change left them in the same state
        low -= 1
        middle.insert(0, runs[low])
    if high < len(runs):
        middle.append(runs[high])
        high += 1
    joined: list[PopRun] = []
    for run in middle:
        if joined and joined[-1].last + 1 == run.first and joined[-1][2:] == run[2:]:
            joined[-1] = _run(joined[-1].first, run.last, run)
        else:
            joined.append(run)
    return (*runs[:low], *joined, *runs[high:])


# -- what an event names --------------------------------------------------------------------------------

_HEAD_UNCHANGED = (CheckpointAcked, Revived, PopDeadLettered)
"""Events that change runs only: their head row is not rewritten."""


@dataclass(slots=True)
class _Ranges:
    """The ranges of the last event asked: the store folds an event into each row it names one after the other,
    so they are found once, not once per page (the event is held, so its identity is never another's)."""

    event: PopEvent | None = None
    ranges: list[tuple[int, int, int]] = field(default_factory=list)


_LAST_RANGES = _Ranges()


def _event_ranges(event: PopEvent) -> list[tuple[int, int, int]]:
    """``(first, last, epoch)`` of the offsets ``event`` changes, ascending per epoch (epoch 0 where the event
    names none): acks by epoch, everything else by offset."""
    if _LAST_RANGES.event is event:
        return _LAST_RANGES.ranges
    found: list[tuple[int, int, int]]
    if isinstance(event, CheckpointCreated):
        found = [(first, last, 0) for first, last in ranges_of(event.offsets)]  # sorted by `pop_commands.checkpoint`
    elif isinstance(event, CheckpointAcked):
        by_epoch: dict[int, set[int]] = {}
        for offset, epoch in event.handles:
            by_epoch.setdefault(epoch, set()).add(offset)
        found = [(first, last, epoch) for epoch, offsets in sorted(by_epoch.items())
                 for first, last in ranges_of(sorted(offsets))]
        found.extend(event.ranges)
    elif isinstance(event, Revived):
        found = [(first, last, 0) for first, last in ranges_of(sorted(set(event.offsets)))]
    elif isinstance(event, HandleSuperseded):
        found = [(event.offset, event.offset, 0)]
    elif isinstance(event, PopDeadLettered | PopDelayed):
        found = [(first, last, 0) for first, last in ranges_of(sorted({offset for offset, _ in event.records}))]
    elif isinstance(event, PopEntriesDropped):
        found = [(first, last, 0) for first, last in sorted(event.ranges) if first <= last]
    else:
        found = []
    _LAST_RANGES.event, _LAST_RANGES.ranges = event, found
    return found


def spans_of(event: PopEvent) -> list[tuple[int, int]]:
    """The ``(first, last)`` offset spans whose runs ``event`` may change (for acks, whatever their epoch)."""
    return [(first, last) for first, last, _ in _event_ranges(event)]


def _pages(event: PopEvent) -> tuple[int, ...]:
    """The pages ``event`` changes, ascending."""
    ranges = _event_ranges(event)
    if len(ranges) == 1:
        return tuple(range(page_of(ranges[0][0]), page_of(ranges[0][1]) + 1))
    return tuple(sorted({page for first, last, _ in ranges for page in range(page_of(first), page_of(last) + 1)}))


def _keys(event: Event) -> tuple[str, ...]:
    if not isinstance(event, PopEvent):
        return ()
    pages = tuple(page_key(event.group, event.partition_id, page) for page in _pages(event))
    if isinstance(event, _HEAD_UNCHANGED):
        return pages
    return (pop_key(event.group, event.partition_id), *pages)


# -- the head's fold -----------------------------------------------------------------------------------

@singledispatch
def _evolve_head(event: Event, head: PopHead | None) -> PopHead | None:
    return head


@_evolve_head.register
def _(event: PopCursorCreated, head: PopHead | None) -> PopHead | None:
    return head if head is not None else PopHead(event.group, event.partition_id, event.topic, event.start_offset)


def _with_pages(head: PopHead, added: Iterable[int]) -> tuple[int, ...]:
    pages = head.pages
    new = [page for page in added if page not in pages]
    return tuple(sorted((*pages, *new))) if new else pages


@_evolve_head.register
def _(event: CheckpointCreated, head: PopHead | None) -> PopHead | None:
    if head is None:
        return None
    return replace(head, next_offset=max(head.next_offset, event.next_offset),
                   last_epoch=max(head.last_epoch, event.epoch), pages=_with_pages(head, _pages(event)))


@_evolve_head.register
def _(event: HandleSuperseded, head: PopHead | None) -> PopHead | None:
    return None if head is None else replace(head, last_epoch=max(head.last_epoch, event.epoch))


@_evolve_head.register
def _(event: PopDelayed, head: PopHead | None) -> PopHead | None:
    return None if head is None else replace(head, pages=_with_pages(head, _pages(event)))


@_evolve_head.register
def _(event: PopPositionMoved, head: PopHead | None) -> PopHead | None:
    return None if head is None else replace(head, next_offset=event.offset)


@_evolve_head.register
def _(event: PopEntriesDropped, head: PopHead | None) -> PopHead | None:
    if head is None:
        return None
    emptied = {page for page in head.pages
               if any(first <= page * PAGE_OFFSETS and (page + 1) * PAGE_OFFSETS - 1 <= last
                      for first, last in event.ranges)}
    return replace(head, pages=tuple(page for page in head.pages if page not in emptied)) if emptied else head


@_evolve_head.register
def _(event: PopCursorDeleted, head: PopHead | None) -> PopHead | None:
    return None


# -- a page's fold --------------------------------------------------------------------------------------

def _on_page(ranges: Sequence[tuple[int, int, int]], page: int) -> Iterable[tuple[int, int, int]]:
    """``ranges`` clipped to ``page``."""
    low, high = page * PAGE_OFFSETS, (page + 1) * PAGE_OFFSETS - 1
    for first, last, epoch in ranges:
        if first <= high and last >= low:
            yield max(first, low), min(last, high), epoch


@singledispatch
def _evolve_page(event: Event, runs: tuple[PopRun, ...], page: int) -> tuple[PopRun, ...]:
    return runs


@_evolve_page.register
def _(event: CheckpointCreated, runs: tuple[PopRun, ...], page: int) -> tuple[PopRun, ...]:
    state = (1, event.epoch, event.pop_time_ms + event.invisible_time_ms, False)

    def again(run: PopRun, first: int, last: int) -> PopRun:
        return _new(PopRun, (first, last, run.deliveries + 1, *state[1:]))

    def fresh(first: int, last: int) -> Sequence[PopRun]:
        return (_new(PopRun, (first, last, *state)),)

    for first, last, _ in _on_page(_event_ranges(event), page):
        if not runs or first > runs[-1].last:  # fresh records past every run (a pop of new records): appended
            tail = runs[-1] if runs else None
            if tail is not None and tail.last + 1 == first and tail[2:] == state:
                runs = (*runs[:-1], _run(tail.first, last, tail))
            else:
                runs = (*runs, _new(PopRun, (first, last, *state)))
        else:
            runs = _overlay(runs, first, last, again, fresh)
    return runs


@_evolve_page.register
def _(event: CheckpointAcked, runs: tuple[PopRun, ...], page: int) -> tuple[PopRun, ...]:
    for first, last, epoch in _on_page(_event_ranges(event), page):
        def settled(run: PopRun, first: int, last: int, epoch: int = epoch) -> PopRun | None:
            return None if run.epoch == epoch else run

        runs = _overlay(runs, first, last, settled)
    return runs


@_evolve_page.register
def _(event: HandleSuperseded, runs: tuple[PopRun, ...], page: int) -> tuple[PopRun, ...]:
    def superseded(run: PopRun, first: int, last: int) -> PopRun:
        if run.epoch != event.old_epoch or run.visible:
            return run
        return _new(PopRun, (first, last, run.deliveries, event.epoch,
                             event.invisible_until_ms, False))

    return _overlay(runs, event.offset, event.offset, superseded)


def _revived(run: PopRun, first: int, last: int) -> PopRun:
    return run if run.visible else run._replace(visible=True)


@_evolve_page.register
def _(event: Revived, runs: tuple[PopRun, ...], page: int) -> tuple[PopRun, ...]:
    for first, last, _ in _on_page(_event_ranges(event), page):
        runs = _overlay(runs, first, last, _revived)
    return runs


@_evolve_page.register
def _(event: PopDeadLettered | PopEntriesDropped, runs: tuple[PopRun, ...], page: int) -> tuple[PopRun, ...]:
    for first, last, _ in _on_page(_event_ranges(event), page):
        runs = _overlay(runs, first, last, _settle)
    return runs


def _kept(run: PopRun, first: int, last: int) -> PopRun:
    return run


@_evolve_page.register
def _(event: PopDelayed, runs: tuple[PopRun, ...], page: int) -> tuple[PopRun, ...]:
    low, high = page * PAGE_OFFSETS, (page + 1) * PAGE_OFFSETS
    for offset, due in event.records:
        if low <= offset < high:
            def parked(first: int, last: int, due: int = due) -> Sequence[PopRun]:
                return (_new(PopRun, (first, last, 0, 0, due, False)),)

            runs = _overlay(runs, offset, offset, _kept, parked)
    return runs


def _evolve(state: object, event: Event, key: str) -> object:
    """Fold ``event`` into the row ``key``: a table's head or one of its pages."""
    if "#" in key.partition("/")[0]:
        runs = _evolve_page(event, state.runs if isinstance(state, PopPage) else (), _page_number(key))
        return PopPage(runs) if runs else None
    return _evolve_head(event, state if isinstance(state, PopHead) else None)


POP_INFLIGHT: Projection[object] = Projection(
    name=PROJECTION_NAME, entity_keys=_keys, evolve=_evolve, handles=frozenset({PopEvent}),
    replaces=("pop_inflight", "pop_tables"),
)

POP_STATE_TYPES = {2091: PopHead, 2093: PopPage}
"""Codec tags of the rows, registered with the projection by the built-in plugin ``pop`` (plugin state tags
start at 2000; the decade mirrors the events' 90s). 2090 was the one-row table of ``pop_inflight``, 2092 the
page of entries of ``pop_tables``: neither reused."""


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
