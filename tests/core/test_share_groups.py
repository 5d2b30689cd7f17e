"""Share groups, share sessions and acknowledgement batches: given events, when a command runs, then these events."""

from __future__ import annotations

import pytest
from logwright.core.cursors import cursor_commands
from logwright.core.cursors.cursor import CURSORS, CursorState, cursor_key
from logwright.core.cursors.cursor import evolve as cursor_evolve
from logwright.core.cursors.key_hash_ranges import HashRange
from logwright.core.cursors.subscription_mode import ModeConsumer, SubscriptionMode
from logwright.core.errors import (
    ConsumerBusy,
    FencedMemberEpoch,
    GroupMaxSizeReached,
    InvalidConfig,
    InvalidRecordState,
    InvalidRequest,
    InvalidShareSessionEpoch,
    NonEmptyGroup,
    ShareSessionNotFound,
    UnknownGroup,
    UnknownMember,
)
from logwright.core.events import Event
from logwright.core.events.cursors import (
    RecordsAcked,
    RecordsRejected,
    RecordsReleased,
    SubscriptionCreated,
    SubscriptionDeleted,
)
from logwright.core.events.share_groups import (
    ShareGroupDeleted,
    ShareMemberAssigned,
    ShareMemberJoined,
    ShareMemberLeft,
)
from logwright.core.projection import fold as fold_projection
from logwright.core.share_groups.share_acks import (
    ACCEPT,
    GAP,
    REJECT,
    RELEASE,
    RENEW,
    AckBatch,
    AckLimits,
    by_type,
    decide,
    last_handed_out,
)
from logwright.core.share_groups.share_groups import (
    SHARE_GROUP_MAX_SIZE,
    SHARE_GROUPS,
    ConsumerOptions,
    ShareGroupState,
    ShareHeartbeat,
    ShareMember,
    check_mode_change,
    delete,
    evolve,
    heartbeat,
)
from logwright.core.share_groups.share_sessions import MAX_EPOCH, advance, round_order, served
from logwright.plugins.exclusive import ExclusiveMode
from logwright.plugins.failover import FailoverMode
from logwright.plugins.shared import SharedMode

SHARED = SharedMode()
TOPICS = {"orders": (b"o" * 16, 3), "audit": (b"a" * 16, 1)}


def lookup(name: str) -> tuple[bytes, int] | None:
    return TOPICS.get(name)


class Group:
    def __init__(self, mode: SubscriptionMode = SHARED, max_size: int = SHARE_GROUP_MAX_SIZE) -> None:
        self.log: list[Event] = []
        self.mode = mode
        self.max_size = max_size

    @property
    def state(self) -> ShareGroupState | None:
        state = fold_projection(SHARE_GROUPS, self.log).get("g")
        return state if isinstance(state, ShareGroupState) else None

    def beat(self, member: str, epoch: int, topics: tuple[str, ...] | None = None) -> list[Event]:
        command = ShareHeartbeat("g", member, epoch, None, topics, "client", "/127.0.0.1")
        _, events = heartbeat(self.state, command, lookup, self.mode, self.max_size)
        self.log.extend(events)
        return events


def test_join_assigns_every_partition_of_the_subscribed_topics_to_every_member() -> None:
    group = Group()
    group.beat("a", 0, ("orders",))
    group.beat("b", 0, ("orders", "missing"))
    state = group.state
    assert state is not None
    for member_id in ("a", "b"):
        member = state.member(member_id)
        assert member is not None and member.assignment == (("orders", b"o" * 16, (0, 1, 2)),)
    a, b = state.member("a"), state.member("b")
    assert a is not None and b is not None and 0 < a.member_epoch < b.member_epoch <= state.group_epoch


