"""The classic group coordinator, driven through `GroupSessions` on a ManualClock: no sockets, no sleeping."""

from __future__ import annotations

import itertools

import pytest
from logwright.core.clock import ManualClock
from logwright.core.errors import (
    FencedInstanceId,
    IllegalGeneration,
    InconsistentGroupProtocol,
    InvalidGroupId,
    InvalidSessionTimeout,
    MemberIdRequired,
    RebalanceInProgress,
    UnknownMember,
)
from logwright.core.events import (
    AssignmentsSynced,
    Event,
    GenerationStarted,
    MemberJoined,
    MemberLeft,
    MembersLeft,
    RebalanceStarted,
)
from logwright.core.groups.group_membership import GroupLimits, Heartbeat, JoinGroup, SyncGroup
from logwright.core.groups.group_sessions import GroupSessions, JoinReply, MemoryGroupStore, Reply, SyncReply
from logwright.core.groups.groups import GroupPhase, GroupState

RANGE = (("range", b"range-meta"),)


class Coordinator:
    """A GroupSessions over an in-memory store, with deterministic member ids."""

    def __init__(self, limits: GroupLimits | None = None, store: MemoryGroupStore | None = None,
                 clock: ManualClock | None = None) -> None:
        self.clock = clock or ManualClock()
        self.store = store or MemoryGroupStore()
        ids = itertools.count(1)
        self.sessions = GroupSessions(self.store, limits or GroupLimits(), self.clock.now_ms(),
                                      lambda prefix: f"{prefix}-{next(ids)}")

    def state(self, group: str = "g") -> GroupState:
        state = self.store.group(group)
        assert state is not None
        return state

    def join(self, member_id: str = "", *, group: str = "g", instance: str | None = None, protocols=RANGE,
             session_ms: int = 10_000, rebalance_ms: int = 30_000, protocol_type: str = "consumer",
             client_id: str = "c") -> tuple[str, list[Reply]]:
        command = JoinGroup(group, member_id, instance, client_id, "127.0.0.1", session_ms, rebalance_ms,
                            protocol_type, protocols)
        return self.sessions.join(command, self.clock.now_ms())

    def new_member(self, **kwargs) -> tuple[str, list[Reply]]:
        """The v4+ dance: MEMBER_ID_REQUIRED, then a rejoin with the given id."""
        with pytest.raises(MemberIdRequired) as required:
            self.join(**kwargs)
        return self.join(required.value.member_id, **kwargs)

    def sync(self, member_id: str, generation: int, assignments=(), group: str = "g") -> list[Reply]:
        return self.sessions.sync(SyncGroup(group, generation, member_id, assignments=assignments),
                                  self.clock.now_ms())

    def heartbeat(self, member_id: str, generation: int, instance: str | None = None) -> None:
        self.sessions.heartbeat(Heartbeat("g", generation, member_id, instance), self.clock.now_ms())


def only(replies: list[Reply], member_id: str) -> Reply:
    found = [reply for reply in replies if reply.member_id == member_id]
    assert len(found) == 1, replies
    return found[0]


def stable_pair(coordinator: Coordinator) -> tuple[str, str]:
    """Two members in a Stable group at generation 2: m1 leads, m2 follows."""
    m1, replies = coordinator.new_member()
    coordinator.sync(m1, 1, ((m1, b"a1"),))
    m2, replies = coordinator.new_member()
    assert replies == []
    coordinator.join(m1)
    assert coordinator.state().phase == GroupPhase.COMPLETING_REBALANCE
    assert coordinator.sync(m2, 2) == []
    replies = coordinator.sync(m1, 2, ((m1, b"a1"), (m2, b"a2")))
    assert only(replies, m2) == SyncReply("g", m2, "consumer", "range", b"a2")
    return m1, m2


