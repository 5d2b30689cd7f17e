"""Committed offsets' expiry and the removal of empty groups, decided for one group (`core.groups.offset_expiry`):
Kafka 4.4's expiry condition per kind of group, its base times, subscriptions and open transactions."""

from __future__ import annotations

from typing import Any

from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState, ConsumerMember
from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted
from logwright.core.groups.group_offsets import GROUP_OFFSETS, GroupOffsets, group_offsets
from logwright.core.groups.groups import GroupMember, GroupPhase, GroupState
from logwright.core.groups.offset_expiry import Cleanup, cleanup
from logwright.core.projection import fold

DAY = 86_400_000
RETENTION = 7 * DAY


def offsets(*commits: OffsetCommitted) -> GroupOffsets | None:
    states: dict[str, Any] = fold(GROUP_OFFSETS, commits)
    return group_offsets(states, "g")


def commit(topic: str, partition: int, at_ms: int, expire_time_ms: int = -1) -> OffsetCommitted:
    return OffsetCommitted("g", topic, partition, 10, commit_time_ms=at_ms, expire_time_ms=expire_time_ms)


def run(now_ms: int, *commits: OffsetCommitted, classic: GroupState | None = None,
        consumer: ConsumerGroupState | None = None, subscriptions: frozenset[str] | None = None,
        pending: frozenset[tuple[str, int]] = frozenset()) -> Cleanup:
    return cleanup("g", classic, consumer, offsets(*commits) if commits else None, subscriptions, pending, now_ms,
                   RETENTION)


def expired(*partitions: tuple[str, int]) -> tuple[Event, ...]:
    return tuple(OffsetDeleted("g", topic, partition) for topic, partition in partitions)


MEMBER = GroupMember("m", None, "c", "/h", 10_000, 30_000, (("range", b""),))


def test_a_simple_groups_offset_expires_retention_after_its_commit_and_not_a_millisecond_before() -> None:
    old, young = commit("t", 0, 1_000), commit("t", 1, 5_000)
    assert run(1_000 + RETENTION - 1, old, young) == Cleanup((), False)
    assert run(1_000 + RETENTION, old, young) == Cleanup(expired(("t", 0)), False)
    assert run(5_000 + RETENTION, old, young) == Cleanup((GroupDeleted("g", (("t", 0), ("t", 1))),), True), \
        "the last offsets expire with the group, in one event"


def test_an_explicit_retention_wins_over_the_brokers() -> None:
    short, long = commit("t", 0, 1_000, expire_time_ms=2_000), commit("t", 1, 1_000, expire_time_ms=3 * RETENTION)
    assert run(1_999, short, long) == Cleanup((), False)
    assert run(2_000, short, long) == Cleanup(expired(("t", 0)), False)
    assert run(1_000 + RETENTION, short, long).events == expired(("t", 0)), "its own retention keeps it longer"


def test_an_empty_classic_group_counts_from_when_it_became_empty() -> None:
    group = GroupState("g", GroupPhase.EMPTY, 3, "consumer", "range", empty_since_ms=DAY)
    old = commit("t", 0, 0)
    assert run(DAY + RETENTION - 1, old, classic=group) == Cleanup((), False)
    assert run(DAY + RETENTION, old, classic=group).deleted
    unknown = GroupState("g", GroupPhase.EMPTY, 3, "consumer", "range")  # a log written before kept no time
    assert run(RETENTION, old, classic=unknown).deleted, "then from the commit, as Kafka without a state timestamp"


def test_a_classic_group_with_members_keeps_its_offsets_unless_a_stable_consumer_group_knows_its_topics() -> None:
    members = (MEMBER,)
    old = (commit("t", 0, 0), commit("u", 0, 0))
    later = 10 * RETENTION
    for phase in (GroupPhase.PREPARING_REBALANCE, GroupPhase.COMPLETING_REBALANCE):
        assert run(later, *old, classic=GroupState("g", phase, 1, "consumer", "range", "m", members),
                   subscriptions=frozenset({"t"})) == Cleanup((), False)
    connect = GroupState("g", GroupPhase.STABLE, 1, "connect", "default", "m", members)
    assert run(later, *old, classic=connect) == Cleanup((), False)
    stable = GroupState("g", GroupPhase.STABLE, 1, "consumer", "range", "m", members)
    assert run(later, *old, classic=stable, subscriptions=None) == Cleanup((), False), "subscriptions unread"
    assert run(later, *old, classic=stable, subscriptions=frozenset({"t"})) == Cleanup(expired(("u", 0)), False)
    assert run(later, classic=stable, subscriptions=frozenset()) == Cleanup((), False), "members: it stays"


def test_an_empty_group_without_offsets_goes_at_once() -> None:
    assert run(0, classic=GroupState("g", GroupPhase.EMPTY, 2, "consumer", "range")).deleted
    assert run(0, consumer=ConsumerGroupState("g", group_epoch=4)).deleted
    emptied: dict[str, Any] = fold(GROUP_OFFSETS, (commit("t", 0, 0), OffsetDeleted("g", "t", 0)))
    assert cleanup("g", None, None, group_offsets(emptied, "g"), None, (), 0, RETENTION) == Cleanup(
        (GroupDeleted("g", ()),), True), "a group of offsets whose last offset was deleted"
    assert run(0) == Cleanup((), False), "no group at all"


def test_a_consumer_group_expires_the_topics_no_member_subscribes_to_from_their_commits() -> None:
    member = ConsumerMember("m", None, None, "c", "/h", 30_000, None, ("t",), None)
    group = ConsumerGroupState("g", 2, 2, subscription_metadata=(("t", b"\0" * 16, 1),), members=(member,))
    old = (commit("t", 0, 0), commit("u", 0, 0))
    assert run(RETENTION, *old, consumer=group) == Cleanup(expired(("u", 0)), False)
    assert run(RETENTION, *old, consumer=ConsumerGroupState("g", 2, 2)) == Cleanup(
        (GroupDeleted("g", (("t", 0), ("u", 0))),), True)


def test_an_open_transactions_offsets_keep_their_partition_and_the_group() -> None:
    old = (commit("t", 0, 0), commit("t", 1, 0))
    assert run(RETENTION, *old, pending=frozenset({("t", 1)})) == Cleanup(expired(("t", 0)), False)
    assert run(RETENTION, classic=GroupState("g"), pending=frozenset({("t", 1)})) == Cleanup((), False)