def test_a_steady_heartbeat_changes_nothing_and_a_new_subscription_bumps_the_epoch() -> None:
    group = Group()
    group.beat("a", 0, ("orders",))
    epoch = group.state.member("a").member_epoch  # type: ignore[union-attr]
    assert group.beat("a", epoch) == []
    events = group.beat("a", epoch, ("orders", "audit"))
    assigned = [e for e in events if isinstance(e, ShareMemberAssigned)]
    assert assigned and assigned[0].member_epoch > epoch
    assert [name for name, _, _ in assigned[0].assignment] == ["audit", "orders"]


def test_stale_or_future_epochs_are_fenced_and_unknown_members_refused() -> None:
    group = Group()
    group.beat("a", 0, ("orders",))
    stale = group.state.member("a").member_epoch  # type: ignore[union-attr]
    group.beat("a", stale, ("orders", "audit"))
    epoch = group.state.member("a").member_epoch  # type: ignore[union-attr]
    assert epoch > stale > 0
    for wrong in (stale, epoch + 1):
        with pytest.raises(FencedMemberEpoch):
            group.beat("a", wrong)
    with pytest.raises(UnknownMember):
        group.beat("nobody", 3)
    with pytest.raises(InvalidRequest):
        group.beat("c", 0, None)


def test_a_full_group_refuses_members_it_does_not_know_whatever_their_epoch() -> None:
    """group.share.max.size as Kafka 4.4 applies it (tests/integration/test_group_max_size.py runs on both)."""
    group = Group(max_size=2)
    group.beat("a", 0, ("orders",))
    group.beat("b", 0, ("orders",))
    before = list(group.log)
    for epoch in (0, 3):
        with pytest.raises(GroupMaxSizeReached, match="maximum capacity of 2 members"):
            group.beat("c", epoch, ("orders",) if epoch == 0 else None)
    with pytest.raises(InvalidRequest):  # the request's own checks come first
        group.beat("c", 0, ())
    assert group.log == before
    group.beat("a", 0, ("orders",))
    with pytest.raises(UnknownMember):  # a leave is not a join
        group.beat("c", -1)
    group.beat("b", -1)
    assert isinstance(group.beat("c", 0, ("orders",))[0], ShareMemberJoined)


def test_leave_removes_the_member_and_rejoin_starts_over() -> None:
    group = Group()
    group.beat("a", 0, ("orders",))
    assert isinstance(group.beat("a", -1)[0], ShareMemberLeft)
    state = group.state
    assert state is not None and state.members == () and state.phase == "Empty"
    with pytest.raises(UnknownMember):
        group.beat("a", -1)
    events = group.beat("a", 0, ("audit",))
    assert isinstance(events[0], ShareMemberJoined) and events[0].member_id == "a"


def test_heartbeats_are_refused_as_kafka_refuses_them() -> None:
    """v1 clients name themselves; an epoch below -1 means nothing; only a join may find no group (Kafka 4.4's
    answers: tests/integration/test_share_group_heartbeat_errors.py)."""
    group = Group()
    with pytest.raises(InvalidRequest, match="non-empty member id"):
        group.beat("", 0, ("orders",))
    with pytest.raises(InvalidRequest, match="epoch -2 is not valid"):
        group.beat("a", -2, ("orders",))
    for epoch in (-1, 3):
        with pytest.raises(UnknownGroup, match="does not exist; join with epoch 0"):
            group.beat("a", epoch)
    assert group.state is None


def test_the_subscription_mode_decides_who_joins_and_what_each_member_is_assigned() -> None:
    exclusive = Group(ExclusiveMode())
    exclusive.beat("a", 0, ("orders",))
    with pytest.raises(ConsumerBusy):
        exclusive.beat("b", 0, ("orders",))
    failover = Group(FailoverMode())
    failover.beat("a", 0, ("orders",))
    failover.beat("b", 0, ("orders",))
    state = failover.state
    assert state is not None and state.membership is not None
    assert [c.consumer_id for c in state.membership.consumers] == ["a", "b"]
    a = state.member("a")
    assert a is not None
    failover.beat("a", a.member_epoch)  # a's next heartbeat catches up with b's arrival
    state = failover.state
    assert state is not None
    parts = [set(m.assignment[0][2]) if m.assignment else set() for m in state.members]
    assert parts[0].isdisjoint(parts[1]) and parts[0] | parts[1] == {0, 1, 2}
    failover.beat("b", -1)
    state = failover.state
    assert state is not None and state.membership is not None
    assert [c.consumer_id for c in state.membership.consumers] == ["a"]


