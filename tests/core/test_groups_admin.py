"""Who may commit offsets, and deleting or listing groups: pure decisions over group state and offsets."""

from __future__ import annotations

import pytest
from logwright.core.errors import (
    CommitToNoGroup,
    GroupSubscribedToTopic,
    IllegalGeneration,
    NonEmptyGroup,
    OffsetMetadataTooLarge,
    RebalanceInProgress,
    UnknownGroup,
    UnknownMember,
)
from logwright.core.events import GroupDeleted, OffsetCommitted, OffsetDeleted
from logwright.core.groups.group_admin import (
    check_offset_commit,
    check_offset_metadata,
    decide_delete_group,
    decide_offset_delete,
    list_groups,
)
from logwright.core.groups.group_offsets import GROUP_OFFSETS, group_offsets
from logwright.core.groups.groups import GroupMember, GroupPhase, GroupState
from logwright.core.projection import fold

MEMBER = GroupMember("m1", None, "c", "h", 10_000, 30_000, (("range", b""),))
STABLE = GroupState("g", GroupPhase.STABLE, 3, "consumer", "range", "m1", (MEMBER,))
OFFSETS = group_offsets(fold(GROUP_OFFSETS, [OffsetCommitted("g", "t", 0, 5), OffsetCommitted("g", "u", 1, 7)]),
                        "g")


def test_members_commit_with_their_current_generation() -> None:
    assert check_offset_commit("g", STABLE, False, 3, "m1", None) == MEMBER
    with pytest.raises(IllegalGeneration):
        check_offset_commit("g", STABLE, False, 2, "m1", None)
    with pytest.raises(IllegalGeneration):
        check_offset_commit("g", STABLE, False, -1, "m1", None)
    with pytest.raises(UnknownMember):
        check_offset_commit("g", STABLE, False, 3, "m2", None)
    with pytest.raises(UnknownMember):
        check_offset_commit("g", STABLE, False, -1, "", None)
    with pytest.raises(UnknownMember):  # no member holds that group.instance.id
        check_offset_commit("g", STABLE, False, 3, "m1", "instance-1")
    completing = GroupState("g", GroupPhase.COMPLETING_REBALANCE, 3, "consumer", "range", "m1", (MEMBER,))
    with pytest.raises(RebalanceInProgress):
        check_offset_commit("g", completing, False, 3, "m1", None)


def test_simple_commits_need_a_group_without_members() -> None:
    assert check_offset_commit("g", None, False, -1, "", None) is None
    assert check_offset_commit("g", None, False, -1, "any-member-id", None) is None
    assert check_offset_commit("g", GroupState("g", GroupPhase.EMPTY, 4, "consumer"), False, -1, "x", None) is None
    assert check_offset_commit("g", None, True, -1, "", None) is None
    check_offset_metadata("x" * 4096)
    with pytest.raises(OffsetMetadataTooLarge):
        check_offset_metadata("x" * 4097)


def test_offset_metadata_is_measured_in_javas_characters_not_bytes() -> None:
    """Kafka compares ``String.length()`` (UTF-16 code units) with ``offset.metadata.max.bytes``."""
    check_offset_metadata("é" * 4096)  # 8,192 bytes of UTF-8
    check_offset_metadata("\U0001F600" * 2048)  # outside the BMP: two units each
    with pytest.raises(OffsetMetadataTooLarge):
        check_offset_metadata("\U0001F600" * 2049)
    check_offset_metadata("x" * 10, 10)
    with pytest.raises(OffsetMetadataTooLarge):
        check_offset_metadata("é" * 11, 10)
    check_offset_metadata(None, -5)
    with pytest.raises(OffsetMetadataTooLarge):
        check_offset_metadata("", -1)  # a negative limit refuses even empty metadata, as Kafka's comparison does


def test_a_generation_names_no_group_that_does_not_exist() -> None:
    """Unknown group: CommitToNoGroup (an IllegalGeneration); a group of offsets only is an Empty classic group,
    where a named member is unknown (as Kafka 4.4 answers)."""
    with pytest.raises(CommitToNoGroup):
        check_offset_commit("g", None, False, 1, "m1", None)
    with pytest.raises(UnknownMember):
        check_offset_commit("g", None, True, 1, "m1", None)
    with pytest.raises(UnknownMember):
        check_offset_commit("g", None, True, 0, "", None)


def test_delete_group() -> None:
    assert decide_delete_group("g", None, OFFSETS) == GroupDeleted("g", (("t", 0), ("u", 1)))
    assert decide_delete_group("g", GroupState("g"), None) == GroupDeleted("g")
    with pytest.raises(NonEmptyGroup):
        decide_delete_group("g", STABLE, OFFSETS)
    with pytest.raises(UnknownGroup):
        decide_delete_group("g", None, None)


def test_offset_delete_spares_subscribed_topics() -> None:
    outcome = decide_offset_delete("g", STABLE, OFFSETS, [("t", 0), ("u", 1), ("v", 0)], frozenset({"t"}))
    assert outcome.events == (OffsetDeleted("g", "u", 1),)
    assert list(outcome.errors) == [("t", 0)] and isinstance(outcome.errors[("t", 0)], GroupSubscribedToTopic)
    with pytest.raises(NonEmptyGroup):
        decide_offset_delete("g", STABLE, OFFSETS, [("t", 0)], None)
    with pytest.raises(UnknownGroup):
        decide_offset_delete("g", None, None, [("t", 0)], None)
    assert decide_offset_delete("g", None, OFFSETS, [("t", 0)], None).events == (OffsetDeleted("g", "t", 0),)


def test_offset_delete_refuses_a_subscribed_topic_with_one_short_error_however_many_partitions() -> None:
    """Each partition's error named the topic in full: 30,000 partitions of a 32,767-character topic that a member
    subscribes to (a 153 KB request) held 951 MB."""
    topic = "x" * 32_767
    outcome = decide_offset_delete("g", STABLE, OFFSETS, [(topic, n) for n in range(30_000)], frozenset({topic}))
    errors = list(outcome.errors.values())
    assert len(errors) == 30_000 and all(error is errors[0] for error in errors)
    assert isinstance(errors[0], GroupSubscribedToTopic) and len(str(errors[0])) < 300


def test_listing_includes_offset_only_groups_as_empty() -> None:
    listed = list_groups([STABLE], ["g", "offsets-only"])
    assert [(entry.group_id, entry.protocol_type, entry.phase) for entry in listed] == [
        ("g", "consumer", "Stable"), ("offsets-only", "", "Empty")]
