"""Decisions of the classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup and join completion.

Each function takes the group's persisted state and a command and returns the events to record, or
raises a `DomainError` having changed nothing. Timing and who is blocked waiting live in
`group_sessions`; these rules follow Apache Kafka's classic GroupCoordinator.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from logwright.core.errors import (
    FencedInstanceId,
    GroupMaxSizeReached,
    IllegalGeneration,
    InconsistentGroupProtocol,
    InvalidGroupId,
    InvalidSessionTimeout,
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
from logwright.core.groups.groups import (
    GroupMember,
    GroupPhase,
    GroupState,
    Protocols,
    select_protocol,
    supports_protocols,
)


@dataclass(frozen=True, slots=True)
class GroupLimits:
    """Broker-wide bounds (``group.*`` broker configs) a group's members must respect."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2**31 - 1
    initial_rebalance_delay_ms: int = 0


@dataclass(frozen=True, slots=True)
class JoinGroup:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    require_known_member_id: bool = True
    """JoinGroup v4+: a member without an id first gets MEMBER_ID_REQUIRED (KIP-394)."""


@dataclass(frozen=True, slots=True)
class SyncGroup:
    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class Heartbeat:
    group_id: str
    generation: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class JoinDecision:
    events: tuple[Event, ...]
    member_id: str
    wait: bool
    """``True``: the member waits for the rebalance; ``False``: answer now with the current generation."""


@dataclass(frozen=True, slots=True)
class SyncDecision:
    events: tuple[Event, ...]
    assignment: bytes | None
    """The member's assignment to answer with now, or ``None`` when it must wait for the leader."""


def check_group_id(group_id: str | None) -> str:
    if not group_id:
        raise InvalidGroupId("the group id must be a non-empty string")
    return group_id


def current_member(state: GroupState | None, member_id: str, group_instance_id: str | None) -> GroupMember:
    """The member a request speaks for, refusing fenced static members and unknown ids. A request naming a
    ``group.instance.id`` no member holds is refused as an unknown member, whatever its member id (as Kafka's
    ``validateMember``)."""
    if state is not None and group_instance_id is not None:
        owner = state.static_member(group_instance_id)
        if owner is None:
            raise UnknownMember(f"no member of group {quoted(state.group_id)} has group.instance.id "
                                f"{quoted(group_instance_id)}")
        if owner.member_id != member_id:
            raise FencedInstanceId(f"group.instance.id {quoted(group_instance_id)} now belongs to another member id")
    member = state.member(member_id) if state is not None else None
    if state is None or member is None:
        raise _unknown(state, member_id)
    return member


def _unknown(state: GroupState | None, member_id: str) -> UnknownMember:
    group = f"group {quoted(state.group_id)}" if state is not None else "the group"
    return UnknownMember(f"member {quoted(member_id)} is not in {group}; rejoin without a member id")


def _joined(command: JoinGroup, member_id: str) -> MemberJoined:
    return MemberJoined(command.group_id, member_id, command.group_instance_id, command.client_id,
                        command.client_host, command.session_timeout_ms, command.rebalance_timeout_ms,
                        command.protocol_type, command.protocols)


def _rebalance(group: str, state: GroupState | None, reason: str) -> tuple[Event, ...]:
    if state is not None and state.phase == GroupPhase.PREPARING_REBALANCE:
        return ()
    return (RebalanceStarted(group, reason),)


def check_join(command: JoinGroup, limits: GroupLimits) -> str:
    """What Kafka checks of every JoinGroup before it looks at the group (a consumer group's classic members too):
    the group id, then the session timeout within ``group.min/max.session.timeout.ms``."""
    group = check_group_id(command.group_id)
    if not limits.min_session_timeout_ms <= command.session_timeout_ms <= limits.max_session_timeout_ms:
        raise InvalidSessionTimeout(
            f"session timeout {command.session_timeout_ms} ms is outside the broker's bounds "
            f"{limits.min_session_timeout_ms}..{limits.max_session_timeout_ms} ms (group.min/max.session.timeout.ms)"
        )
    return group