def test_declared_consumer_options_reach_the_mode_at_join_and_default_to_the_client_id() -> None:
    failover = Group(FailoverMode())
    options = ConsumerOptions(name="zeta", priority=1, hash_ranges=(HashRange(0, 99),), max_in_flight=7)
    command = ShareHeartbeat("g", "m1", 0, None, ("orders",), "client", "/127.0.0.1", options)
    _, events = heartbeat(failover.state, command, lookup, failover.mode)
    failover.log.extend(events)
    failover.beat("m2", 0, ("orders",))
    state = failover.state
    assert state is not None and state.membership is not None
    assert state.membership.consumers == (ModeConsumer("m1", "zeta", 1, (HashRange(0, 99),), 7),
                                          ModeConsumer("m2", "client"))
    m1 = state.member("m1")
    assert m1 is not None
    failover.beat("m1", m1.member_epoch)
    state = failover.state
    assert state is not None
    # priority 0 beats 1: m2 is active on every partition, m1 stands by
    assert [(m.member_id, m.assignment) for m in state.members] == [("m1", ()),
                                                                    ("m2", (("orders", b"o" * 16, (0, 1, 2)),))]


def test_share_session_epochs() -> None:
    session, partitions = advance(None, "g", "m", 0, [(b"t", 0), (b"t", 1)], [])
    assert session is not None and session.next_epoch == 1 and partitions == ((b"t", 0), (b"t", 1))
    with pytest.raises(InvalidShareSessionEpoch):
        advance(session, "g", "m", 2, [], [])
    session, partitions = advance(session, "g", "m", 1, [(b"u", 0)], [(b"t", 0)])
    assert session is not None and session.next_epoch == 2 and partitions == ((b"t", 1), (b"u", 0))
    closed, last = advance(session, "g", "m", -1, [], [])
    assert closed is None and last == ((b"t", 1), (b"u", 0))
    with pytest.raises(ShareSessionNotFound):
        advance(None, "g", "m", 5, [], [])
    wrapped, _ = advance(session.__class__("g", "m", MAX_EPOCH, ()), "g", "m", MAX_EPOCH, [], [])
    assert wrapped is not None and wrapped.next_epoch == 1


def test_a_session_keeps_only_partitions_that_exist_and_answers_the_others_once() -> None:
    """A session opened with 100,000 made-up partitions made every later 60-byte ShareFetch answer all of them
    again (0.4 s and 5 MB each): they are answered by the request that names them, and not kept."""
    real = {(b"t", 0), (b"t", 1)}
    made_up = [(b"x", n) for n in range(1_000)]
    session, covered = advance(None, "g", "m", 0, [(b"t", 0), *made_up, (b"t", 0)], [], real.__contains__)
    assert session is not None and session.partitions == ((b"t", 0),)
    assert covered == ((b"t", 0), *made_up), "each answered once, by the request naming it"
    again, covered = advance(session, "g", "m", 1, [], [], real.__contains__)
    assert again is not None and covered == ((b"t", 0),) and again.partitions is session.partitions
    added, covered = advance(again, "g", "m", 2, [(b"t", 1), (b"y", 0)], [(b"t", 0)], real.__contains__)
    assert added is not None and added.partitions == ((b"t", 1),) and covered == ((b"t", 1), (b"y", 0))
    forgot, covered = advance(added, "g", "m", 3, [(b"t", 0), (b"z", 0)], [(b"t", 0), (b"t", 1)], real.__contains__)
    assert forgot is not None and forgot.partitions == () and covered == ((b"z", 0),), "a partition forgotten: not"


