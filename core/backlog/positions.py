"""Every kind of subscription as a backlog `Position`: the extension point for new kinds of subscription.

A `PositionSource` finds the entities that may hold a position on a topic's partitions in its projection's
states, and reads one entity's position. The backlog tracker scans each source of `POSITION_SOURCES` once
per topic (one pass over the states for all its partitions: a pass per partition made an inspection of a
1,000-partition topic beside 10,000 pop tables hold every client for seconds), remembers the entity keys
found, and learns new ones from the events that start a subscription (`started_by`), so an admission reads
a few states rather than every group and cursor of the broker. Classic and KIP-848 groups (committed offsets,
the ``committed_offsets`` projection) and cursors (share groups and logwright subscriptions of every mode, the
``cursors`` projection) and pop groups (RocketMQ 5's pop, the ``pop_inflight`` projection) are built in. A
new kind of subscription appends its own source: nothing else of the backlog code changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

from logwright.core.cursors.cursor import CursorState, cursor_key
from logwright.core.events import Event, OffsetCommitted, SubscriptionCreated
from logwright.core.events.pop import PopCursorCreated
from logwright.core.groups.group_offsets import PROJECTION_NAME as OFFSETS_PROJECTION
from logwright.core.groups.group_offsets import (
    CommittedOffset,
    OffsetsHead,
    group_key,
    group_of,
    offset_key,
    offset_key_prefix,
)
from logwright.core.pop.inflight import PROJECTION_NAME as POP_PROJECTION
from logwright.core.pop.inflight import PopHead, PopPartition, pop_key, table_in
from logwright.core.rangeset import RangeSet

from .backlog import Position

NO_STATES: Mapping[str, Any] = MappingProxyType({})


class PositionSource(Protocol):
    """Where one kind of subscription stands, read from its projection's states."""

    projection: str
    """The projection holding this kind's state."""

    def locate(self, states: Mapping[str, Any], topic: str,
               partition_ids: Sequence[int]) -> Iterable[tuple[int, str]]:
        """Every (partition id, entity key) in ``states`` that may hold a position on ``topic``'s partitions
        (``partition_ids``, by partition index), found in one pass over ``states``; `read` tells."""
        ...

    def read(self, key: str, state: Any, topic: str, partition_index: int, partition_id: int,
             states: Mapping[str, Any] = NO_STATES) -> Position | None:
        """The position entity ``key``'s state gives on the partition; ``None`` if it has none (any longer).
        ``states`` are the projection's, for a kind whose entity spans several rows (a pop table's pages)."""
        ...

    def started_by(self, event: Event) -> tuple[str, int | str, str] | None:
        """``(topic or "", partition index or id, entity key)`` when ``event`` may start a position: a topic
        and partition index, or ``""`` and a partition id; ``None`` for other events."""
        ...


class CursorPositions:
    """Share groups and logwright subscriptions: the mark-delete position and the settled ranges above it."""

    projection = "cursors"

    def locate(self, states: Mapping[str, Any], topic: str,
               partition_ids: Sequence[int]) -> Iterable[tuple[int, str]]:
        wanted = frozenset(partition_ids)
        return ((state.partition_id, key) for key, state in states.items()
                if isinstance(state, CursorState) and state.partition_id in wanted)

    def read(self, key: str, state: Any, topic: str, partition_index: int, partition_id: int,
             states: Mapping[str, Any] = NO_STATES) -> Position | None:
        return from_cursor(state) if isinstance(state, CursorState) else None

    def started_by(self, event: Event) -> tuple[str, int | str, str] | None:
        if isinstance(event, SubscriptionCreated):
            return "", event.partition_id, cursor_key(event.subscription, event.partition_id)
        return None


