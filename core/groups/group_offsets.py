"""Committed consumer-group offsets: a classic Kafka group is a cursor with cumulative acknowledgement.

Each committed partition is its own entity (``offset_key``: topic, partition, group), so a commit writes the
rows of the partitions it names and nothing else, as Kafka appends only those to ``__consumer_offsets``. A
group's head (``group_key``) lists the partitions it has committed, so readers find a group's offsets without
scanning every row; it changes only when a partition is first committed or deleted, and the store writes no
row whose state an event left as it was. Before, a group's offsets were one entity: a commit of a few
partitions of a 10,000-partition group re-encoded all 10,000 entries (about 12 ms of the event loop).

Heads and rows share one projection (``committed_offsets``): a head's key starts with ``#``, which no topic name
holds, so it never meets a row. `GroupDeleted` names the rows it removes (``partitions``); one written before it
did (version 1) leaves its rows behind when an old log is refolded, so readers trust a row only while its
group's head lists it. Older stores kept one row per group (projection ``group_offsets``): the store folds the
offset events into this projection once, at the first start, and deletes those rows (`Projection.replaces`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from immutables import Map
from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted
from logwright.core.persistent_sorted import SortedPersistent
from logwright.core.projection import Projection

PROJECTION_NAME = "committed_offsets"
HEAD_PREFIX = "#"


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    commit_time_ms: int = 0
    expire_time_ms: int = -1
    """-1: it expires by the broker's ``offsets.retention.minutes`` (`core.groups.offset_expiry`)."""


Partition = tuple[str, int]


class CommittedPartitions(SortedPersistent[Partition, None, Partition]):
    """An immutable set of ``(topic, partition)``, iterated sorted (the order it is stored in); adding a partition
    to a sorted tuple rebuilt and re-sorted it for every partition added (`SortedPersistent`)."""

    __slots__ = ()

    def __init__(self, partitions: Iterable[Partition] | Map[Partition, None] = ()) -> None:
        super().__init__(partitions if isinstance(partitions, Map)
                         else Map(((topic, partition), None) for topic, partition in partitions))

    def __contains__(self, partition: object) -> bool:
        return partition in self._map

    def with_partition(self, topic: str, partition: int) -> CommittedPartitions:
        return self if (topic, partition) in self._map else CommittedPartitions(self._map.set((topic, partition), None))

    def without(self, topic: str, partition: int) -> CommittedPartitions:
        return CommittedPartitions(self._map.delete((topic, partition))) if (topic, partition) in self._map else self

    def ordered(self) -> tuple[Partition, ...]:
        return tuple(sorted(self._map.keys()))


@dataclass(frozen=True, slots=True)
class OffsetsHead:
    """A group's head: the partitions it has committed offsets on."""

    partitions: CommittedPartitions = CommittedPartitions()

    def __post_init__(self) -> None:
        if not isinstance(self.partitions, CommittedPartitions):  # decoded from a store, or written in a test
            object.__setattr__(self, "partitions", CommittedPartitions(self.partitions))


def group_key(group: str) -> str:
    return HEAD_PREFIX + group


def offset_key(topic: str, partition: int, group: str) -> str:
    """A row's key: a topic name holds no ``/`` (`catalog.validate_topic_name`), so the group may hold anything."""
    return f"{topic}/{partition}/{group}"


def offset_key_prefix(topic: str, partition: int) -> str:
    """Every row of one partition starts with this (the backlog scans a partition's committed groups)."""
    return f"{topic}/{partition}/"


def group_of(key: str) -> str:
    """The group of a row's key."""
    return key.split("/", 2)[2]


class GroupOffsets:
    """One group's committed offsets as readers see them: its head's partitions, each read from its row.

    A view over the projection's states, not a copy: read it in the same turn it was taken."""

    __slots__ = ("group", "head", "rows")

    def __init__(self, group: str, head: OffsetsHead, rows: Mapping[str, Any]) -> None:
        self.group, self.head, self.rows = group, head, rows

    def get(self, topic: str, partition: int) -> CommittedOffset | None:
        if (topic, partition) not in self.head.partitions:
            return None
        committed = self.rows.get(offset_key(topic, partition, self.group))
        return committed if isinstance(committed, CommittedOffset) else None

    def partitions(self) -> tuple[Partition, ...]:
        """Every committed (topic, partition), sorted."""
        return self.head.partitions.sorted()

    def __iter__(self) -> Iterator[tuple[str, int, CommittedOffset]]:
        """``(topic, partition, committed)`` sorted by topic and partition."""
        for topic, partition in self.head.partitions:
            committed = self.rows.get(offset_key(topic, partition, self.group))
            if isinstance(committed, CommittedOffset):
                yield topic, partition, committed

    def __len__(self) -> int:
        return len(self.head.partitions)


