"""Committed group offsets folded from OffsetCommitted / OffsetDeleted / GroupDeleted."""

from __future__ import annotations

from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted, RecordsAppended
from logwright.core.groups.group_offsets import GROUP_OFFSETS, CommittedOffset, GroupOffsets, group_key
from logwright.core.projection import fold


def offsets(*events: Event, group: str = "g") -> GroupOffsets | None:
    return fold(GROUP_OFFSETS, events).get(group_key(group))


def test_a_commit_records_offset_epoch_metadata_and_time() -> None:
    state = offsets(OffsetCommitted("g", "t", 0, 42, leader_epoch=3, metadata="m", commit_time_ms=99))
    assert state == GroupOffsets((("t", 0, CommittedOffset(42, 3, "m", 99)),))
    assert state.get("t", 0) == CommittedOffset(42, 3, "m", 99)
    assert state.get("t", 1) is None


def test_a_later_commit_replaces_the_earlier_one_even_when_lower() -> None:
    state = offsets(OffsetCommitted("g", "t", 0, 42), OffsetCommitted("g", "t", 0, 7))
    assert state is not None and state.get("t", 0) == CommittedOffset(7)


def test_offsets_are_kept_sorted_by_topic_and_partition() -> None:
    state = offsets(OffsetCommitted("g", "b", 1, 1), OffsetCommitted("g", "a", 2, 2), OffsetCommitted("g", "b", 0, 3),
                    OffsetCommitted("g", "a", 10, 4))
    assert state is not None
    assert [(topic, partition) for topic, partition, _ in state.offsets] == [("a", 2), ("a", 10), ("b", 0), ("b", 1)]


def test_groups_are_separate_entities() -> None:
    states = fold(GROUP_OFFSETS, [OffsetCommitted("g1", "t", 0, 1), OffsetCommitted("g2", "t", 0, 2)])
    assert states == {"g1": GroupOffsets((("t", 0, CommittedOffset(1)),)),
                      "g2": GroupOffsets((("t", 0, CommittedOffset(2)),))}


def test_offset_deleted_removes_one_partition_and_the_group_with_its_last() -> None:
    commits = (OffsetCommitted("g", "t", 0, 1), OffsetCommitted("g", "t", 1, 2))
    assert offsets(*commits, OffsetDeleted("g", "t", 0)) == GroupOffsets((("t", 1, CommittedOffset(2)),))
    assert offsets(*commits, OffsetDeleted("g", "t", 0), OffsetDeleted("g", "t", 1)) is None


def test_deleting_what_was_never_committed_changes_nothing() -> None:
    assert offsets(OffsetDeleted("g", "t", 0)) is None
    assert offsets(OffsetCommitted("g", "t", 0, 1), OffsetDeleted("g", "u", 0)) == GroupOffsets(
        (("t", 0, CommittedOffset(1)),)
    )


def test_group_deleted_drops_every_offset_and_a_new_commit_starts_afresh() -> None:
    assert offsets(OffsetCommitted("g", "t", 0, 1), GroupDeleted("g")) is None
    assert offsets(OffsetCommitted("g", "t", 0, 1), GroupDeleted("g"), OffsetCommitted("g", "u", 3, 9)) == (
        GroupOffsets((("u", 3, CommittedOffset(9)),))
    )


def test_events_outside_group_offsets_touch_no_entity() -> None:
    assert GROUP_OFFSETS.entity_keys(RecordsAppended(0, 0, 1, 1, 1)) == ()


def test_a_commit_leaves_the_earlier_state_as_it_was() -> None:
    before = offsets(OffsetCommitted("g", "t", 0, 1), OffsetCommitted("g", "t", 1, 2))
    assert before is not None
    after = before.with_offset("t", 0, CommittedOffset(9)).with_offset("t", 2, CommittedOffset(3))
    assert [(p, c.offset) for _, p, c in before.offsets] == [(0, 1), (1, 2)]
    assert [(p, c.offset) for _, p, c in after.offsets] == [(0, 9), (1, 2), (2, 3)]
    assert before.with_offset("t", 5, None) == before, "removing what is not there changes nothing"
