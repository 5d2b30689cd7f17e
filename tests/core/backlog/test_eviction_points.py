"""Evictions that stick: given an eviction, when a group commits, then the events staged after the commit."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from logwright.core.backlog.eviction_points import (
    EVICTION_POINTS,
    EvictionPoints,
    GroupView,
    PointSet,
    adjust_commits,
)
from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted, TopicDeleted
from logwright.core.events.backlog import BacklogEvicted, EvictedCommitRaised, EvictionPointLifted
from logwright.core.groups.group_offsets import GROUP_OFFSETS, offset_key
from logwright.core.projection import fold
from logwright.plugins.host import PluginHost

PARTITION_ID = 40


def evicted(group: str = "slow", to_offset: int = 100, partition_id: int = PARTITION_ID) -> BacklogEvicted:
    return BacklogEvicted(group, "group", "t", partition_id, 0, to_offset, to_offset, to_offset * 10, "quota")


def commit(offset: int, group: str = "slow", partition: int = 0) -> OffsetCommitted:
    return OffsetCommitted(group, "t", partition, offset, 3, "meta", 1234)


def after(history: Sequence[Event], staged: Sequence[Event], members: bool = True) -> list[Event]:
    """What the plugin stages after ``staged``, given the log ``history``."""
    view = GroupView(fold(EVICTION_POINTS, history), lambda topic, index: PARTITION_ID + index,
                     lambda group: members)
    return adjust_commits(staged, view)


def committed(events: Sequence[Event], group: str = "slow") -> int:
    state = fold(GROUP_OFFSETS, events)[offset_key("t", 0, group)]
    return int(state.offset)


def test_a_member_commit_below_the_eviction_point_is_raised_to_it_and_explained() -> None:
    history = [commit(100), evicted()]
    staged = [commit(40)]
    derived = after(history, staged)
    assert derived == [commit(100), EvictedCommitRaised("slow", "t", PARTITION_ID, 40, 100)]
    assert committed([*history, *staged, *derived]) == 100
    assert fold(EVICTION_POINTS, [*history, *staged, *derived])["slow"].point(PARTITION_ID) == 100, \
        "still raised until the group commits past it"


def test_a_commit_past_the_point_lifts_it_and_later_commits_go_back_freely() -> None:
    history = [commit(100), evicted()]
    assert after(history, [commit(100)]) == [], "at the point: nothing to do"
    lifted = after(history, [commit(130)])
    assert lifted == [EvictionPointLifted("slow", "t", PARTITION_ID, 100, "committed")]
    history = [*history, commit(130), *lifted]
    assert fold(EVICTION_POINTS, history) == {}
    assert after(history, [commit(20)]) == [], "a seek back after passing the point is the consumer's choice"


def test_an_empty_groups_commit_is_an_explicit_reset_and_offset_deletion_lifts_the_point() -> None:
    history = [commit(100), evicted()]
    reset = after(history, [commit(0)], members=False)
    assert reset == [EvictionPointLifted("slow", "t", PARTITION_ID, 100, "reset")]
    assert committed([*history, commit(0), *reset]) == 0
    deleted = after(history, [OffsetDeleted("slow", "t", 0)])
    assert deleted == [EvictionPointLifted("slow", "t", PARTITION_ID, 100, "deleted")]
    assert fold(EVICTION_POINTS, [*history, *deleted]) == {}
    assert fold(EVICTION_POINTS, [*history, GroupDeleted("slow")]) == {}


def test_the_evictions_own_commit_and_other_partitions_and_groups_are_left_alone() -> None:
    history = [commit(100), evicted()]
    assert after(history, [commit(150), evicted(to_offset=150)]) == [], "a new eviction's own commit"
    assert after(history, [commit(5, partition=1)]) == [], "no point on another partition"
    assert after(history, [commit(5, group="other")]) == []
    assert after([], [commit(5)]) == [], "no eviction point at all: nothing is read"


def test_a_lift_staged_with_a_new_eviction_keeps_the_new_point() -> None:
    history = [commit(100), evicted()]
    newer = [commit(130), EvictionPointLifted("slow", "t", PARTITION_ID, 100, "committed"), commit(200),
             evicted(to_offset=200)]
    assert fold(EVICTION_POINTS, [*history, *newer])["slow"] == EvictionPoints("slow", (("t", PARTITION_ID, 200),))
    late_lift = [*history, evicted(to_offset=200), EvictionPointLifted("slow", "t", PARTITION_ID, 100, "committed")]
    assert fold(EVICTION_POINTS, late_lift)["slow"].point(PARTITION_ID) == 200, "a lift names the point it lifts"


def test_deleting_the_topic_lifts_its_points() -> None:
    history = [commit(100), evicted(), evicted(group="other", partition_id=PARTITION_ID + 1)]
    lifted = after(history, [TopicDeleted("t", b"\0" * 16, (PARTITION_ID,))])
    assert lifted == [EvictionPointLifted("slow", "t", PARTITION_ID, 100, "topic deleted")]
    assert set(fold(EVICTION_POINTS, [*history, *lifted])) == {"other"}


def test_points_set_and_lifted_one_by_one_are_never_sorted_on_the_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """The points were a sorted tuple rebuilt and sorted again for each point set or lifted, and searched for each
    commit: an EndTxn committing 10,000 offsets of a group with 10,000 points held the loop 2 s."""
    sorts = 0
    sort = PointSet.sorted

    def counted(self: PointSet) -> tuple[tuple[str, int, int], ...]:
        nonlocal sorts
        sorts += 1
        return sort(self)

    monkeypatch.setattr(PointSet, "sorted", counted)
    history: list[Event] = [evicted(partition_id=n) for n in range(3_000)]
    state = fold(EVICTION_POINTS, history)["slow"]
    assert len(state.points) == 3_000 and state.point(1_234) == 100
    view = GroupView(fold(EVICTION_POINTS, history), lambda topic, index: index, lambda group: True)
    derived = adjust_commits([commit(150, partition=n) for n in range(3_000)], view)
    assert len(derived) == 3_000 and all(isinstance(event, EvictionPointLifted) for event in derived)
    assert "slow" not in fold(EVICTION_POINTS, [*history, *derived])
    assert sorts == 0


def test_points_are_stored_as_the_sorted_tuple_they_were_stored_as_before() -> None:
    registry = PluginHost.load(installed=False).type_registry()
    state = EvictionPoints("g", PointSet([("u", 3, 9), ("t", 7, 5)]))
    encoded = registry.encode(state)
    stored_before = EvictionPoints("g")
    object.__setattr__(stored_before, "points", (("t", 7, 5), ("u", 3, 9)))  # what the state held: a tuple
    assert registry.encode(stored_before) == encoded
    decoded = registry.decode(encoded, "test")
    assert decoded == state and tuple(decoded.points) == (("t", 7, 5), ("u", 3, 9))
    assert isinstance(decoded.points, PointSet)
