"""Committed group offsets folded from OffsetCommitted / OffsetDeleted / GroupDeleted: a row per committed partition
and a head per group listing them."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted, RecordsAppended
from logwright.core.groups.group_offsets import (
    GROUP_OFFSETS,
    CommittedOffset,
    CommittedPartitions,
    GroupOffsets,
    OffsetsHead,
    deletion,
    group_key,
    group_offsets,
    groups_with_offsets,
    offset_key,
    row_deletion,
    rows_on_topics,
    topics_with_offsets,
)
from logwright.core.projection import fold


def states(*events: Event) -> dict[str, Any]:
    return fold(GROUP_OFFSETS, events)


def offsets(*events: Event, group: str = "g") -> GroupOffsets | None:
    return group_offsets(states(*events), group)


def listed(view: GroupOffsets | None) -> list[tuple[str, int, CommittedOffset]]:
    return list(view) if view is not None else []


def test_a_commit_records_offset_epoch_metadata_and_time() -> None:
    view = offsets(OffsetCommitted("g", "t", 0, 42, leader_epoch=3, metadata="m", commit_time_ms=99))
    assert listed(view) == [("t", 0, CommittedOffset(42, 3, "m", 99))]
    assert view is not None and view.get("t", 0) == CommittedOffset(42, 3, "m", 99)
    assert view.get("t", 1) is None


def test_a_later_commit_replaces_the_earlier_one_even_when_lower() -> None:
    view = offsets(OffsetCommitted("g", "t", 0, 42), OffsetCommitted("g", "t", 0, 7))
    assert view is not None and view.get("t", 0) == CommittedOffset(7)


def test_offsets_are_listed_sorted_by_topic_and_partition() -> None:
    view = offsets(OffsetCommitted("g", "b", 1, 1), OffsetCommitted("g", "a", 2, 2), OffsetCommitted("g", "b", 0, 3),
                   OffsetCommitted("g", "a", 10, 4))
    assert view is not None
    assert view.partitions() == (("a", 2), ("a", 10), ("b", 0), ("b", 1))
    assert [(topic, partition, committed.offset) for topic, partition, committed in view] == [
        ("a", 2, 2), ("a", 10, 4), ("b", 0, 3), ("b", 1, 1)]


def test_each_committed_partition_is_its_own_row_and_each_group_has_a_head() -> None:
    folded = states(OffsetCommitted("g1", "t", 0, 1), OffsetCommitted("g2", "t", 0, 2),
                    OffsetCommitted("g1", "t", 1, 3))
    assert folded == {
        "#g1": OffsetsHead(CommittedPartitions((("t", 0), ("t", 1)))),
        "#g2": OffsetsHead(CommittedPartitions((("t", 0),))),
        "t/0/g1": CommittedOffset(1), "t/1/g1": CommittedOffset(3), "t/0/g2": CommittedOffset(2),
    }
    assert sorted(groups_with_offsets(folded)) == ["g1", "g2"]


def test_a_commit_names_its_row_and_its_group_head_only() -> None:
    assert GROUP_OFFSETS.entity_keys(OffsetCommitted("g", "t", 4, 1)) == ("#g", "t/4/g")


def test_committing_a_partition_the_head_lists_leaves_the_head_as_it_was() -> None:
    """The very same object: the store writes no row for an entity an event left as it was, so a commit of a
    few partitions of a big group writes those rows only."""
    head = states(OffsetCommitted("g", "t", 0, 1))[group_key("g")]
    assert GROUP_OFFSETS.evolve(head, OffsetCommitted("g", "t", 0, 9), group_key("g")) is head
    assert GROUP_OFFSETS.evolve(head, OffsetDeleted("g", "u", 0), group_key("g")) is head
    assert GROUP_OFFSETS.evolve(head, OffsetCommitted("g", "t", 1, 9), group_key("g")) != head


def test_offset_deleted_removes_one_partition_and_leaves_the_group_empty_after_its_last() -> None:
    """The group stays until its expiry or a DeleteGroups removes it, as Kafka keeps it until its next cleanup."""
    commits = (OffsetCommitted("g", "t", 0, 1), OffsetCommitted("g", "t", 1, 2))
    assert listed(offsets(*commits, OffsetDeleted("g", "t", 0))) == [("t", 1, CommittedOffset(2))]
    emptied = states(*commits, OffsetDeleted("g", "t", 0), OffsetDeleted("g", "t", 1))
    assert emptied == {group_key("g"): OffsetsHead()}
    assert states(*commits, OffsetDeleted("g", "t", 0), OffsetDeleted("g", "t", 1), GroupDeleted("g")) == {}


def test_deleting_what_was_never_committed_changes_nothing() -> None:
    assert states(OffsetDeleted("g", "t", 0)) == {}
    assert listed(offsets(OffsetCommitted("g", "t", 0, 1), OffsetDeleted("g", "u", 0))) == [
        ("t", 0, CommittedOffset(1))]


def test_group_deleted_drops_the_head_and_the_rows_it_names_and_a_new_commit_starts_afresh() -> None:
    commits = (OffsetCommitted("g", "t", 0, 1), OffsetCommitted("g", "t", 1, 2), OffsetCommitted("h", "t", 0, 5))
    view = offsets(*commits)
    assert states(*commits, deletion("g", view)) == {"#h": OffsetsHead(CommittedPartitions((("t", 0),))),
                                                     "t/0/h": CommittedOffset(5)}
    again = offsets(*commits, deletion("g", view), OffsetCommitted("g", "u", 3, 9))
    assert listed(again) == [("u", 3, CommittedOffset(9))]


def test_a_group_deleted_by_an_old_event_leaves_rows_no_reader_sees() -> None:
    """Version 1 of `GroupDeleted` named no partitions (offsets were one row per group), so refolding an old log
    leaves that group's rows behind: its head is gone, and a row counts only while its head lists it."""
    folded = states(OffsetCommitted("g", "t", 0, 1), OffsetCommitted("g", "t", 1, 2), GroupDeleted("g"),
                    OffsetCommitted("g", "t", 1, 7))
    assert folded["t/0/g"] == CommittedOffset(1), "the old row stays"
    view = group_offsets(folded, "g")
    assert view is not None and view.get("t", 0) is None and listed(view) == [("t", 1, CommittedOffset(7))]