def test_acquisition_rounds_start_after_the_last_partition_served() -> None:
    """A fetch whose budget one backlogged partition fills must not starve the partitions after it: the next
    round starts after the partition served last, whatever other requests came in between (the session
    epoch moves on with ShareAcknowledge too, so neither it nor a correlation id is a fair rotation)."""
    refs = ((b"t", 0), (b"t", 1), (b"t", 2), (b"u", 0))
    session, partitions = advance(None, "g", "m", 0, refs, [])
    assert session is not None and round_order(session, partitions) == refs
    session = served(session, (b"t", 0))
    assert round_order(session, partitions) == ((b"t", 1), (b"t", 2), (b"u", 0), (b"t", 0))
    session, partitions = advance(session, "g", "m", 1, [], [])
    assert session is not None and round_order(session, partitions)[0] == (b"t", 1)
    visited = []
    for _ in range(4):
        first = round_order(session, partitions)[0]
        visited.append(first)
        session = served(session, first)
    assert visited == [(b"t", 1), (b"t", 2), (b"u", 0), (b"t", 0)]
    assert served(session, (b"v", 9)) == session
    assert round_order(None, partitions) == partitions


def cursor_with_deliveries() -> CursorState:
    log: list[Event] = [SubscriptionCreated("g", 1, "t", 0)]
    state = fold_projection(CURSORS, log)[cursor_key("g", 1)]
    acquired = cursor_commands.acquire(state, 0, 10, "m", 10, 1_000, 30_000)
    assert acquired is not None
    log.append(acquired)
    return fold_projection(CURSORS, log)[cursor_key("g", 1)]


LIMITS = AckLimits(delivery_count_limit=5, lock_duration_ms=30_000, renew_allowed=False)


def test_ack_batches_map_to_cursor_commands_per_type_and_per_offset() -> None:
    state = cursor_with_deliveries()
    events = decide(state, "m", [AckBatch(0, 3, (ACCEPT,)), AckBatch(4, 6, (GAP, RELEASE, REJECT))], 2_000, LIMITS)
    acked = [e for e in events if isinstance(e, RecordsAcked)]
    assert sorted(r for e in acked for r in e.ranges) == [(0, 3), (4, 4)]
    assert [e.ranges for e in events if isinstance(e, RecordsReleased)] == [((5, 5),)]
    assert [e.ranges for e in events if isinstance(e, RecordsRejected)] == [((6, 6),)]


def test_wrong_state_and_malformed_acks_are_refused_whole() -> None:
    state = cursor_with_deliveries()
    with pytest.raises(InvalidRecordState):
        decide(state, "other", [AckBatch(0, 0, (ACCEPT,))], 2_000, LIMITS)
    with pytest.raises(InvalidRecordState):
        decide(state, "m", [AckBatch(8, 12, (ACCEPT,))], 2_000, LIMITS)
    with pytest.raises(InvalidRequest):
        decide(state, "m", [AckBatch(0, 3, (ACCEPT, ACCEPT))], 2_000, LIMITS)
    with pytest.raises(InvalidRequest):
        decide(state, "m", [AckBatch(0, 3, (ACCEPT,)), AckBatch(3, 4, (REJECT,))], 2_000, LIMITS)
    with pytest.raises(InvalidRequest):
        decide(state, "m", [AckBatch(0, 0, (RENEW,))], 2_000, LIMITS)
    renewed = decide(state, "m", [AckBatch(0, 0, (RENEW,))], 2_000,
                     AckLimits(5, 30_000, renew_allowed=True))
    assert len(renewed) == 1 and renewed[0].lock_deadline_ms == 32_000  # type: ignore[attr-defined]
    with pytest.raises(InvalidRecordState, match="not enabled"):  # share.renew.acknowledge.enable=false
        decide(state, "m", [AckBatch(0, 0, (RENEW,))], 2_000, AckLimits(5, 30_000, renew_allowed=True,
                                                                          renew_enabled=False))