def decide_join(
    state: GroupState | None, command: JoinGroup, new_member_id: str, pending: Collection[str], limits: GroupLimits
) -> JoinDecision:
    """Admit a member to the join phase, or answer a member that already has the current generation."""
    group = check_join(command, limits)
    names = [name for name, _ in command.protocols]
    if not supports_protocols(state, command.protocol_type, names):
        raise InconsistentGroupProtocol(
            f"protocol type {command.protocol_type!r} with protocols {names} does not match group {quoted(group)}"
        )
    if not command.member_id:
        if command.group_instance_id is not None and state is not None:
            existing = state.static_member(command.group_instance_id)
            if existing is not None:
                return _replace_static(state, existing, command, new_member_id)
        elif command.group_instance_id is None and command.require_known_member_id:
            raise MemberIdRequired(f"rejoin group {quoted(group)} with the member id {quoted(new_member_id)}",
                                   new_member_id)
        return _add(state, command, new_member_id, limits)
    if command.member_id in pending:
        return _add(state, command, command.member_id, limits)
    member = current_member(state, command.member_id, command.group_instance_id)
    assert state is not None
    joined = _joined(command, member.member_id)
    if state.phase == GroupPhase.PREPARING_REBALANCE:
        return JoinDecision((joined,), member.member_id, wait=True)
    unchanged = member.protocols == command.protocols
    if unchanged and (state.phase == GroupPhase.COMPLETING_REBALANCE or state.leader != member.member_id):
        return JoinDecision((), member.member_id, wait=False)
    reason = "the leader rejoined" if unchanged else f"member {quoted(member.member_id)} changed its protocols"
    return JoinDecision((*_rebalance(state.group_id, state, reason), joined), member.member_id, wait=True)


def _add(state: GroupState | None, command: JoinGroup, member_id: str, limits: GroupLimits) -> JoinDecision:
    if state is not None and len(state.members) >= limits.max_size:
        raise GroupMaxSizeReached(f"group {quoted(command.group_id)} already has {limits.max_size} members "
                                  "(group.max.size)")
    rebalance = _rebalance(command.group_id, state, f"member {quoted(member_id)} joined")
    return JoinDecision((*rebalance, _joined(command, member_id)), member_id, wait=True)


def _replace_static(state: GroupState, existing: GroupMember, command: JoinGroup, new_member_id: str) -> JoinDecision:
    """A static member came back under a new id: it takes over the old member's place and assignment.

    A Stable group whose member rejoins with unchanged protocols does not rebalance (KIP-345).
    """
    assert command.group_instance_id is not None
    replaced = StaticMemberReplaced(state.group_id, command.group_instance_id, existing.member_id, new_member_id)
    joined = _joined(command, new_member_id)
    if state.phase == GroupPhase.STABLE and existing.protocols == command.protocols:
        return JoinDecision((replaced, joined), new_member_id, wait=False)
    reason = f"static member {command.group_instance_id!r} rejoined"
    return JoinDecision((replaced, *_rebalance(state.group_id, state, reason), joined), new_member_id, wait=True)


def decide_complete_join(state: GroupState | None, *, force: bool, pending_members: int,
                         now_ms: int) -> tuple[Event, ...] | None:
    """Close the join phase: ``None`` while members are still expected (or nobody rejoined yet).

    ``force`` is set when the rebalance timeout (or the initial delay) has run out: dynamic members
    that did not rejoin are removed, static ones are kept and left to their session timeout.
    """
    if state is None or state.phase != GroupPhase.PREPARING_REBALANCE:
        return None
    if not force and (pending_members or not all(member.rejoined for member in state.members)):
        return None
    staying = [member for member in state.members if member.rejoined or member.group_instance_id is not None]
    rejoined = [member for member in staying if member.rejoined]
    if staying and not rejoined:
        return None
    staying_ids = {member.member_id for member in staying}  # a list search per member was quadratic
    gone = tuple(member.member_id for member in state.members if member.member_id not in staying_ids)
    events: list[Event] = (
        [MembersLeft(state.group_id, gone, "did not rejoin before the rebalance timeout")] if gone else [])
    generation = state.generation + 1
    if not staying:
        events.append(GenerationStarted(state.group_id, generation, None, None, now_ms))
        return tuple(events)
    leader = state.leader if any(member.member_id == state.leader for member in rejoined) else rejoined[0].member_id
    events.append(GenerationStarted(state.group_id, generation, select_protocol(staying), leader, now_ms))
    return tuple(events)


