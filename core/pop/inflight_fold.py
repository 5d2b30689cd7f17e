"""How the pop events change the in-flight tables (`inflight`): the projection ``pop_runs``, folding each event into
the head row and the page rows it names, run by run.

Apart from the tables' model because the fold is one job (which rows an event names, and what it does to each run
there) and the readers, the coordinator and the commands need only the model.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import singledispatch
from operator import itemgetter

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
from logwright.core.pop.inflight import (
    PAGE_OFFSETS,
    PROJECTION_NAME,
    PopHead,
    PopPage,
    PopRun,
    page_key,
    page_of,
    pop_key,
    ranges_of,
    run_like,
)
from logwright.core.projection import Projection

_FIRST = itemgetter(0)
_LAST = itemgetter(1)
_new = tuple.__new__
"""`PopRun`'s own ``__new__`` is a Python function; the folds build runs with this instead (as `inflight.run_like`)."""


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
            middle.append(run_like(run.first, first - 1, run))
        changed = on_run(run if run.first == start and run.last == end else run_like(start, end, run), start, end)
        if changed is not None:
            middle.append(changed)
        if run.last > last:
            middle.append(run_like(last + 1, run.last, run))
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
            joined[-1] = run_like(joined[-1].first, run.last, run)
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
                runs = (*runs[:-1], run_like(tail.first, last, tail))
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