class GroupPositions:
    """Classic and KIP-848 consumer groups: the committed offset (the next record to read), nothing settled above.

    A group's offset on a partition is its own row (keyed by topic, partition and group); a row counts only while
    its group's head lists the partition (a group deleted by an old log's event left its rows behind)."""

    projection = OFFSETS_PROJECTION

    def locate(self, states: Mapping[str, Any], topic: str,
               partition_ids: Sequence[int]) -> Iterable[tuple[int, str]]:
        prefix = f"{topic}/"  # a row's key is `offset_key`: topic, partition index, group
        for key in states:
            if key.startswith(prefix) and (end := key.find("/", len(prefix))) > 0:
                index = key[len(prefix):end]
                if len(index) < 10 and index.isdecimal() and int(index) < len(partition_ids):
                    yield partition_ids[int(index)], key

    def read(self, key: str, state: Any, topic: str, partition_index: int, partition_id: int,
             states: Mapping[str, Any] = NO_STATES) -> Position | None:
        if not isinstance(state, CommittedOffset) or state.offset < 0 \
                or not key.startswith(offset_key_prefix(topic, partition_index)):
            return None
        group = group_of(key)
        head = states.get(group_key(group))
        if not isinstance(head, OffsetsHead) or (topic, partition_index) not in head.partitions:
            return None
        return Position(group, "group", partition_id, state.offset)

    def started_by(self, event: Event) -> tuple[str, int | str, str] | None:
        if isinstance(event, OffsetCommitted):
            return event.topic, event.partition, offset_key(event.topic, event.partition, event.group)
        return None


class PopPositions:
    """Pop groups (RocketMQ 5): the consumed offset, and above it every offset popped and settled below the pop
    position (those without an in-flight entry); in-flight and revived entries stay in the backlog."""

    projection = POP_PROJECTION

    def locate(self, states: Mapping[str, Any], topic: str,
               partition_ids: Sequence[int]) -> Iterable[tuple[int, str]]:
        wanted = frozenset(partition_ids)
        return ((state.partition_id, key) for key, state in states.items()
                if isinstance(state, PopHead) and state.partition_id in wanted)

    def read(self, key: str, state: Any, topic: str, partition_index: int, partition_id: int,
             states: Mapping[str, Any] = NO_STATES) -> Position | None:
        table = table_in(states, state.group, partition_id) if isinstance(state, PopHead) else None
        return from_pop(table) if table is not None else None

    def started_by(self, event: Event) -> tuple[str, int | str, str] | None:
        if isinstance(event, PopCursorCreated):
            return "", event.partition_id, pop_key(event.group, event.partition_id)
        return None


def from_pop(state: PopPartition) -> Position:
    """The offsets between the in-flight runs are settled. Read from the runs, not their entries: a run of 1,000,000
    records in flight (the per-partition limit a group may set) took a second to expand at every admission."""
    first = state.consumed_offset()
    settled: list[tuple[int, int]] = []
    position = first
    for run in state.runs:
        if run.first > position:
            settled.append((position, run.first - 1))
        position = max(position, run.last + 1)
    if position < state.next_offset:
        settled.append((position, state.next_offset - 1))
    return Position(state.group, "pop", state.partition_id, first, RangeSet.from_ranges(settled))


def from_cursor(state: CursorState) -> Position:
    return Position(state.subscription, "cursor", state.partition_id, state.mark_delete_position + 1, state.settled)


POSITION_SOURCES: list[PositionSource] = [GroupPositions(), CursorPositions(), PopPositions()]
"""The kinds of subscription the backlog counts; append a source to count a new kind."""


def scan_topic(source: PositionSource, states: Mapping[str, Any], topic: str,
               partition_ids: Sequence[int]) -> dict[int, dict[str, Position]]:
    """Every position ``source`` finds on ``topic``'s partitions: by partition id, by entity key (a partition
    with none has no entry). One pass over ``states``, then one `read` per entity found."""
    index_of = {partition_id: index for index, partition_id in enumerate(partition_ids)}
    found: dict[int, dict[str, Position]] = {}
    for partition_id, key in source.locate(states, topic, partition_ids):
        position = source.read(key, states.get(key), topic, index_of[partition_id], partition_id, states)
        if position is not None:
            found.setdefault(partition_id, {})[key] = position
    return found
