"""Members speaking the classic protocol inside a KIP-848 consumer group (Kafka 4.4's online migration).

A consumer still on ``group.protocol=classic`` may join a consumer group that has members, unless the broker's
``group.consumer.migration.policy`` is ``disabled``. It keeps its classic round trip, and the group's server-side
assignor decides for it as for every other member:

- JoinGroup records what its embedded consumer protocol subscribes to and moves it one reconciliation step, with
  the partitions its subscription says it owns (what it kept after revoking). It is answered at once: generation =
  its member epoch, no leader, no member list (nobody assigns on the client).
- SyncGroup hands it its current assignment in the consumer protocol's format.
- Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin to move on: a newer target assignment was computed,
  it has partitions to revoke, or partitions it waited for are free now.
- LeaveGroup removes it and bumps the group epoch, as a consumer member's leave does (any member may be named).

Its generation is its member epoch, so a stale one is ILLEGAL_GENERATION (a consumer member's is STALE_MEMBER_EPOCH).
Each check follows Kafka 4.4's ``GroupMetadataManager.classicGroup*ToConsumerGroup`` in its order. What this module
needs of the wire (the subscription's topics, owned partitions and rack) the caller reads (`ClassicSubscription`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from logwright.core.consumer_groups.consumer_assignors import DEFAULT_ASSIGNORS
from logwright.core.consumer_groups.consumer_groups import (
    ConsumerGroupState,
    ConsumerMember,
    MemberState,
    as_set,
    fold,
)
from logwright.core.consumer_groups.consumer_reconciliation import (
    AT_ONCE,
    UNBOUNDED_GROUP_SIZE,
    AssignmentPace,
    Topics,
    reconcile,
    refresh,
    remove_all,
    subscribed_topics,
)
from logwright.core.consumer_groups.topic_patterns import PatternCompiler
from logwright.core.errors import (
    DomainError,
    FencedInstanceId,
    GroupMaxSizeReached,
    IllegalGeneration,
    InconsistentGroupProtocol,
    MalformedEmbeddedProtocol,
    MemberIdRequired,
    RebalanceInProgress,
    UnknownMember,
    quoted,
)
from logwright.core.events import Event
from logwright.core.events.consumer_groups import (
    ConsumerMemberLeft,
    ConsumerMemberReconciled,
    ConsumerMemberSubscribed,
    ConsumerStaticMemberReplaced,
    TopicPartitions,
)

PROTOCOL_TYPE = "consumer"
"""The only protocol type a classic member of a consumer group may use: the embedded consumer protocol."""

LEFT_REASON = "left the group (LeaveGroup)"


@dataclass(frozen=True, slots=True)
class ClassicSubscription:
    """What a JoinGroup's first protocol's metadata (ConsumerProtocolSubscription) says."""

    topics: tuple[str, ...]
    owned: TopicPartitions
    rack_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClassicJoin:
    """A JoinGroup to a consumer group that has members. ``subscription`` is ``None`` when the first protocol's
    metadata does not read as a consumer subscription."""

    group_id: str
    member_id: str
    instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    subscription: ClassicSubscription | None
    client_id: str = ""
    client_host: str = ""
    require_known_member_id: bool = True


def supports_protocols(state: ConsumerGroupState, protocol_type: str, names: Sequence[str]) -> bool:
    """Kafka's ``ConsumerGroup.supportsClassicProtocols``: the consumer protocol type, and a protocol every classic
    member supports (any, when none is classic)."""
    if protocol_type != PROTOCOL_TYPE:
        return False
    if not state.members:
        return bool(names)
    classic = [member for member in state.members if member.uses_classic_protocol]
    return any(all(any(name == own for own, _ in member.classic_protocols) for member in classic) for name in names)


def classic_join(state: ConsumerGroupState, command: ClassicJoin, topics: Topics, new_member_id: Callable[[], str],
                 patterns: PatternCompiler, pace: AssignmentPace = AT_ONCE, max_size: int = UNBOUNDED_GROUP_SIZE,
                 assignors: Sequence[str] = DEFAULT_ASSIGNORS) -> tuple[str, list[Event]]:
    """Decide one JoinGroup of a classic member: its member id and the events to append. Raises
    `GroupMaxSizeReached`, `InconsistentGroupProtocol`, `MemberIdRequired` (with the id to rejoin with) or
    `MalformedEmbeddedProtocol` having changed nothing."""
    group_id = command.group_id
    member_id = command.member_id or new_member_id()
    if len(state.members) >= max_size and state.member(member_id) is None:
        raise GroupMaxSizeReached(f"The consumer group has reached its maximum capacity of {max_size} members.")
    if not supports_protocols(state, command.protocol_type, [name for name, _ in command.protocols]):
        raise InconsistentGroupProtocol(f"Member {member_id}'s protocols are not supported.")
    if not command.member_id and command.instance_id is None and command.require_known_member_id:
        raise MemberIdRequired(f"rejoin consumer group {quoted(group_id)} with the member id {member_id!r}",
                               member_id)
    events: list[Event] = []
    existing = state.member(member_id)
    if command.instance_id is not None:
        static = state.static_member(command.instance_id)
        if static is not None:  # a static member (re)joining with the classic protocol takes the holder's place at
            # once, at epoch 0, keeping what it owns, revokes and is reconciling (Kafka copies the member)
            if static.member_id != member_id:
                events.append(ConsumerStaticMemberReplaced(group_id, member_id, static.member_id))
            events.append(ConsumerMemberReconciled(group_id, member_id, 0, 0, static.state, static.assigned,
                                                   static.revoking))
            existing = static
    subscription = command.subscription
    if subscription is None:
        raise MalformedEmbeddedProtocol("Malformed embedded consumer protocol in subscription deserialization.")
    subscribed = ConsumerMemberSubscribed(
        group_id, member_id,
        instance_id=command.instance_id if command.instance_id is not None else (
            existing.instance_id if existing else None),
        rack_id=subscription.rack_id or (existing.rack_id if existing else None),
        client_id=command.client_id,
        client_host=command.client_host,
        rebalance_timeout_ms=(command.rebalance_timeout_ms if command.rebalance_timeout_ms >= 0
                              else existing.rebalance_timeout_ms if existing else 0),
        server_assignor=existing.server_assignor if existing else None,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        subscribed_topic_regex=None,
        classic_session_timeout_ms=command.session_timeout_ms,
        classic_protocols=command.protocols,
    )
    changed = existing is None or (existing.subscribed_topic_names, existing.subscribed_topic_regex,
                                   existing.rack_id) != (subscribed.subscribed_topic_names, None, subscribed.rack_id)
    events.append(subscribed)
    events.extend(refresh(fold(state, events, group_id), topics, member_id, force=changed, patterns=patterns,
                          pace=pace, assignors=assignors))
    folded = fold(state, events, group_id)
    member = folded.member(member_id)
    lagging = folded.group_epoch > folded.assignment_epoch
    subscribed_now = subscribed_topics(member, topics, patterns) if lagging and member is not None else None
    events.extend(reconcile(folded, member_id, subscription.owned, subscribed_now))
    return member_id, events


def classic_member(state: ConsumerGroupState, member_id: str, instance_id: str | None) -> ConsumerMember:
    """Kafka's ``validateConsumerGroupMember`` and ``throwIfMemberDoesNotUseClassicProtocol``: the member a SyncGroup
    or Heartbeat names, else `UnknownMember` or `FencedInstanceId`."""
    if instance_id is None:
        member = state.member(member_id)
        if member is None:
            raise UnknownMember(f"Member {quoted(member_id)} is not a member of group {quoted(state.group_id)}.")
    else:
        member = state.static_member(instance_id)
        if member is None:
            raise UnknownMember(f"Member with instance id {quoted(instance_id)} is not a member of group "
                                f"{quoted(state.group_id)}.")
        if member.member_id != member_id:
            raise FencedInstanceId(f"static member {quoted(instance_id)} of group {quoted(state.group_id)} is now "
                                   f"{member.member_id!r}, not {quoted(member_id)}")
    if not member.uses_classic_protocol:
        raise UnknownMember(f"Member {quoted(member.member_id)} does not use the classic protocol.")
    return member


def check_generation(member: ConsumerMember, generation: int) -> None:
    if generation != member.member_epoch:
        raise IllegalGeneration(f"The request generation id {generation} is not equal to the member epoch "
                                f"{member.member_epoch} of member {quoted(member.member_id)}.")


def protocol_name(member: ConsumerMember) -> str:
    """The protocol a classic member was answered with at JoinGroup: the first it listed, as Kafka answers."""
    return member.classic_protocols[0][0] if member.classic_protocols else ""


def classic_sync(state: ConsumerGroupState, member_id: str, instance_id: str | None, generation: int,
                 protocol_type: str | None, protocol_name_asked: str | None) -> ConsumerMember:
    """Decide one SyncGroup of a classic member: the member whose assignment to hand back. Raises `UnknownMember`,
    `FencedInstanceId`, `IllegalGeneration`, `InconsistentGroupProtocol` or `RebalanceInProgress` (it must rejoin
    first: the caller starts its join timeout)."""
    member = classic_member(state, member_id, instance_id)
    check_generation(member, generation)
    if protocol_type is not None and protocol_type != PROTOCOL_TYPE:
        raise InconsistentGroupProtocol(f"The protocol type {protocol_type} from member {member.member_id} request "
                                        f"is not equal to the group protocol type {PROTOCOL_TYPE}.")
    if protocol_name_asked is not None and protocol_name_asked != protocol_name(member):
        raise InconsistentGroupProtocol(f"The protocol name {protocol_name_asked} from member {member.member_id} "
                                        "request is not equal to the protocol name returned in the join response.")
    if state.assignment_epoch > member.member_epoch and member.state != MemberState.UNREVOKED_PARTITIONS:
        raise RebalanceInProgress(f"A new rebalance is triggered in group {quoted(state.group_id)} and member "
                                  f"{quoted(member.member_id)} should rejoin to catch up.")
    return member


def must_rejoin(state: ConsumerGroupState, member: ConsumerMember) -> bool:
    """Kafka 4.4's classic heartbeat to a consumer group: rejoin when a target assignment newer than the member's
    epoch was computed, when it has partitions to revoke, or when every partition it waited for is free now. (A group
    epoch bumped but not yet assigned, the assignment being paced, does not count.)"""
    if member.member_epoch < state.assignment_epoch or member.state == MemberState.UNREVOKED_PARTITIONS:
        return True
    return member.state == MemberState.UNRELEASED_PARTITIONS and not _waiting_on_unreleased(state, member)


def _waiting_on_unreleased(state: ConsumerGroupState, member: ConsumerMember) -> bool:
    """Some partition of its target another member still holds or revokes."""
    pending = as_set(state.target(member.member_id)) - as_set(member.assigned)
    for other in state.members:
        if other.member_id != member.member_id and pending & (as_set(other.assigned) | as_set(other.revoking)):
            return True
    return False


def classic_heartbeat(state: ConsumerGroupState, member_id: str, instance_id: str | None,
                      generation: int) -> tuple[ConsumerMember, bool]:
    """Decide one Heartbeat of a classic member: the member, and whether to answer REBALANCE_IN_PROGRESS. Raises
    `UnknownMember`, `FencedInstanceId` or `IllegalGeneration`."""
    member = classic_member(state, member_id, instance_id)
    check_generation(member, generation)
    return member, must_rejoin(state, member)


def classic_leave(state: ConsumerGroupState, leaving: Sequence[tuple[str, str | None]], topics: Topics,
                  patterns: PatternCompiler, assignors: Sequence[str] = DEFAULT_ASSIGNORS
                  ) -> tuple[list[DomainError | None], list[Event]]:
    """Decide one LeaveGroup to a consumer group: per (member id, instance id) its error (``None``: it left), and
    the events (the members gone, the group epoch bumped once), as Kafka 4.4's ``classicGroupLeaveToConsumerGroup``.
    Any member may be named, a consumer-protocol one too: an instance id alone (no member id) is how the admin
    client removes a static member."""
    outcomes: list[DomainError | None] = []
    gone: list[tuple[str, str]] = []
    for member_id, instance_id in leaving:
        try:
            if instance_id is None:
                member = state.member(member_id)
                if member is None:
                    raise UnknownMember(f"Member {quoted(member_id)} is not a member of group "
                                        f"{quoted(state.group_id)}.")
            else:
                member = state.static_member(instance_id)
                if member is None:
                    raise UnknownMember(f"Instance id {quoted(instance_id)} is unknown.")
                if member_id and member.member_id != member_id:
                    raise FencedInstanceId(f"static member {quoted(instance_id)} of group {quoted(state.group_id)} "
                                           f"is {member.member_id!r}, not {quoted(member_id)}")
        except DomainError as error:
            outcomes.append(error)
            continue
        outcomes.append(None)
        gone.append((member.member_id, LEFT_REASON))
    events = remove_all(state, gone, topics, patterns, assignors) if gone else []
    return outcomes, events


def left_members(events: Sequence[Event]) -> list[str]:
    return [event.member_id for event in events if isinstance(event, ConsumerMemberLeft)]

