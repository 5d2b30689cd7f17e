"""Evictions that stick: a group's later commits below its eviction point are raised to it.

An eviction moves a classic or KIP-848 group's committed offset, but its running members keep their own fetch
positions and commit them. Pulsar treats an ack below the mark-delete position after an eviction as a no-op
(the cursor never moves back); here the group's *eviction point* (the last eviction's ``to_offset`` on a
partition) is kept in the ``eviction_points`` projection until the group commits past it, and a member's commit
below it is stored at the point instead (`EvictedCommitRaised` says what was asked). An empty group's commit
(AdminClient's alterConsumerGroupOffsets, ``kafka-consumer-groups --reset-offsets``: Kafka requires the group
to be empty) and DeleteConsumerGroupOffsets are explicit resets: they are taken as they are and lift the point.

`adjust_commits` is pure: the backlog plugin calls it from ``logwright_derive_events`` with what the broker is
staging, so the raised commit lands in the same WriteBatch as the member's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted, TopicDeleted
from logwright.core.events.backlog import BacklogEvicted, EvictedCommitRaised, EvictionPointLifted
from logwright.core.projection import Projection

EVICTION_POINTS_NAME = "eviction_points"
COMMIT_TYPES = frozenset({OffsetCommitted, OffsetDeleted, TopicDeleted})
"""The events `adjust_commits` answers: a staged change without one (an append, mostly) is not looked at."""


@dataclass(frozen=True, slots=True)
class EvictionPoints:
    """One group's eviction points: ``(topic, partition id, evicted_to)``, sorted, at most one per partition."""

    group: str
    points: tuple[tuple[str, int, int], ...] = ()

    def point(self, partition_id: int) -> int | None:
        """The offset the group's commits are raised to on the partition, if any."""
        return next((offset for _, pid, offset in self.points if pid == partition_id), None)

    def with_point(self, topic: str, partition_id: int, evicted_to: int | None) -> EvictionPoints | None:
        kept = [entry for entry in self.points if entry[1] != partition_id]
        if evicted_to is not None:
            kept.append((topic, partition_id, evicted_to))
        return replace(self, points=tuple(sorted(kept))) if kept else None


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, BacklogEvicted):
        return (event.subscription,) if event.kind == "group" else ()
    if isinstance(event, EvictionPointLifted | GroupDeleted):
        return (event.group,)
    return ()


def _evolve(state: EvictionPoints | None, event: Event, key: str) -> EvictionPoints | None:
    if isinstance(event, BacklogEvicted):
        return (state or EvictionPoints(key)).with_point(event.topic, event.partition_id, event.to_offset)
    if isinstance(event, EvictionPointLifted):
        if state is None or state.point(event.partition_id) != event.evicted_to:
            return state  # a later eviction set a new point in the same change: that one stays
        return state.with_point(event.topic, event.partition_id, None)
    if isinstance(event, GroupDeleted):
        return None
    return state


EVICTION_POINTS: Projection[EvictionPoints] = Projection(
    name=EVICTION_POINTS_NAME, entity_keys=_keys, evolve=_evolve,
    handles=frozenset({BacklogEvicted, EvictionPointLifted, GroupDeleted}),
)
EVICTION_POINTS_STATE_TAGS = {2151: EvictionPoints}


@dataclass(frozen=True, slots=True)
class GroupView:
    """What `adjust_commits` reads of the broker: the projection's rows, partition ids, group membership."""

    points: Mapping[str, Any]
    partition_id: Callable[[str, int], int | None]
    """The partition id of ``(topic, partition index)``; ``None`` for an unknown partition."""
    has_members: Callable[[str], bool]
    """Whether the group (classic or KIP-848) has members now: its commits come from a running consumer."""


def adjust_commits(events: Sequence[Event], view: GroupView) -> list[Event]:
    """The events to stage after ``events`` so no member commit undoes an eviction, and lifted points go.

    A commit by the eviction itself (a `BacklogEvicted` for the group and partition in ``events``) is left
    alone. For the others, on a partition with an eviction point: a member's commit below it is followed by
    an `OffsetCommitted` at the point and an `EvictedCommitRaised`; a commit above it, an empty group's commit
    and an `OffsetDeleted` lift the point (`EvictionPointLifted`), as does deleting the topic.
    """
    if not view.points:
        return []
    evicting = {(event.subscription, event.partition_id) for event in events
                if isinstance(event, BacklogEvicted) and event.kind == "group"}
    lifted: set[tuple[str, int]] = set()
    derived: list[Event] = []
    for event in events:
        if isinstance(event, TopicDeleted):
            derived.extend(_topic_deleted(event, view.points))
        if not isinstance(event, OffsetCommitted | OffsetDeleted):
            continue
        state = view.points.get(event.group)
        if not isinstance(state, EvictionPoints):
            continue
        partition_id = view.partition_id(event.topic, event.partition)
        point = state.point(partition_id) if partition_id is not None else None
        if point is None or partition_id is None or (event.group, partition_id) in evicting | lifted:
            continue
        derived.extend(_answer(event, partition_id, point, view, lifted))
    return derived


def _topic_deleted(event: TopicDeleted, points: Mapping[str, Any]) -> Iterable[Event]:
    gone = set(event.partition_ids)
    for state in points.values():
        if isinstance(state, EvictionPoints):
            yield from (EvictionPointLifted(state.group, topic, partition_id, offset, "topic deleted")
                        for topic, partition_id, offset in state.points if partition_id in gone)


def _answer(event: OffsetCommitted | OffsetDeleted, partition_id: int, point: int, view: GroupView,
            lifted: set[tuple[str, int]]) -> Iterable[Event]:
    if isinstance(event, OffsetCommitted) and view.has_members(event.group):
        if event.offset < point:
            return (replace(event, offset=point),
                    EvictedCommitRaised(event.group, event.topic, partition_id, event.offset, point))
        if event.offset == point:
            return ()
        reason = "committed"
    else:
        reason = "deleted" if isinstance(event, OffsetDeleted) else "reset"
    lifted.add((event.group, partition_id))
    return (EvictionPointLifted(event.group, event.topic, partition_id, point, reason),)