def test_first_member_needs_an_id_then_leads_generation_one() -> None:
    coordinator = Coordinator()
    with pytest.raises(MemberIdRequired) as required:
        coordinator.join()
    member_id = required.value.member_id
    assert member_id.startswith("c-")
    assert coordinator.store.group("g") is None
    _, replies = coordinator.join(member_id)
    reply = only(replies, member_id)
    assert isinstance(reply, JoinReply)
    assert (reply.generation, reply.leader, reply.protocol_name) == (1, member_id, "range")
    assert reply.members == ((member_id, None, b"range-meta"),)
    replies = coordinator.sync(member_id, 1, ((member_id, b"assigned"),))
    assert only(replies, member_id) == SyncReply("g", member_id, "consumer", "range", b"assigned")
    assert coordinator.state().phase == GroupPhase.STABLE


def test_second_member_triggers_a_rebalance_the_leader_learns_by_heartbeat() -> None:
    coordinator = Coordinator()
    m1, _ = coordinator.new_member()
    coordinator.sync(m1, 1, ((m1, b"all"),))
    m2, replies = coordinator.new_member()
    assert replies == []
    assert coordinator.state().phase == GroupPhase.PREPARING_REBALANCE
    with pytest.raises(RebalanceInProgress):
        coordinator.heartbeat(m1, 1)
    _, replies = coordinator.join(m1)
    leader, follower = only(replies, m1), only(replies, m2)
    assert isinstance(leader, JoinReply) and isinstance(follower, JoinReply)
    assert leader.generation == follower.generation == 2
    assert [member_id for member_id, _, _ in leader.members] == [m1, m2]
    assert follower.members == () and follower.leader == m1


def test_followers_wait_for_the_leaders_assignments() -> None:
    coordinator = Coordinator()
    m1, m2 = stable_pair(coordinator)
    assert coordinator.state().phase == GroupPhase.STABLE
    assert coordinator.sync(m2, 2) == [SyncReply("g", m2, "consumer", "range", b"a2")]
    coordinator.heartbeat(m1, 2)
    with pytest.raises(IllegalGeneration):
        coordinator.heartbeat(m1, 1)
    with pytest.raises(IllegalGeneration):
        coordinator.sync(m2, 1)
    with pytest.raises(UnknownMember):
        coordinator.heartbeat("nobody", 2)


def test_an_expired_session_removes_the_member_and_rebalances() -> None:
    coordinator = Coordinator()
    m1, m2 = stable_pair(coordinator)
    for _ in range(3):
        coordinator.clock.advance(4_000)
        coordinator.heartbeat(m1, 2)
        assert coordinator.sessions.tick(coordinator.clock.now_ms()) == []
    assert coordinator.state().member(m2) is None
    assert coordinator.state().phase == GroupPhase.PREPARING_REBALANCE
    assert any(isinstance(e, MembersLeft) and e.member_ids == (m2,) and "session timeout of" in e.reason
               for e in coordinator.store.events)
    _, replies = coordinator.join(m1)
    reply = only(replies, m1)
    assert isinstance(reply, JoinReply) and reply.generation == 3 and len(reply.members) == 1


def test_members_that_do_not_rejoin_in_time_are_removed() -> None:
    coordinator = Coordinator()
    m1, m2 = stable_pair(coordinator)
    m3, replies = coordinator.new_member(rebalance_ms=20_000)
    assert replies == []
    coordinator.clock.advance(5_000)
    _, replies = coordinator.join(m1)
    assert replies == []
    coordinator.clock.advance(25_000)
    replies = coordinator.sessions.tick(coordinator.clock.now_ms())
    assert {reply.member_id for reply in replies} == {m1, m3}
    assert coordinator.state().member(m2) is None
    assert coordinator.state().generation == 3


def test_leaving_rebalances_and_the_last_leaver_empties_the_group() -> None:
    coordinator = Coordinator()
    m1, m2 = stable_pair(coordinator)
    outcomes, _ = coordinator.sessions.leave("g", [(m2, None), ("ghost", None)], coordinator.clock.now_ms())
    assert outcomes[0] is None and isinstance(outcomes[1], UnknownMember)
    assert coordinator.state().phase == GroupPhase.PREPARING_REBALANCE
    _, replies = coordinator.join(m1)
    assert isinstance(only(replies, m1), JoinReply)
    coordinator.sessions.leave("g", [(m1, None)], coordinator.clock.now_ms())
    state = coordinator.state()
    assert (state.phase, state.members, state.generation, state.protocol_type) == (GroupPhase.EMPTY, (), 4, "consumer")


