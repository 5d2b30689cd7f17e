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

from immutables import Map
from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted, TopicDeleted
from logwright.core.events.backlog import BacklogEvicted, EvictedCommitRaised, EvictionPointLifted
from logwright.core.persistent_sorted import SortedPersistent
from logwright.core.projection import Projection

EVICTION_POINTS_NAME = "eviction_points"
COMMIT_TYPES = frozenset({OffsetCommitted, OffsetDeleted, TopicDeleted})
"""The events `adjust_commits` answers: a staged change without one (an append, mostly) is not looked at."""


Point = tuple[str, int, int]
"""``(topic, partition id, evicted_to)``."""


class PointSet(SortedPersistent[int, Point, Point]):
    """A group's points, at most one per partition id, iterated sorted (the order they are stored in). They were a
    sorted tuple, searched for each commit and rebuilt and sorted again for each point set or lifted, so an EndTxn
    committing 10,000 offsets of a group with 10,000 points held the loop 2 s (`SortedPersistent`)."""

    __slots__ = ()

    def __init__(self, points: Iterable[Point] | Map[int, Point] = ()) -> None:
        super().__init__(points if isinstance(points, Map)
                         else Map((point[1], (point[0], point[1], point[2])) for point in points))

    def offset(self, partition_id: int) -> int | None:
        point = self._map.get(partition_id)
        return point[2] if point is not None else None

    def with_point(self, topic: str, partition_id: int, evicted_to: int | None) -> PointSet:
        if evicted_to is None:
            return PointSet(self._map.delete(partition_id)) if partition_id in self._map else self
        return PointSet(self._map.set(partition_id, (topic, partition_id, evicted_to)))

    def ordered(self) -> tuple[Point, ...]:
        return tuple(sorted(self._map.values()))


@dataclass(frozen=True, slots=True)
class EvictionPoints:
    """One group's eviction points: ``(topic, partition id, evicted_to)``, sorted, at most one per partition."""

    group: str
    points: PointSet = PointSet()

    def __post_init__(self) -> None:
        if not isinstance(self.points, PointSet):  # decoded from a store (a sorted tuple), or written in a test
            object.__setattr__(self, "points", PointSet(self.points))

    def point(self, partition_id: int) -> int | None:
        """The offset the group's commits are raised to on the partition, if any."""
        return self.points.offset(partition_id)

    def with_point(self, topic: str, partition_id: int, evicted_to: int | None) -> EvictionPoints | None:
        kept = self.points.with_point(topic, partition_id, evicted_to)
        return replace(self, points=kept) if kept else None


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
    gone = {partition_id for event in events if isinstance(event, TopicDeleted) for partition_id in event.partition_ids}
    derived: list[Event] = list(_topics_deleted(gone, view.points)) if gone else []
    lifted: set[tuple[str, int]] = set()
    for event in events:
        if not isinstance(event, OffsetCommitted | OffsetDeleted):
            continue
        state = view.points.get(event.group)
        if not isinstance(state, EvictionPoints):
            continue
        partition_id = view.partition_id(event.topic, event.partition)
        point = state.point(partition_id) if partition_id is not None else None
        if point is None or partition_id is None:
            continue
        if (event.group, partition_id) in evicting or (event.group, partition_id) in lifted:
            continue  # each a set of its own: their union, built for each commit, grew with the points lifted
        derived.extend(_answer(event, partition_id, point, view, lifted))
    return derived


def _topics_deleted(gone: set[int], points: Mapping[str, Any]) -> Iterable[Event]:
    """The points lifted on the deleted partitions ``gone``: one pass over the groups for a whole DeleteTopics."""
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