def group_offsets(states: Mapping[str, Any], group: str) -> GroupOffsets | None:
    """The group's offsets in the projection's ``states``; ``None`` when it has no head (it never committed, or it was
    deleted). A head whose last offset went is kept, empty: the group stays until its expiry deletes it."""
    head = states.get(group_key(group))
    return GroupOffsets(group, head, states) if isinstance(head, OffsetsHead) else None


def groups_with_offsets(states: Mapping[str, Any]) -> Iterator[str]:
    """Every group with a head, even emptied (its head's key, without the prefix)."""
    return (key[1:] for key in states if key.startswith(HEAD_PREFIX))


def rows_on_topics(rows: Iterable[tuple[str, Any]], topics: Iterable[str]) -> list[tuple[str, Any]]:
    """The rows (key, state) of ``rows`` (the projection's items, or a slice of them) on the partitions of ``topics``,
    whichever group committed them: a deleted topic's offsets go, as Kafka's coordinator deletes them
    (``onPartitionsDeleted``), so a topic created again under the same name starts without them. Each row's topic is
    looked up in a set: trying every topic's prefix on every row made a deletion of 5,000 topics beside 100,000
    rows take 1.5 s. A head's key never gives a topic name (it starts with ``#``, which no topic name holds)."""
    wanted = set(topics)
    return [(key, state) for key, state in rows if key.partition("/")[0] in wanted] if wanted else []


def topics_with_offsets(states: Mapping[str, Any]) -> set[str]:
    """Every topic some group has a row on (a topic name holds no ``/``; a head's key starts with ``#``)."""
    return {key.partition("/")[0] for key in states if not key.startswith("#")}


def row_deletion(key: str) -> OffsetDeleted:
    """The event deleting the row ``key``."""
    topic, partition, group = key.split("/", 2)
    return OffsetDeleted(group, topic, int(partition))


def deletion(group: str, offsets: GroupOffsets | None) -> GroupDeleted:
    """The event deleting a group, naming the rows of its offsets so they go with it."""
    return GroupDeleted(group, offsets.partitions() if offsets is not None else ())


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, OffsetCommitted | OffsetDeleted):
        return (group_key(event.group), offset_key(event.topic, event.partition, event.group))
    if isinstance(event, GroupDeleted):
        return (group_key(event.group), *(offset_key(topic, partition, event.group)
                                          for topic, partition in event.partitions))
    return ()


def _evolve(state: Any, event: Event, key: str) -> Any:
    """Three event types, two kinds of row: tested directly (a commit of 5,000 partitions folds 10,000 times)."""
    committed = type(event) is OffsetCommitted
    if key.startswith(HEAD_PREFIX):
        head = state if isinstance(state, OffsetsHead) else None
        if committed:
            return _committed_head(cast(OffsetCommitted, event), head)
        if isinstance(event, OffsetDeleted):
            return _deleted_head(event, head)
        return None if isinstance(event, GroupDeleted) else head
    if committed:
        commit = cast(OffsetCommitted, event)
        return CommittedOffset(commit.offset, commit.leader_epoch, commit.metadata, commit.commit_time_ms,
                               commit.expire_time_ms)
    return None if isinstance(event, OffsetDeleted | GroupDeleted) else state


def _committed_head(event: OffsetCommitted, head: OffsetsHead | None) -> OffsetsHead:
    if head is None:
        return OffsetsHead(CommittedPartitions(((event.topic, event.partition),)))
    partitions = head.partitions.with_partition(event.topic, event.partition)
    return head if partitions is head.partitions else OffsetsHead(partitions)  # unchanged: the store writes nothing


def _deleted_head(event: OffsetDeleted, head: OffsetsHead | None) -> OffsetsHead | None:
    """A head whose last partition goes stays, empty: the group stays too, Empty, until its expiry
    (`core.groups.offset_expiry`) or a DeleteGroups, as Kafka keeps it until its next cleanup."""
    if head is None:
        return None
    partitions = head.partitions.without(event.topic, event.partition)
    return head if partitions is head.partitions else OffsetsHead(partitions)


GROUP_OFFSETS: Projection[Any] = Projection(
    name=PROJECTION_NAME, entity_keys=_keys, evolve=_evolve,
    handles=frozenset({OffsetCommitted, OffsetDeleted, GroupDeleted}), replaces=("group_offsets",),
)