def test_a_waiting_follower_is_told_when_a_new_member_arrives() -> None:
    coordinator = Coordinator()
    m1, _ = coordinator.new_member()
    coordinator.sync(m1, 1, ((m1, b""),))
    m2, _ = coordinator.new_member()
    coordinator.join(m1)
    assert coordinator.sync(m2, 2) == []
    _, replies = coordinator.new_member(client_id="third")
    reply = only(replies, m2)
    assert isinstance(reply, SyncReply) and isinstance(reply.error, RebalanceInProgress)


def test_protocol_selection_follows_the_members_votes() -> None:
    coordinator = Coordinator(GroupLimits(initial_rebalance_delay_ms=100))
    both = (("roundrobin", b"rr"), ("range", b"r"))
    reversed_ = (("range", b"r"), ("roundrobin", b"rr"))
    coordinator.new_member(protocols=both)
    coordinator.new_member(protocols=reversed_)
    m3, _ = coordinator.new_member(protocols=reversed_ + (("sticky", b"s"),))
    coordinator.clock.advance(100)
    replies = coordinator.sessions.tick(coordinator.clock.now_ms())
    assert len(replies) == 3 and {r.protocol_name for r in replies} == {"range"}
    with pytest.raises(InconsistentGroupProtocol):
        coordinator.join(protocols=(("sticky", b"s"),))
    with pytest.raises(InconsistentGroupProtocol):
        coordinator.join(protocols=RANGE, protocol_type="connect")
    leader = only(replies, coordinator.state().leader or "")
    assert isinstance(leader, JoinReply) and dict((m, meta) for m, _, meta in leader.members)[m3] == b"r"


def test_join_validation() -> None:
    coordinator = Coordinator()
    with pytest.raises(InvalidSessionTimeout):
        coordinator.join(session_ms=1_000)
    with pytest.raises(InvalidGroupId):
        coordinator.join(group="")
    with pytest.raises(UnknownMember):
        coordinator.join("made-up-id")


def test_initial_delay_gathers_members_into_one_generation() -> None:
    coordinator = Coordinator(GroupLimits(initial_rebalance_delay_ms=3_000))
    m1, replies = coordinator.new_member()
    assert replies == []
    coordinator.clock.advance(1_000)
    m2, replies = coordinator.new_member()
    assert replies == []
    coordinator.clock.advance(2_500)
    assert coordinator.sessions.tick(coordinator.clock.now_ms()) == []
    coordinator.clock.advance(500)
    replies = coordinator.sessions.tick(coordinator.clock.now_ms())
    assert {(reply.member_id, reply.generation) for reply in replies if isinstance(reply, JoinReply)} == {
        (m1, 1), (m2, 1)}


def test_an_initial_delay_longer_than_the_rebalance_timeout_ends_at_it() -> None:
    """A delay past the members' rebalance timeout would leave their joins unanswered: it ends at the deadline."""
    coordinator = Coordinator(GroupLimits(initial_rebalance_delay_ms=10**30))
    m1, replies = coordinator.new_member()
    assert replies == []
    coordinator.clock.advance(29_999)  # the member's rebalance timeout: 30 s
    assert coordinator.sessions.tick(coordinator.clock.now_ms()) == []
    coordinator.clock.advance(1)
    replies = coordinator.sessions.tick(coordinator.clock.now_ms())
    assert {(reply.member_id, reply.generation) for reply in replies if isinstance(reply, JoinReply)} == {(m1, 1)}


