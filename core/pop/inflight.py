"""The in-flight table of one group's pops on one partition: a projection folded from the pop events.

Each record popped and not yet settled has an entry: how often it was delivered, the epoch of its current
handle, and until when it is invisible; a revived entry waits, visible, for the next pop. Everything below
``next_offset`` without an entry is settled (acknowledged, dead-lettered, or no record at all). Deadlines
are the broker clock's; the fold never reads a clock, so a restart rebuilds exactly this from the log.

The table is stored as rows: a head (`PopHead`: topic, position, last epoch, which pages hold entries) and one
`PopPage` per `PAGE_OFFSETS` offsets that hold entries, so an event rewrites the head (when it changes it) and
the pages of the offsets it names, not the whole table (one row of 20,000 entries was 4 ms of encoding per
pop). Readers see the table whole as a `PopPartition` (`table_in`). The head's page list may name a page an ack
just emptied until the `PopEntriesDropped` with reason ``pages emptied`` the coordinator stages in the same
WriteBatch prunes it; readers skip a listed page without a row.

Stores written before pages existed kept one ``pop_inflight`` row per table; this projection has another name
(``pop_tables``), so the store folds the pop events into it once at the first start and ignores the old rows.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
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

PROJECTION_NAME = "pop_tables"
PAGE_OFFSETS = 256
"""Offsets per page row: a pop of 32 records rewrites one or two pages (at most 512 entries, about 0.1 ms of
encoding), a compact pop of 1,024 about five; a full table of 20,000 in flight is about 80 rows."""
_OFFSET = itemgetter(0)
_FEW = 16
"""Up to this many acknowledged handles are folded by a search each; more by one pass over their span."""


class PopEntry(NamedTuple):
    """One popped, unsettled record: delivered ``deliveries`` times, held under handle ``epoch`` until
    ``invisible_until_ms`` (``visible``: revived, waiting for the next pop).

    A named tuple, not a dataclass: pages are written with every pop event that names them, and msgpack packs
    tuples natively (about 0.2 us an entry) where the codec's tagged dataclasses cost about 4 us each.
    """

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


@dataclass(frozen=True, slots=True)
class PopHead:
    """The stored head of a table: what the pops need besides the entries, and the pages holding entries."""

    group: str
    partition_id: int
    topic: str
    next_offset: int
    last_epoch: int = 0
    pages: tuple[int, ...] = ()
    """Page numbers (offset // `PAGE_OFFSETS`) that may hold entries, ascending."""


@dataclass(frozen=True, slots=True)
class PopPage:
    """The entries of one page of a table, sorted by offset (never empty: an emptied page's row is deleted)."""

    entries: tuple[PopEntry, ...]

    def __post_init__(self) -> None:
        if self.entries and type(self.entries[0]) is not PopEntry:  # read back from the store: all plain tuples
            object.__setattr__(self, "entries", tuple(PopEntry(*entry) for entry in self.entries))


@dataclass(frozen=True, slots=True)
class PopPartition:
    """A group's pop position and in-flight entries (sorted by offset) on one partition: the table as readers
    see it, assembled from its head and pages (`table_in`); never stored itself."""

    group: str
    partition_id: int
    topic: str
    next_offset: int
    last_epoch: int = 0
    entries: tuple[PopEntry, ...] = ()

    def __post_init__(self) -> None:
        if self.entries and type(self.entries[0]) is not PopEntry:  # read back from the store: all plain tuples
            object.__setattr__(self, "entries", tuple(PopEntry(*entry) for entry in self.entries))

    def entry(self, offset: int) -> PopEntry | None:
        index = bisect_left(self.entries, offset, key=_OFFSET)
        if index < len(self.entries) and self.entries[index].offset == offset:
            return self.entries[index]
        return None

    def held(self) -> tuple[PopEntry, ...]:
        return tuple(entry for entry in self.entries if not entry.visible)

    def revived(self) -> tuple[PopEntry, ...]:
        return tuple(entry for entry in self.entries if entry.visible)

    def next_deadline(self) -> int | None:
        """The earliest invisible time running out: when this table next needs the revive timer."""
        return min((entry.invisible_until_ms for entry in self.entries if not entry.visible), default=None)

    def due(self, now_ms: int) -> tuple[PopEntry, ...]:
        """Held entries whose deadline is ``<= now_ms``, in deadline order."""
        found = [entry for entry in self.entries if not entry.visible and entry.invisible_until_ms <= now_ms]
        return tuple(sorted(found, key=lambda entry: (entry.invisible_until_ms, entry.offset)))

    def consumed_offset(self) -> int:
        """The first offset not settled: RocketMQ's consumer offset (everything below it is done)."""
        return min((entry.offset for entry in self.entries), default=self.next_offset)


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


def _with(state: PopPartition, changed: dict[int, PopEntry | None], next_offset: int | None = None,
          last_epoch: int | None = None) -> PopPartition:
    """``state`` with ``changed`` entries put (``None``: removed), kept in offset order (`_changed`)."""
    return replace(state, entries=_changed(state.entries, changed),
                   next_offset=state.next_offset if next_offset is None else next_offset,
                   last_epoch=state.last_epoch if last_epoch is None else last_epoch)


def _changed(entries: tuple[PopEntry, ...], changed: Mapping[int, PopEntry | None]) -> tuple[PopEntry, ...]:
    """``entries`` with ``changed`` put (``None``: removed), kept in offset order by bisection: a change costs
    a copy of the page (memmove speed) and a search, not a rebuild of every entry."""
    if not changed:
        return entries
    updated = list(entries)
    for offset, entry in sorted(changed.items(), key=_OFFSET):
        index = bisect_left(updated, offset, key=_OFFSET)
        present = index < len(updated) and updated[index].offset == offset
        if entry is None:
            if present:
                del updated[index]
        elif present:
            updated[index] = entry
        else:
            updated.insert(index, entry)
    return tuple(updated)


def _entry(entries: Sequence[PopEntry], offset: int) -> PopEntry | None:
    index = bisect_left(entries, offset, key=_OFFSET)
    return entries[index] if index < len(entries) and entries[index].offset == offset else None


# -- which rows an event names -------------------------------------------------------------------------

_HEAD_UNCHANGED = (CheckpointAcked, Revived, PopDeadLettered)
"""Events that change entries only: their head row is not rewritten."""


@dataclass(slots=True)
class _Split:
    """The last acknowledgement and its handles by page: the store folds an event into each row it names one
    after the other, so an ack of 1,024 handles is split once, not once per page (the event is held, so its
    identity is never another's)."""

    event: CheckpointAcked | None = None
    pages: dict[int, list[tuple[int, int]]] = field(default_factory=dict)


_LAST_SPLIT = _Split()


def _handles_by_page(event: CheckpointAcked) -> dict[int, list[tuple[int, int]]]:
    if _LAST_SPLIT.event is not event:
        split: dict[int, list[tuple[int, int]]] = {}
        for handle in event.handles:
            split.setdefault(handle[0] // PAGE_OFFSETS, []).append(handle)
        _LAST_SPLIT.event, _LAST_SPLIT.pages = event, split
    return _LAST_SPLIT.pages


def _sorted_pages(offsets: Sequence[int]) -> tuple[int, ...]:
    """The pages of ascending ``offsets``: a search per page spanned, not a look at each offset."""
    first, last = page_of(offsets[0]), page_of(offsets[-1])
    if last - first >= len(offsets):
        return tuple(sorted({page_of(offset) for offset in offsets}))
    return tuple(page for page in range(first, last + 1)
                 if (index := bisect_left(offsets, page * PAGE_OFFSETS)) < len(offsets)
                 and offsets[index] < (page + 1) * PAGE_OFFSETS)


def _named(event: PopEvent) -> Sequence[int]:
    """The offsets ``event`` changes entries of, ascending (acks and `PopEntriesDropped` aside)."""
    if isinstance(event, CheckpointCreated):
        return event.offsets  # sorted by `pop_commands.checkpoint`
    if isinstance(event, Revived):
        return sorted(event.offsets)  # in deadline order
    if isinstance(event, HandleSuperseded):
        return (event.offset,)
    if isinstance(event, PopDeadLettered | PopDelayed):
        return sorted({offset for offset, _ in event.records})
    return ()


def _pages(event: PopEvent) -> tuple[int, ...]:
    """The pages ``event`` changes, ascending (for `PopEntriesDropped`: every page its ranges overlap)."""
    if isinstance(event, PopEntriesDropped):
        return tuple(sorted({page for first, last in event.ranges
                             for page in range(page_of(first), page_of(last) + 1)}))
    if isinstance(event, CheckpointAcked):
        return tuple(sorted(_handles_by_page(event)))
    named = _named(event)
    if not named:
        return ()
    if page_of(named[0]) == page_of(named[-1]):
        return (page_of(named[0]),)
    return _sorted_pages(named)


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

def _within(offsets: Sequence[int], page: int) -> Sequence[int]:
    """The ascending ``offsets`` on ``page``."""
    low, high = page * PAGE_OFFSETS, (page + 1) * PAGE_OFFSETS
    if offsets and low <= offsets[0] and offsets[-1] < high:
        return offsets
    return offsets[bisect_left(offsets, low):bisect_left(offsets, high)]


@singledispatch
def _evolve_page(event: Event, entries: tuple[PopEntry, ...], page: int) -> tuple[PopEntry, ...]:
    return entries


@_evolve_page.register
def _(event: CheckpointCreated, entries: tuple[PopEntry, ...], page: int) -> tuple[PopEntry, ...]:
    until = event.pop_time_ms + event.invisible_time_ms
    offsets = _within(event.offsets, page)
    if offsets and (not entries or offsets[0] > entries[-1].offset):
        # only new records past every entry (a pop of fresh records): appended, no search per offset
        new = tuple.__new__  # PopEntry's own __new__ is a Python lambda: a third of this fold's time
        return entries + tuple(new(PopEntry, (offset, 1, event.epoch, until, False)) for offset in offsets)
    changed: dict[int, PopEntry | None] = {}
    for offset in offsets:
        before = _entry(entries, offset)
        changed[offset] = PopEntry(offset, before.deliveries + 1 if before is not None else 1, event.epoch, until)
    return _changed(entries, changed)


@_evolve_page.register
def _(event: CheckpointAcked, entries: tuple[PopEntry, ...], page: int) -> tuple[PopEntry, ...]:
    handles = _handles_by_page(event).get(page, ())
    if len(handles) > _FEW:
        # many handles (a compact ack): one pass over the span they cover, not a search and a removal each
        settled = dict(handles)  # offset -> epoch: a compact ack names each offset once
        first = bisect_left(entries, min(settled), key=_OFFSET)
        last = bisect_right(entries, max(settled), key=_OFFSET)
        if len(settled) == len(handles):
            kept = tuple(entry for entry in entries[first:last] if settled.get(entry[0]) != entry[2])
        else:  # an offset named twice (two epochs): whichever is its entry's settles it
            pairs = set(handles)
            kept = tuple(entry for entry in entries[first:last] if (entry[0], entry[2]) not in pairs)
        return entries[:first] + kept + entries[last:]
    changed: dict[int, PopEntry | None] = {}
    for offset, epoch in handles:
        entry = _entry(entries, offset)
        if entry is not None and entry.epoch == epoch:
            changed[offset] = None
    return _changed(entries, changed)


@_evolve_page.register
def _(event: HandleSuperseded, entries: tuple[PopEntry, ...], page: int) -> tuple[PopEntry, ...]:
    entry = _entry(entries, event.offset)
    if entry is None or entry.epoch != event.old_epoch or entry.visible:
        return entries
    return _changed(entries, {event.offset: entry._replace(epoch=event.epoch,
                                                           invisible_until_ms=event.invisible_until_ms)})


@_evolve_page.register
def _(event: Revived, entries: tuple[PopEntry, ...], page: int) -> tuple[PopEntry, ...]:
    changed: dict[int, PopEntry | None] = {}
    for offset in event.offsets:
        entry = _entry(entries, offset) if page_of(offset) == page else None
        if entry is not None and not entry.visible:
            changed[offset] = entry._replace(visible=True)
    return _changed(entries, changed)


@_evolve_page.register
def _(event: PopDeadLettered, entries: tuple[PopEntry, ...], page: int) -> tuple[PopEntry, ...]:
    return _changed(entries, {offset: None for offset, _ in event.records if page_of(offset) == page})


@_evolve_page.register
def _(event: PopDelayed, entries: tuple[PopEntry, ...], page: int) -> tuple[PopEntry, ...]:
    return _changed(entries, {offset: PopEntry(offset, 0, 0, due) for offset, due in event.records
                              if page_of(offset) == page and _entry(entries, offset) is None})


@_evolve_page.register
def _(event: PopEntriesDropped, entries: tuple[PopEntry, ...], page: int) -> tuple[PopEntry, ...]:
    return tuple(entry for entry in entries
                 if not any(first <= entry.offset <= last for first, last in event.ranges))


def _evolve(state: object, event: Event, key: str) -> object:
    """Fold ``event`` into the row ``key``: a table's head or one of its pages."""
    if "#" in key.partition("/")[0]:
        page = state.entries if isinstance(state, PopPage) else ()
        entries = _evolve_page(event, page, _page_number(key))
        return PopPage(entries) if entries else None
    return _evolve_head(event, state if isinstance(state, PopHead) else None)


POP_INFLIGHT: Projection[object] = Projection(
    name=PROJECTION_NAME, entity_keys=_keys, evolve=_evolve, handles=frozenset({PopEvent}),
)

POP_STATE_TYPES = {2091: PopHead, 2092: PopPage}
"""Codec tags of the rows, registered with the projection by the built-in plugin ``pop`` (plugin state tags
start at 2000; the decade mirrors the events' 90s). 2090 was the one-row table of ``pop_inflight``: not reused."""


# -- readers ---------------------------------------------------------------------------------------------

def assemble(head: PopHead, pages: Iterable[PopPage | None]) -> PopPartition:
    """The table whole: ``head`` with the entries of its ``pages`` (in page order; ``None``: no row)."""
    entries = tuple(chain.from_iterable(page.entries for page in pages if page is not None))
    return PopPartition(head.group, head.partition_id, head.topic, head.next_offset, head.last_epoch, entries)


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
