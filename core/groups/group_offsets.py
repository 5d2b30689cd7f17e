"""Committed consumer-group offsets: a classic Kafka group is a cursor with cumulative acknowledgement.

A group's offsets are one entity, kept in a persistent map (`immutables.Map`, a hash array mapped trie): a commit
makes a new state sharing all but a few nodes with the old one. The sorted tuple it replaced was rebuilt and
sorted for every partition committed, so one OffsetCommit of 10,000 partitions took 19 s of the event loop, and
replaying such commits at a restart cost as much again. It is stored as it always was, the sorted tuple
(`OffsetTable.codec_plain`), so stores written before read unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import singledispatch
from typing import Any

from immutables import Map
from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted
from logwright.core.projection import Projection


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    commit_time_ms: int = 0


Entry = tuple[str, int, CommittedOffset]


class OffsetTable:
    """Immutable ``(topic, partition) -> CommittedOffset``; iterates as ``(topic, partition, committed)`` sorted by
    topic and partition (the order it is stored in)."""

    __slots__ = ("_map", "_sorted")

    def __init__(self, entries: Iterable[Entry] | Map[tuple[str, int], CommittedOffset] = ()) -> None:
        self._map: Map[tuple[str, int], CommittedOffset] = (
            entries if isinstance(entries, Map) else Map(((topic, partition), committed)
                                                         for topic, partition, committed in entries))
        self._sorted: tuple[Entry, ...] | None = None

    def get(self, topic: str, partition: int) -> CommittedOffset | None:
        return self._map.get((topic, partition))

    def set(self, topic: str, partition: int, committed: CommittedOffset) -> OffsetTable:
        return OffsetTable(self._map.set((topic, partition), committed))

    def remove(self, topic: str, partition: int) -> OffsetTable:
        return OffsetTable(self._map.delete((topic, partition))) if (topic, partition) in self._map else self

    def entries(self) -> tuple[Entry, ...]:
        """Sorted once per state, when first asked (to encode it, or by a reader listing every partition)."""
        if self._sorted is None:
            self._sorted = tuple((topic, partition, committed)
                                 for (topic, partition), committed in sorted(self._map.items(), key=_by_key))
        return self._sorted

    def codec_plain(self) -> tuple[Entry, ...]:
        """What the codec stores: the sorted entries, exactly the tuple this table replaced."""
        return self.entries()

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries())

    def __len__(self) -> int:
        return len(self._map)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OffsetTable) and self._map == other._map

    def __hash__(self) -> int:
        return hash(self._map)

    def __repr__(self) -> str:
        return f"OffsetTable({self.entries()!r})"


def _by_key(item: tuple[tuple[str, int], Any]) -> tuple[str, int]:
    return item[0]


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    """Offsets of one group, keyed by ``(topic, partition)``; built from the stored sorted tuple as well."""

    offsets: OffsetTable = OffsetTable()

    def __post_init__(self) -> None:
        if not isinstance(self.offsets, OffsetTable):  # decoded from a store, or written out in a test
            object.__setattr__(self, "offsets", OffsetTable(self.offsets))

    def get(self, topic: str, partition: int) -> CommittedOffset | None:
        return self.offsets.get(topic, partition)

    def with_offset(self, topic: str, partition: int, committed: CommittedOffset | None) -> GroupOffsets:
        if committed is None:
            return GroupOffsets(self.offsets.remove(topic, partition))
        return GroupOffsets(self.offsets.set(topic, partition, committed))


def group_key(group: str) -> str:
    return group


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, OffsetCommitted | OffsetDeleted | GroupDeleted):
        return (group_key(event.group),)
    return ()


@singledispatch
def _evolve(event: Event, state: GroupOffsets | None, key: str) -> GroupOffsets | None:
    return state


@_evolve.register
def _(event: OffsetCommitted, state: GroupOffsets | None, key: str) -> GroupOffsets | None:
    committed = CommittedOffset(event.offset, event.leader_epoch, event.metadata, event.commit_time_ms)
    return (state or GroupOffsets()).with_offset(event.topic, event.partition, committed)


@_evolve.register
def _(event: OffsetDeleted, state: GroupOffsets | None, key: str) -> GroupOffsets | None:
    if state is None:
        return None
    remaining = state.with_offset(event.topic, event.partition, None)
    return remaining if remaining.offsets else None


@_evolve.register
def _(event: GroupDeleted, state: GroupOffsets | None, key: str) -> GroupOffsets | None:
    return None


GROUP_OFFSETS: Projection[GroupOffsets] = Projection(
    name="group_offsets", entity_keys=_keys, evolve=lambda state, event, key: _evolve(event, state, key),
    handles=frozenset({OffsetCommitted, OffsetDeleted, GroupDeleted})
)