def test_static_member_rejoins_under_a_new_id_without_a_rebalance() -> None:
    coordinator = Coordinator()
    old_id, replies = coordinator.join(instance="worker-1")
    assert isinstance(only(replies, old_id), JoinReply)
    coordinator.sync(old_id, 1, ((old_id, b"mine"),))
    new_id, replies = coordinator.join(instance="worker-1")
    reply = only(replies, new_id)
    assert isinstance(reply, JoinReply)
    assert (reply.generation, reply.leader, reply.skip_assignment) == (1, new_id, True)
    assert coordinator.state().phase == GroupPhase.STABLE
    assert coordinator.state().member(new_id).assignment == b"mine"  # type: ignore[union-attr]
    with pytest.raises(FencedInstanceId):
        coordinator.heartbeat(old_id, 1, instance="worker-1")
    with pytest.raises(UnknownMember):
        coordinator.heartbeat(old_id, 1)
    coordinator.heartbeat(new_id, 1, instance="worker-1")


def test_static_member_that_misses_a_rebalance_stays_until_its_session_expires() -> None:
    coordinator = Coordinator()
    static_id, _ = coordinator.join(instance="s", session_ms=60_000, rebalance_ms=10_000)
    coordinator.sync(static_id, 1, ((static_id, b""),))
    dynamic_id, _ = coordinator.new_member(session_ms=60_000, rebalance_ms=10_000)
    coordinator.clock.advance(10_000)
    replies = coordinator.sessions.tick(coordinator.clock.now_ms())
    reply = only(replies, dynamic_id)
    assert isinstance(reply, JoinReply) and reply.leader == dynamic_id
    assert [m[0] for m in reply.members] == [static_id, dynamic_id]


def test_restart_refolds_the_same_state_and_restarts_sessions() -> None:
    coordinator = Coordinator()
    m1, m2 = stable_pair(coordinator)
    before = coordinator.state()
    clock = ManualClock(coordinator.clock.now_ms() + 60_000)
    restarted = Coordinator(store=MemoryGroupStore(coordinator.store.events), clock=clock)
    assert restarted.state() == before and before.phase == GroupPhase.STABLE
    assert restarted.sessions.tick(clock.now_ms()) == []
    clock.advance(5_000)
    restarted.heartbeat(m1, 2)
    clock.advance(5_000)
    restarted.sessions.tick(clock.now_ms())
    assert restarted.state().member(m2) is None and restarted.state().member(m1) is not None
    kinds = [type(event) for event in restarted.store.events[len(coordinator.store.events):]]
    assert kinds == [MembersLeft, RebalanceStarted]
    assert not any(isinstance(event, GenerationStarted) for event in kinds)


def test_a_groups_next_deadline_is_its_own_and_the_earliest_of_all_is_the_earliest_of_each() -> None:
    """A JoinGroup, SyncGroup or LeaveGroup asks only for its own group's next deadline (asking for every classic
    member of the broker at each grew with all of them); the timer still sleeps until the earliest of every group."""
    coordinator = Coordinator()
    for number, group in enumerate(("a", "b", "c")):
        coordinator.clock.advance(1_000)
        with pytest.raises(MemberIdRequired) as required:
            coordinator.join(group=group, session_ms=10_000 + number)
        member_id = required.value.member_id
        coordinator.join(member_id, group=group, session_ms=10_000 + number)
        coordinator.sessions.sync(SyncGroup(group, 1, member_id, assignments=((member_id, b"x"),)),
                                  coordinator.clock.now_ms())
    sessions = coordinator.sessions
    each = {group: sessions.next_deadline_ms(group) for group in ("a", "b", "c", "nobody")}
    assert each["nobody"] is None
    assert each["a"] is not None and each["b"] is not None and each["c"] is not None
    assert each["a"] < each["b"] < each["c"], each
    assert sessions.next_deadline_ms() == each["a"]

    class Unwalkable(dict):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[no-untyped-def]
            raise AssertionError("every group's sessions were walked for one group's deadline")

    sessions._sessions = Unwalkable(sessions._sessions)
    assert sessions.next_deadline_ms("b") == each["b"]


def big_stable_group(size: int, static_every: int = 0, session_ms=lambda number: 10_000) -> list[Event]:
    """The events of a Stable group of ``size`` members (``m-0``...), every ``static_every``-th one static."""
    joined = [MemberJoined("g", f"m-{number}", f"i-{number}" if static_every and number % static_every == 0 else None,
                           "c", "h", session_ms(number), 30_000, "consumer", RANGE) for number in range(size)]
    return [*joined, GenerationStarted("g", 1, "range", "m-0"),
            AssignmentsSynced("g", 1, tuple((f"m-{number}", b"") for number in range(size)))]


