"""The in-flight table of one group's pops on one partition: a projection folded from the pop events.

Each record popped and not yet settled has an entry: how often it was delivered, the epoch of its current
handle, and until when it is invisible; a revived entry waits, visible, for the next pop. Everything below
``next_offset`` without an entry is settled (acknowledged, dead-lettered, or no record at all). Deadlines
are the broker clock's; the fold never reads a clock, so a restart rebuilds exactly this from the log.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from functools import singledispatch
from operator import itemgetter
from typing import NamedTuple

from logwright.core.events import Event
from logwright.core.events.pop import (
    CheckpointAcked,
    CheckpointCreated,
    HandleSuperseded,
    PopCursorCreated,
    PopCursorDeleted,
    PopDeadLettered,
    PopDelayed,
    PopEvent,
    Revived,
)
from logwright.core.projection import Projection

PROJECTION_NAME = "pop_inflight"
_OFFSET = itemgetter(0)
_FEW = 16
"""Up to this many acknowledged handles are folded by a search each; more by one pass over their span."""


class PopEntry(NamedTuple):
    """One popped, unsettled record: delivered ``deliveries`` times, held under handle ``epoch`` until
    ``invisible_until_ms`` (``visible``: revived, waiting for the next pop).

    A named tuple, not a dataclass: the table is written with every pop event, and msgpack packs tuples
    natively (about 0.2 us an entry) where the codec's tagged dataclasses cost about 4 us each.
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
class PopPartition:
    """A group's pop position and in-flight entries (sorted by offset) on one partition."""

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
    """Entity key: partition first (as cursors are keyed), then the group."""
    return f"{partition_id}/{group}"


def _with(state: PopPartition, changed: dict[int, PopEntry | None], next_offset: int | None = None,
          last_epoch: int | None = None) -> PopPartition:
    """``state`` with ``changed`` entries put (``None``: removed), kept in offset order by bisection: an event
    costs a copy of the table (memmove speed) and a search per change, not a rebuild of every entry."""
    entries = list(state.entries)
    for offset, entry in sorted(changed.items(), key=_OFFSET):
        index = bisect_left(entries, offset, key=_OFFSET)
        present = index < len(entries) and entries[index].offset == offset
        if entry is None:
            if present:
                del entries[index]
        elif present:
            entries[index] = entry
        else:
            entries.insert(index, entry)
    return replace(state, entries=tuple(entries),
                   next_offset=state.next_offset if next_offset is None else next_offset,
                   last_epoch=state.last_epoch if last_epoch is None else last_epoch)


@singledispatch
def _evolve(event: Event, state: PopPartition | None) -> PopPartition | None:
    return state


@_evolve.register
def _(event: PopCursorCreated, state: PopPartition | None) -> PopPartition | None:
    return state if state is not None else PopPartition(event.group, event.partition_id, event.topic,
                                                        event.start_offset)


@_evolve.register
def _(event: CheckpointCreated, state: PopPartition | None) -> PopPartition | None:
    if state is None:
        return None
    until = event.pop_time_ms + event.invisible_time_ms
    next_offset, last_epoch = max(state.next_offset, event.next_offset), max(state.last_epoch, event.epoch)
    if event.offsets and (not state.entries or min(event.offsets) > state.entries[-1].offset):
        # only new records past every entry (a pop of fresh records): appended, no search per offset
        new = tuple.__new__  # PopEntry's own __new__ is a Python lambda: a third of this fold's time
        fresh = tuple(new(PopEntry, (offset, 1, event.epoch, until, False)) for offset in sorted(event.offsets))
        return replace(state, entries=state.entries + fresh, next_offset=next_offset, last_epoch=last_epoch)
    changed: dict[int, PopEntry | None] = {}
    for offset in event.offsets:
        before = state.entry(offset)
        deliveries = before.deliveries + 1 if before is not None else 1
        changed[offset] = PopEntry(offset, deliveries, event.epoch, until)
    return _with(state, changed, next_offset=max(state.next_offset, event.next_offset),
                 last_epoch=max(state.last_epoch, event.epoch))


@_evolve.register
def _(event: CheckpointAcked, state: PopPartition | None) -> PopPartition | None:
    if state is None:
        return None
    if len(event.handles) > _FEW:
        # many handles (a compact ack): one pass over the span they cover, not a search and a removal each
        settled = dict(event.handles)  # offset -> epoch: a compact ack names each offset once
        low = bisect_left(state.entries, min(settled), key=_OFFSET)
        high = bisect_right(state.entries, max(settled), key=_OFFSET)
        if len(settled) == len(event.handles):
            kept = tuple(entry for entry in state.entries[low:high] if settled.get(entry[0]) != entry[2])
        else:  # an offset named twice (two epochs): whichever is its entry's settles it
            pairs = set(event.handles)
            kept = tuple(entry for entry in state.entries[low:high] if (entry[0], entry[2]) not in pairs)
        return replace(state, entries=state.entries[:low] + kept + state.entries[high:])
    changed: dict[int, PopEntry | None] = {}
    for offset, epoch in event.handles:
        entry = state.entry(offset)
        if entry is not None and entry.epoch == epoch:
            changed[offset] = None
    return _with(state, changed)


@_evolve.register
def _(event: HandleSuperseded, state: PopPartition | None) -> PopPartition | None:
    if state is None:
        return None
    entry = state.entry(event.offset)
    if entry is None or entry.epoch != event.old_epoch or entry.visible:
        return state
    moved = entry._replace(epoch=event.epoch, invisible_until_ms=event.invisible_until_ms)
    return _with(state, {event.offset: moved}, last_epoch=max(state.last_epoch, event.epoch))


@_evolve.register
def _(event: Revived, state: PopPartition | None) -> PopPartition | None:
    if state is None:
        return None
    changed: dict[int, PopEntry | None] = {}
    for offset in event.offsets:
        entry = state.entry(offset)
        if entry is not None and not entry.visible:
            changed[offset] = entry._replace(visible=True)
    return _with(state, changed)


@_evolve.register
def _(event: PopDeadLettered, state: PopPartition | None) -> PopPartition | None:
    if state is None:
        return None
    return _with(state, {offset: None for offset, _ in event.records})


@_evolve.register
def _(event: PopDelayed, state: PopPartition | None) -> PopPartition | None:
    if state is None:
        return None
    changed: dict[int, PopEntry | None] = {offset: PopEntry(offset, 0, 0, due) for offset, due in event.records
                                           if state.entry(offset) is None}
    return _with(state, changed)


@_evolve.register
def _(event: PopCursorDeleted, state: PopPartition | None) -> PopPartition | None:
    return None


def _keys(event: Event) -> tuple[str, ...]:
    return (pop_key(event.group, event.partition_id),) if isinstance(event, PopEvent) else ()


POP_INFLIGHT: Projection[PopPartition] = Projection(
    name=PROJECTION_NAME, entity_keys=_keys, evolve=lambda state, event, key: _evolve(event, state),
    handles=frozenset({PopEvent}),
)

POP_STATE_TYPES = {2090: PopPartition}
"""Codec tags of the states, registered with the projection by the built-in plugin ``pop`` (plugin state tags
start at 2000; 2090 mirrors the events' decade 90)."""


def pop_partition(state: object) -> PopPartition | None:
    """A stored state as a `PopPartition` (``None`` for anything else: the group never popped there)."""
    return state if isinstance(state, PopPartition) else None