def decide_sync(state: GroupState | None, command: SyncGroup) -> SyncDecision:
    """The leader's SyncGroup records the assignments; others get theirs now (Stable) or wait for it."""
    check_group_id(command.group_id)
    member = current_member(state, command.member_id, command.group_instance_id)
    assert state is not None
    if command.generation != state.generation:
        raise IllegalGeneration(f"generation {command.generation} is not group {quoted(state.group_id)}'s "
                                f"current generation {state.generation}")
    if command.protocol_type is not None and command.protocol_type != state.protocol_type:
        raise InconsistentGroupProtocol(f"group {quoted(state.group_id)} has protocol type {state.protocol_type!r}")
    if command.protocol_name is not None and command.protocol_name != state.protocol_name:
        raise InconsistentGroupProtocol(f"group {quoted(state.group_id)} selected protocol {state.protocol_name!r}")
    if state.phase == GroupPhase.PREPARING_REBALANCE:
        raise RebalanceInProgress(f"group {quoted(state.group_id)} is rebalancing; rejoin")
    if state.phase == GroupPhase.STABLE:
        return SyncDecision((), member.assignment)
    if state.leader != member.member_id:
        return SyncDecision((), None)
    given = dict(command.assignments)
    assignments = tuple((each.member_id, given.get(each.member_id, b"")) for each in state.members)
    synced = AssignmentsSynced(state.group_id, state.generation, assignments)
    return SyncDecision((synced,), given.get(member.member_id, b""))


def decide_heartbeat(state: GroupState | None, command: Heartbeat) -> GroupMember:
    """The member a heartbeat keeps alive; raises for unknown members and old generations.

    A heartbeat during PreparingRebalance still counts; the caller then answers REBALANCE_IN_PROGRESS
    (`check_not_rebalancing`).
    """
    check_group_id(command.group_id)
    member = current_member(state, command.member_id, command.group_instance_id)
    assert state is not None
    if command.generation != state.generation:
        raise IllegalGeneration(f"generation {command.generation} is not group {quoted(state.group_id)}'s "
                                f"current generation {state.generation}")
    return member


def check_not_rebalancing(state: GroupState) -> None:
    if state.phase == GroupPhase.PREPARING_REBALANCE:
        raise RebalanceInProgress(f"group {quoted(state.group_id)} is rebalancing; rejoin")


def leaving_member(state: GroupState | None, member_id: str, group_instance_id: str | None,
                   gone: Collection[str] = ()) -> str:
    """The member id a LeaveGroup entry removes; a static member may leave by instance id alone. ``gone``: the
    members earlier entries of the same request remove, answered as no longer in the group."""
    if group_instance_id is None:
        if member_id in gone:
            raise _unknown(state, member_id)
        return current_member(state, member_id, None).member_id
    owner = state.static_member(group_instance_id) if state is not None else None
    if owner is None or owner.member_id in gone:
        raise UnknownMember(f"no member has group.instance.id {quoted(group_instance_id)}")
    if member_id and owner.member_id != member_id:
        raise FencedInstanceId(f"group.instance.id {quoted(group_instance_id)} belongs to another member id")
    return owner.member_id


def removal_events(state: GroupState, member_ids: Sequence[str], reason: str) -> tuple[Event, ...]:
    """Members leave (or expire) together: a Stable or CompletingRebalance group starts a rebalance."""
    if not member_ids:
        return ()
    left = MembersLeft(state.group_id, tuple(member_ids), reason)
    if state.phase in (GroupPhase.STABLE, GroupPhase.COMPLETING_REBALANCE):
        return (left, RebalanceStarted(state.group_id, reason))
    return (left,)