def test_a_leave_group_of_many_members_is_one_event_each_entry_decided_after_the_ones_before() -> None:
    """10,000 entries of a 10,000-member group were a removal each, each rebuilding the member tuple: quadratic
    (1.1 s in the fold alone). They leave in one event now, each entry answered as if the earlier ones had left."""
    size = 2_000
    events = big_stable_group(size, static_every=10)
    coordinator = Coordinator(store=MemoryGroupStore(events))
    entries: list[tuple[str, str | None]] = [(f"m-{number}", None) for number in range(1, size) if number % 10]
    plain = len(entries)
    entries += [("m-1", None), ("", "i-10"), ("m-10", None), ("", "i-10"), ("m-20", "i-30"), ("m-40", "i-40")]
    outcomes, _ = coordinator.sessions.leave("g", entries, coordinator.clock.now_ms())
    assert outcomes[:plain] == [None] * plain
    tail = outcomes[plain:]
    assert isinstance(tail[0], UnknownMember) and "m-1" in str(tail[0])
    assert tail[1] is None
    assert isinstance(tail[2], UnknownMember) and "m-10" in str(tail[2])
    assert isinstance(tail[3], UnknownMember) and "i-10" in str(tail[3])
    assert isinstance(tail[4], FencedInstanceId)
    assert tail[5] is None
    staged = coordinator.store.events[len(events):]
    assert [type(event) for event in staged] == [MembersLeft, RebalanceStarted]
    left = staged[0]
    assert isinstance(left, MembersLeft) and len(left.member_ids) == plain + 2
    staying = {member.member_id for member in coordinator.state().members}
    assert staying == {"m-0"} | {f"m-{number}" for number in range(20, size, 10) if number != 40}


def test_members_timing_out_together_leave_in_one_event() -> None:
    """A timer pass removed expired members one event (and one member tuple) each."""
    events = big_stable_group(1_000, session_ms=lambda number: 10_000 + number % 3 * 1_000)
    coordinator = Coordinator(store=MemoryGroupStore(events))
    coordinator.clock.advance(10_500)
    coordinator.sessions.tick(coordinator.clock.now_ms())
    first = coordinator.store.events[len(events):]
    assert [type(event) for event in first] == [MembersLeft, RebalanceStarted]
    assert isinstance(first[0], MembersLeft) and len(first[0].member_ids) == 334
    assert first[0].reason == "session timeout of 10000 ms expired"
    coordinator.clock.advance(5_000)
    coordinator.sessions.tick(coordinator.clock.now_ms())
    second = coordinator.store.events[len(events) + 2:]
    assert isinstance(second[0], MembersLeft) and len(second[0].member_ids) == 666
    assert second[0].reason == "session timeout of 11000-12000 ms expired"
    assert coordinator.state().members == ()


def test_members_that_do_not_rejoin_leave_in_one_event() -> None:
    events = big_stable_group(500)
    coordinator = Coordinator(store=MemoryGroupStore(events))
    coordinator.sessions.leave("g", [("m-499", None)], coordinator.clock.now_ms())
    _, replies = coordinator.join("m-0")
    assert replies == []
    coordinator.clock.advance(30_000)
    coordinator.sessions.tick(coordinator.clock.now_ms())
    left = [event for event in coordinator.store.events if isinstance(event, MembersLeft)]
    assert [len(event.member_ids) for event in left] == [1, 498]
    assert left[1].reason == "did not rejoin before the rebalance timeout"
    assert [member.member_id for member in coordinator.state().members] == ["m-0"]


def test_a_member_left_of_an_older_log_still_folds() -> None:
    """Logs written before `MembersLeft` hold one `MemberLeft` per member."""
    store = MemoryGroupStore([*big_stable_group(3), MemberLeft("g", "m-1", "the member left the group")])
    state = store.group("g")
    assert state is not None and [member.member_id for member in state.members] == ["m-0", "m-2"]
