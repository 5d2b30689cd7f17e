"""The group coordinator as a sans-I/O state machine: liveness, rebalance barriers and who gets which answer.

`GroupSessions` keeps what is not worth an event — session deadlines, rebalance deadlines, member ids
handed out with MEMBER_ID_REQUIRED, and which members are blocked in JoinGroup or SyncGroup — and
drives the pure decisions of `group_membership`, staging their events through a `GroupStore`. Every
call returns the replies now due to blocked members; the async layer only maps them to its waiting
requests and calls `tick` periodically. Time is always passed in, so tests run on a ManualClock.

After a restart the persisted groups come back as they were; every member's session deadline restarts
from ``started_ms`` (the broker's start), and a rebalance that was in progress gets a fresh timeout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from logwright.core.errors import (
    DomainError,
    FencedInstanceId,
    MemberIdRequired,
    RebalanceInProgress,
    UnknownMember,
    quoted,
)
from logwright.core.events import (
    AssignmentsSynced,
    Event,
    GenerationStarted,
    MemberJoined,
    MembersLeft,
    RebalanceStarted,
    StaticMemberReplaced,
)
from logwright.core.groups.group_membership import (
    GroupLimits,
    Heartbeat,
    JoinGroup,
    SyncGroup,
    check_group_id,
    check_not_rebalancing,
    decide_complete_join,
    decide_heartbeat,
    decide_join,
    decide_sync,
    leaving_member,
    removal_events,
)
from logwright.core.groups.group_store import GroupStore, MemoryGroupStore
from logwright.core.groups.groups import GroupMember, GroupPhase, GroupState

__all__ = ["GroupSessions", "GroupStore", "JoinReply", "MemoryGroupStore", "Reply", "SyncReply"]


@dataclass(frozen=True, slots=True)
class JoinReply:
    group_id: str
    member_id: str
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()
    """(member id, group instance id, metadata of the selected protocol): for the leader only."""
    skip_assignment: bool = False
    error: DomainError | None = None


@dataclass(frozen=True, slots=True)
class SyncReply:
    group_id: str
    member_id: str
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""
    error: DomainError | None = None


Reply = JoinReply | SyncReply


@dataclass(slots=True)
class _Rebalance:
    started_ms: int
    deadline_ms: int
    not_before_ms: int | None = None
    """Set while an empty group waits ``group.initial.rebalance.delay.ms`` for more members."""


class GroupSessions:
    """All classic groups of one broker. Not thread-safe: one event loop drives it."""

    def __init__(self, store: GroupStore, limits: GroupLimits, started_ms: int,
                 new_member_id: Callable[[str], str]) -> None:
        self.store = store
        self.limits = limits
        self._new_member_id = new_member_id
        self._sessions: dict[str, dict[str, int]] = {}
        self._pending: dict[str, dict[str, int]] = {}
        self._rebalances: dict[str, _Rebalance] = {}
        self._awaiting_join: dict[str, set[str]] = {}
        self._awaiting_sync: dict[str, set[str]] = {}
        for state in store.groups():
            self._sessions[state.group_id] = {m.member_id: started_ms + m.session_timeout_ms for m in state.members}
            if state.phase == GroupPhase.PREPARING_REBALANCE:
                self._rebalances[state.group_id] = _Rebalance(started_ms, started_ms + state.max_rebalance_timeout_ms())

    # -- requests ---------------------------------------------------------------------------------

    def join(self, command: JoinGroup, now_ms: int) -> tuple[str, list[Reply]]:
        """Returns the member id and the replies now due; the caller waits if its own reply is not among them."""
        group = command.group_id
        state = self.store.group(group)
        pending = self._pending.setdefault(group, {})
        new_id = self._new_member_id(command.group_instance_id or command.client_id) if not command.member_id else ""
        try:
            decision = decide_join(state, command, new_id, pending, self.limits)
        except MemberIdRequired as required:
            pending[required.member_id] = now_ms + command.session_timeout_ms
            raise
        member_id = decision.member_id
        pending.pop(member_id, None)
        replies: list[Reply] = []
        self._apply(group, decision.events, state, now_ms, replies)
        self._sessions.setdefault(group, {})[member_id] = now_ms + command.session_timeout_ms
        if decision.wait:
            self._awaiting_join.setdefault(group, set()).add(member_id)
            self._try_complete(group, now_ms, replies)
        else:
            current = self.store.group(group)
            assert current is not None
            skip = current.phase == GroupPhase.STABLE and current.leader == member_id
            replies.append(self._join_reply(current, member_id, skip_assignment=skip))
        self._settle(group, replies)
        return member_id, replies

    def sync(self, command: SyncGroup, now_ms: int) -> list[Reply]:
        group = command.group_id
        state = self.store.group(group)
        decision = decide_sync(state, command)
        assert state is not None
        self.touch(group, command.member_id, now_ms)
        replies: list[Reply] = []
        self._apply(group, decision.events, state, now_ms, replies)
        if decision.assignment is None:
            self._awaiting_sync.setdefault(group, set()).add(command.member_id)
        else:
            replies.append(SyncReply(group, command.member_id, state.protocol_type, state.protocol_name,
                                     decision.assignment))
        self._settle(group, replies)
        return replies

    def heartbeat(self, command: Heartbeat, now_ms: int) -> None:
        """Keeps the member alive; raises REBALANCE_IN_PROGRESS (after counting it) during a rebalance."""
        state = self.store.group(command.group_id)
        decide_heartbeat(state, command)
        assert state is not None
        self.touch(command.group_id, command.member_id, now_ms)
        check_not_rebalancing(state)

    def leave(self, group: str, members: Sequence[tuple[str, str | None]],
              now_ms: int) -> tuple[list[DomainError | None], list[Reply]]:
        """Remove (member id, group instance id) entries; one outcome per entry, and the replies due. Each entry is
        decided against the group less the members earlier entries remove, and they all leave in one event: a
        removal each rebuilt the member tuple, so 10,000 entries of a 10,000-member group were quadratic. An entry
        that failed is answered with the same error when it comes again and nobody left meanwhile: 10,000 copies
        of one unknown member were 10,000 errors (320 MB, each naming a 32,767-character group id)."""
        check_group_id(group)
        outcomes: list[DomainError | None] = []
        replies: list[Reply] = []
        state = self.store.group(group)
        pending = self._pending.get(group, {})
        leavers: dict[str, None] = {}
        failed: dict[tuple[str, str | None], tuple[int, DomainError]] = {}
        for member_id, group_instance_id in members:
            if group_instance_id is None and member_id in pending:
                del pending[member_id]
                outcomes.append(None)
                continue
            earlier = failed.get((member_id, group_instance_id))
            if earlier is not None and earlier[0] == len(leavers):
                outcomes.append(earlier[1])
                continue
            try:
                target = leaving_member(state, member_id, group_instance_id, leavers)
            except DomainError as error:
                failed[member_id, group_instance_id] = (len(leavers), error)
                outcomes.append(error)
                continue
            leavers[target] = None
            outcomes.append(None)
        if state is not None:
            self._apply(group, removal_events(state, tuple(leavers), "the member left the group"), state, now_ms,
                        replies)
        self._try_complete(group, now_ms, replies)
        self._settle(group, replies)
        return outcomes, replies

    def touch(self, group: str, member_id: str, now_ms: int) -> None:
        """A sign of life from a member (heartbeat, sync, offset commit) restarts its session timeout."""
        state = self.store.group(group)
        member = state.member(member_id) if state is not None else None
        if member is not None:
            self._sessions.setdefault(group, {})[member_id] = now_ms + member.session_timeout_ms

    def forget(self, group: str) -> None:
        """Drop the liveness of a deleted group."""
        for table in (self._sessions, self._pending, self._rebalances, self._awaiting_join, self._awaiting_sync):
            table.pop(group, None)

    def take_over(self, group: str, now_ms: int) -> None:
        """The group just became a classic group again, rebalancing (`group_migration.downgrade`): its members'
        sessions start now, and the rebalance waits for them up to their longest rebalance timeout."""
        self.forget(group)
        state = self.store.group(group)
        if state is None:
            return
        self._sessions[group] = {m.member_id: now_ms + m.session_timeout_ms for m in state.members}
        if state.phase == GroupPhase.PREPARING_REBALANCE:
            self._rebalances[group] = _Rebalance(now_ms, now_ms + state.max_rebalance_timeout_ms())

    def hand_over(self, group: str) -> list[Reply]:
        """The group became a consumer group (`group_migration`): members blocked in JoinGroup or SyncGroup are told
        REBALANCE_IN_PROGRESS, so they rejoin it (Kafka's ``completeAllJoinFutures/SyncFutures``), and its liveness
        here goes."""
        replies: list[Reply] = []
        for table, kind in ((self._awaiting_join, JoinReply), (self._awaiting_sync, SyncReply)):
            for member_id in sorted(table.get(group, set())):
                replies.append(kind(group, member_id, error=RebalanceInProgress(
                    f"group {quoted(group)} became a consumer group; rejoin it")))
        self.forget(group)
        return replies

    # -- time -------------------------------------------------------------------------------------

    def tick(self, now_ms: int) -> list[Reply]:
        """Expire sessions and pending member ids, and close join phases whose time has come."""
        replies: list[Reply] = []
        for group in list(self._rebalances):
            self._try_complete(group, now_ms, replies)
        for group, sessions in list(self._sessions.items()):
            waiting = self._awaiting_join.get(group, set()) | self._awaiting_sync.get(group, set())
            state = self.store.group(group)
            expired: list[GroupMember] = []
            for member_id, deadline in list(sessions.items()):
                if deadline > now_ms or member_id in waiting:
                    continue
                member = state.member(member_id) if state is not None else None
                if member is None:
                    sessions.pop(member_id, None)
                    continue
                expired.append(member)
            if state is not None and expired:
                self._apply(group, removal_events(state, [member.member_id for member in expired],
                                                  _expiry_reason(expired)), state, now_ms, replies)
                self._try_complete(group, now_ms, replies)
            self._settle(group, replies)
        for group, pending in list(self._pending.items()):
            lapsed = [member_id for member_id, deadline in pending.items() if deadline <= now_ms]
            for member_id in lapsed:
                del pending[member_id]
            if lapsed:
                self._try_complete(group, now_ms, replies)
                self._settle(group, replies)
        return replies

    def next_deadline_ms(self, group: str | None = None) -> int | None:
        """The earliest moment `tick` has something to do (the coordinator's timer sleeps until then); members
        blocked in JoinGroup or SyncGroup do not time out while they wait, so their sessions do not count.
        ``group``: that group's only, what a request to it may have moved (the whole broker's members for each
        JoinGroup, SyncGroup and LeaveGroup grew with every classic member)."""
        groups = list(self._sessions) if group is None else [group]
        deadlines: list[int] = []
        for name in groups:
            sessions = self._sessions.get(name, {})
            waiting = self._awaiting_join.get(name, set()) | self._awaiting_sync.get(name, set())
            deadlines += [deadline for member_id, deadline in sessions.items() if member_id not in waiting]
        pending = self._pending.values() if group is None else [self._pending.get(group, {})]
        deadlines += [d for deadlines_of in pending for d in deadlines_of.values()]
        rebalances = self._rebalances.values() if group is None else (
            [self._rebalances[group]] if group in self._rebalances else [])
        deadlines += [r.not_before_ms if r.not_before_ms is not None else r.deadline_ms for r in rebalances]
        return min(deadlines, default=None)

    # -- internals --------------------------------------------------------------------------------

    def _apply(self, group: str, events: Sequence[Event], before: GroupState | None, now_ms: int,
               replies: list[Reply]) -> None:
        if not events:
            return
        self.store.stage(events)
        state = self.store.group(group)
        for event in events:
            if isinstance(event, StaticMemberReplaced):
                self._fence(group, event.old_member_id, replies)
            elif isinstance(event, RebalanceStarted) and state is not None:
                was_empty = before is None or not before.members
                deadline = now_ms + state.max_rebalance_timeout_ms()
                delay = self.limits.initial_rebalance_delay_ms  # never past the rebalance's own deadline
                self._rebalances[group] = _Rebalance(now_ms, deadline,
                                                     min(now_ms + delay, deadline) if was_empty else None)
                self._fail_sync(group, replies)
            elif isinstance(event, MemberJoined):
                timer = self._rebalances.get(group)
                if timer is not None and timer.not_before_ms is not None:
                    extended = min(now_ms + self.limits.initial_rebalance_delay_ms, timer.deadline_ms)
                    timer.not_before_ms = max(timer.not_before_ms, extended)
            elif isinstance(event, MembersLeft):
                sessions = self._sessions.get(group, {})
                for member_id in event.member_ids:
                    sessions.pop(member_id, None)
            elif isinstance(event, GenerationStarted) and state is not None:
                self._rebalances.pop(group, None)
                self._sessions[group] = {m.member_id: now_ms + m.session_timeout_ms for m in state.members}
                for member_id in sorted(self._awaiting_join.pop(group, set())):
                    if state.member(member_id) is not None:
                        replies.append(self._join_reply(state, member_id))
            elif isinstance(event, AssignmentsSynced) and state is not None:
                for member_id in sorted(self._awaiting_sync.pop(group, set())):
                    member = state.member(member_id)
                    if member is not None:
                        self.touch(group, member_id, now_ms)
                        replies.append(SyncReply(group, member_id, state.protocol_type, state.protocol_name,
                                                 member.assignment))

    def _try_complete(self, group: str, now_ms: int, replies: list[Reply]) -> None:
        state = self.store.group(group)
        if state is None or state.phase != GroupPhase.PREPARING_REBALANCE:
            self._rebalances.pop(group, None)
            return
        timer = self._rebalances.setdefault(group, _Rebalance(now_ms, now_ms + state.max_rebalance_timeout_ms()))
        if timer.not_before_ms is not None:
            if now_ms < timer.not_before_ms:
                return
            force = True
        else:
            force = now_ms >= timer.deadline_ms
        events = decide_complete_join(state, force=force, pending_members=len(self._pending.get(group, {})),
                                      now_ms=now_ms)
        if events is None:
            if force:
                timer.not_before_ms = None
                timer.deadline_ms = now_ms + state.max_rebalance_timeout_ms()
            return
        self._apply(group, events, state, now_ms, replies)

    def _join_reply(self, state: GroupState, member_id: str, skip_assignment: bool = False) -> JoinReply:
        members: tuple[tuple[str, str | None, bytes], ...] = ()
        if state.leader == member_id:
            members = tuple((m.member_id, m.group_instance_id, m.metadata(state.protocol_name)) for m in state.members)
        return JoinReply(state.group_id, member_id, state.generation, state.protocol_type, state.protocol_name,
                         state.leader or "", members, skip_assignment)

    def _fail_sync(self, group: str, replies: list[Reply]) -> None:
        for member_id in sorted(self._awaiting_sync.pop(group, set())):
            error = RebalanceInProgress(f"group {quoted(group)} started rebalancing; rejoin")
            replies.append(SyncReply(group, member_id, error=error))

    def _fence(self, group: str, member_id: str, replies: list[Reply]) -> None:
        error = FencedInstanceId(f"a new member took over the group.instance.id of {quoted(member_id)}")
        if member_id in self._awaiting_join.get(group, set()):
            self._awaiting_join[group].discard(member_id)
            replies.append(JoinReply(group, member_id, error=error))
        if member_id in self._awaiting_sync.get(group, set()):
            self._awaiting_sync[group].discard(member_id)
            replies.append(SyncReply(group, member_id, error=error))
        self._sessions.get(group, {}).pop(member_id, None)

    def _settle(self, group: str, replies: list[Reply]) -> None:
        """Blocked members that are no longer in the group learn it now (UNKNOWN_MEMBER_ID)."""
        state = self.store.group(group)
        for table, kind in ((self._awaiting_join, JoinReply), (self._awaiting_sync, SyncReply)):
            waiting = table.get(group, set())
            for member_id in sorted(waiting):
                if state is None or state.member(member_id) is None:
                    waiting.discard(member_id)
                    replies.append(kind(group, member_id, error=UnknownMember(f"member {quoted(member_id)} left "
                                                                              f"{quoted(group)}")))


def _expiry_reason(expired: Sequence[GroupMember]) -> str:
    """Why members timing out together left: their session timeouts, as one figure or a range."""
    timeouts = sorted({member.session_timeout_ms for member in expired})
    shown = f"{timeouts[0]}" if len(timeouts) == 1 else f"{timeouts[0]}-{timeouts[-1]}"
    return f"session timeout of {shown} ms expired"