def test_the_kafka_protocol_refuses_offsets_never_handed_out_as_an_invalid_request() -> None:
    """Past the last offset handed out: INVALID_REQUEST on the Kafka protocol, as on Kafka 4.4
    (tests/integration/test_share_ack_offsets.py); INVALID_RECORD_STATE on logwright's own keys. Settled offsets
    below the start offset stay INVALID_RECORD_STATE on both (Kafka skips them: a stale ack must not succeed)."""
    held = cursor_with_deliveries()  # 0-9 held by m
    state = cursor_evolve(held, cursor_commands.acknowledge(held, "m", ((0, 3),)), cursor_key("g", 1))  # start 4
    assert isinstance(state, CursorState) and state.mark_delete_position == 3
    assert last_handed_out(state) == 9
    kafka = AckLimits(5, 30_000, renew_allowed=False, kafka_offsets=True)
    for limits in (kafka, LIMITS):
        with pytest.raises(InvalidRecordState):
            decide(state, "m", [AckBatch(2, 5, (ACCEPT,))], 2_000, limits)
        assert decide(state, "m", [AckBatch(4, 9, (ACCEPT,))], 2_000, limits) != []
    with pytest.raises(InvalidRequest, match="reaches past offset 9"):
        decide(state, "m", [AckBatch(5, 6, (ACCEPT,)), AckBatch(8, 12, (ACCEPT,))], 2_000, kafka)
    with pytest.raises(InvalidRecordState):
        decide(state, "m", [AckBatch(8, 12, (ACCEPT,))], 2_000, LIMITS)


def test_only_an_empty_share_group_is_deleted_and_its_cursors_with_it() -> None:
    with pytest.raises(UnknownGroup, match="'g' does not exist"):
        delete(None, "g", ())
    busy = ShareGroupState("g", 3, (ShareMember("m", "c", "/h", None, ("t",)),))
    with pytest.raises(NonEmptyGroup, match="still has 1 members"):
        delete(busy, "g", (7,))
    empty = ShareGroupState("g", 4)
    events = delete(empty, "g", (9, 7))
    assert events == [SubscriptionDeleted("g", 7), SubscriptionDeleted("g", 9), ShareGroupDeleted("g", "")]
    assert evolve(empty, events[-1], "g") is None
    assert ShareGroupDeleted in SHARE_GROUPS.handles


def test_the_subscription_mode_changes_only_while_nobody_is_a_member() -> None:
    busy = ShareGroupState("g", 3, (ShareMember("m", "c", "/h", None, ("t",)),))
    check_mode_change(busy, "g", "failover", "failover")
    check_mode_change(ShareGroupState("g", 4), "g", "failover", "shared")
    check_mode_change(None, "g", "failover", "shared")
    with pytest.raises(InvalidConfig, match="is 'failover' and it has 1 members: it cannot become 'shared'"):
        check_mode_change(busy, "g", "failover", "shared")


def test_acknowledgement_batches_as_wide_as_int64_are_checked_not_counted() -> None:
    """[0, 2**63-1] holds more offsets than an index may count: overlap is found by comparing ranges."""
    wide = AckBatch(0, 2**63 - 1, (ACCEPT,))
    assert by_type([wide], renew_allowed=False) == {ACCEPT: [(0, 2**63 - 1)]}
    with pytest.raises(InvalidRequest, match="overlap"):
        by_type([wide, AckBatch(2**63 - 1, 2**63 - 1, (REJECT,))], renew_allowed=False)
    assert by_type([AckBatch(0, 4, (ACCEPT,)), AckBatch(5, 5, (REJECT,))], renew_allowed=False) == {
        ACCEPT: [(0, 4)], REJECT: [(5, 5)]}