def test_rows_and_heads_never_meet_whatever_the_group_is_called() -> None:
    """A topic name holds neither ``#`` nor ``/``, so a head key is never a row key and a row key names one
    (topic, partition, group), even for groups named like keys."""
    groups = ["#g", "t/0/g", "g", "0/g", "/", "#"]
    folded = states(*(OffsetCommitted(group, "t", 0, number) for number, group in enumerate(groups)))
    assert len(folded) == 2 * len(groups)
    for number, group in enumerate(groups):
        assert listed(group_offsets(folded, group)) == [("t", 0, CommittedOffset(number))]
    assert sorted(groups_with_offsets(folded)) == sorted(groups)


def test_events_outside_group_offsets_touch_no_entity() -> None:
    assert GROUP_OFFSETS.entity_keys(RecordsAppended(0, 0, 1, 1, 1)) == ()


@given(st.lists(st.tuples(st.sampled_from(["commit", "delete"]), st.sampled_from(["a", "b"]), st.integers(0, 6)),
                max_size=40))
def test_committed_partitions_behave_as_a_set_and_leave_earlier_ones_as_they_were(
        steps: list[tuple[str, str, int]]) -> None:
    partitions, model, history = CommittedPartitions(), set[tuple[str, int]](), []
    for action, topic, partition in steps:
        history.append((partitions, sorted(model)))
        if action == "commit":
            partitions, model = partitions.with_partition(topic, partition), model | {(topic, partition)}
        else:
            partitions, model = partitions.without(topic, partition), model - {(topic, partition)}
        assert list(partitions) == sorted(model) and len(partitions) == len(model)
    for earlier, expected in history:
        assert list(earlier) == expected


def test_a_view_reads_the_rows_of_the_partitions_its_head_lists() -> None:
    folded = states(OffsetCommitted("g", "t", 0, 1))
    view = group_offsets(folded, "g")
    assert view is not None and len(view) == 1
    assert group_offsets(folded, "other") is None
    assert offset_key("t", 0, "g") in folded


def test_the_rows_on_deleted_topics_are_found_whatever_the_group_and_only_theirs() -> None:
    commits = (OffsetCommitted("g", "t", 0, 1), OffsetCommitted("a/b", "t", 11, 2), OffsetCommitted("g", "t2", 0, 3),
               OffsetCommitted("t", "u", 0, 4))
    folded = states(*commits)
    rows = rows_on_topics(folded.items(), ["t"])
    assert sorted(key for key, _ in rows) == ["t/0/g", "t/11/a/b"]
    assert sorted(map(row_deletion, (key for key, _ in rows)), key=str) == sorted(
        [OffsetDeleted("g", "t", 0), OffsetDeleted("a/b", "t", 11)], key=str)
    assert rows_on_topics(folded.items(), []) == []
    assert rows_on_topics(folded.items(), ["g", "a", "b"]) == [], "a group's name is no topic"
    after = states(*commits, *(row_deletion(key) for key, _ in rows))
    assert listed(group_offsets(after, "g")) == [("t2", 0, CommittedOffset(3))]
    emptied = group_offsets(after, "a/b")
    assert emptied is not None and len(emptied) == 0, "the group stays, Empty, until its expiry"


def test_the_topics_with_offsets_are_named_by_the_rows_not_the_heads() -> None:
    folded = states(OffsetCommitted("g", "t", 0, 5), OffsetCommitted("#g", "u.v-w", 3, 5),
                    OffsetCommitted("h", "t", 1, 5))
    assert topics_with_offsets(folded) == {"t", "u.v-w"}
    assert topics_with_offsets({}) == set()
