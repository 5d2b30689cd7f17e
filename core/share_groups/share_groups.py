"""KIP-932 share groups: persisted membership and the ShareGroupHeartbeat decisions.

A share group has no rebalance barrier: each member reconciles on its own heartbeat. The assignor is
KIP-932's simple one in its homogeneous form: every member is assigned every partition of the topics it
subscribed to, because records are shared through acquisition locks, not through partition ownership.
The group's subscription mode (``logwright.subscription.mode``, shared by default) may narrow that:
Exclusive refuses a second member, Failover gives each partition to one active member, Key_Shared
splits key hashes. The mode's `Membership` is recorded after every join and leave.

Epochs. The group epoch goes up with every membership change; a member's epoch goes up whenever its
assignment changes (a topic appears, grows, or the member changes its subscription) and is always
above its previous one. A heartbeat must carry exactly the member's current epoch, otherwise Kafka's
FENCED_MEMBER_EPOCH: share groups have no revocation phase, so there is no older epoch to tolerate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from functools import singledispatch

from logwright.core.cursors.key_hash_ranges import HashRange
from logwright.core.cursors.subscription_mode import Membership, ModeConsumer, SubscriptionMode
from logwright.core.errors import (
    FencedMemberEpoch,
    GroupMaxSizeReached,
    InvalidConfig,
    InvalidRequest,
    NonEmptyGroup,
    UnknownGroup,
    UnknownMember,
    quoted,
)
from logwright.core.events import Event
from logwright.core.events.cursors import SubscriptionDeleted
from logwright.core.events.share_groups import (
    SHARE_GROUP_EVENT_TYPES,
    ShareAssignment,
    ShareGroupDeleted,
    ShareGroupEvent,
    ShareMemberAssigned,
    ShareMemberJoined,
    ShareMemberLeft,
    ShareMembershipChanged,
    ShareMemberSubscribed,
)
from logwright.core.member_tuples import member_by_id, with_member
from logwright.core.projection import Projection

LEAVE_EPOCH = -1
JOIN_EPOCH = 0
SESSION_TIMEOUT_REASON = "session timeout"


@dataclass(frozen=True, slots=True)
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topics: tuple[str, ...]
    member_epoch: int = 0
    assignment: ShareAssignment = ()
    lock_duration_ms: int = 0
    """Its own acquisition lock (ack timeout); 0: the group's ``share.record.lock.duration.ms``."""


@dataclass(frozen=True, slots=True)
class ShareGroupState:
    """A new group is at epoch 1, as in Kafka 4.3+: its first member gets 2."""

    group_id: str
    group_epoch: int = 1
    members: tuple[ShareMember, ...] = ()
    membership: Membership | None = None

    def mode_membership(self) -> Membership:
        return self.membership if self.membership is not None else Membership(self.group_id)

    def member(self, member_id: str) -> ShareMember | None:
        return member_by_id(self.members, member_id)

    @property
    def phase(self) -> str:
        """KIP-932's group states as ShareGroupDescribe and ListGroups report them (a deleted group is gone:
        DescribeGroups calls it Dead)."""
        return "Stable" if self.members else "Empty"


@singledispatch
def _evolve(event: Event, state: ShareGroupState) -> ShareGroupState:
    return state


@_evolve.register
def _(event: ShareMemberJoined, state: ShareGroupState) -> ShareGroupState:
    member = ShareMember(event.member_id, event.client_id, event.client_host, event.rack_id, event.subscribed_topics,
                         lock_duration_ms=event.lock_duration_ms)
    return replace(state, group_epoch=state.group_epoch + 1, members=with_member(state.members, member))


@_evolve.register
def _(event: ShareMemberSubscribed, state: ShareGroupState) -> ShareGroupState:
    member = state.member(event.member_id)
    if member is None:
        return state
    updated = replace(member, subscribed_topics=event.subscribed_topics)
    return replace(state, group_epoch=state.group_epoch + 1, members=with_member(state.members, updated))


@_evolve.register
def _(event: ShareMemberAssigned, state: ShareGroupState) -> ShareGroupState:
    member = state.member(event.member_id)
    if member is None:
        return state
    updated = replace(member, member_epoch=event.member_epoch, assignment=event.assignment)
    return replace(state, group_epoch=max(state.group_epoch, event.member_epoch),
                   members=with_member(state.members, updated))


@_evolve.register
def _(event: ShareMemberLeft, state: ShareGroupState) -> ShareGroupState:
    members = tuple(member for member in state.members if member.member_id != event.member_id)
    return replace(state, group_epoch=state.group_epoch + 1, members=members)


@_evolve.register
def _(event: ShareMembershipChanged, state: ShareGroupState) -> ShareGroupState:
    return replace(state, membership=event.membership)


def evolve(state: ShareGroupState | None, event: Event, key: str) -> ShareGroupState | None:
    if not isinstance(event, ShareGroupEvent):
        return state
    if isinstance(event, ShareGroupDeleted):
        return None
    return _evolve(event, state if state is not None else ShareGroupState(event.group_id))


def _keys(event: Event) -> tuple[str, ...]:
    return (event.group_id,) if isinstance(event, ShareGroupEvent) else ()


SHARE_GROUPS: Projection[ShareGroupState] = Projection(
    "share_groups", _keys, evolve, frozenset(SHARE_GROUP_EVENT_TYPES)
)


# -- decisions ------------------------------------------------------------------------------------

TopicLookup = Callable[[str], tuple[bytes, int] | None]
"""Topic name → (topic id, partition count), or ``None`` if the topic does not exist."""


@dataclass(frozen=True, slots=True)
class ConsumerOptions:
    """What a subscription mode needs to know of a consumer and Kafka's heartbeat cannot say.

    Sent by the bundled client before it joins (extension key ``LogwrightConsumerOptions``); an empty
    ``name`` falls back to the client id, as for any Kafka client.
    """

    name: str = ""
    priority: int = 0
    hash_ranges: tuple[HashRange, ...] = ()
    max_in_flight: int = 0
    lock_duration_ms: int = 0
    """The consumer's ack timeout: its acquisition locks last this long (0: the group's lock duration)."""


MEMBER_ID_MAX_CHARS = 36
"""A share member's id is the UUID string its client generates; Kafka 4.4 refuses a longer one."""


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topics: tuple[str, ...] | None
    """``None``: unchanged since the last heartbeat (clients send it only when it changes)."""
    client_id: str = ""
    client_host: str = ""
    options: ConsumerOptions | None = None
    """The member's declared mode options, used when it joins (epoch 0)."""


def mode_consumer(member_id: str, command: ShareHeartbeat) -> ModeConsumer:
    """The consumer a joining member is to its subscription mode."""
    options = command.options or ConsumerOptions()
    return ModeConsumer(member_id, name=options.name or command.client_id or member_id, priority=options.priority,
                        hash_ranges=options.hash_ranges, max_in_flight=options.max_in_flight)


def target_assignment(subscribed: Sequence[str], topics: TopicLookup, mode: SubscriptionMode,
                      membership: Membership, member_id: str) -> ShareAssignment:
    """The partitions of the subscribed topics that exist and that the mode lets the member acquire from
    (with Shared: all of them, the simple assignor's homogeneous case)."""
    assignment = []
    for name in sorted(set(subscribed)):
        found = topics(name)
        if found is not None and found[1] > 0:
            partitions = tuple(sorted(mode.assigned_partitions(membership, member_id, found[1])))
            if partitions:
                assignment.append((name, found[0], partitions))
    return tuple(assignment)


def fold(state: ShareGroupState | None, events: Sequence[Event], group_id: str) -> ShareGroupState:
    """``state`` with ``events`` applied, as the projection will see it once they are appended."""
    folded = state if state is not None else ShareGroupState(group_id)
    for event in events:
        folded = _evolve(event, folded)
    return folded


SHARE_GROUP_MAX_SIZE = 200
"""``group.share.max.size``'s default, Kafka 4.4's."""


def heartbeat(
    state: ShareGroupState | None, command: ShareHeartbeat, topics: TopicLookup, mode: SubscriptionMode,
    max_size: int = SHARE_GROUP_MAX_SIZE,
) -> tuple[str, list[Event]]:
    """Decide one ShareGroupHeartbeat: the member id to answer with and the events to append; ``max_size`` is
    ``group.share.max.size``.

    Raises `UnknownGroup` (a heartbeat other than a join for a group that does not exist), `UnknownMember`,
    `FencedMemberEpoch`, `InvalidRequest` (a member id longer than a UUID's 36 characters, no group or member id, an
    empty rack id, an epoch below -1, a join naming no topic), `GroupMaxSizeReached` (a member new to a full group,
    whatever its epoch) or the mode's `ConsumerBusy` without changing anything; the refusals are Kafka 4.4's
    (tests/integration/test_share_group_heartbeat_errors.py and test_group_max_size.py run on both).
    """
    group_id = command.group_id
    if len(command.member_id) > MEMBER_ID_MAX_CHARS:  # checked first, as Kafka 4.4 does
        raise InvalidRequest(f"a share group member id has at most {MEMBER_ID_MAX_CHARS} characters (a UUID's)")
    if not group_id:
        raise InvalidRequest("a share group heartbeat needs a non-empty group id")
    if command.rack_id == "":
        raise InvalidRequest("RackId can't be empty.")
    if not command.member_id:  # v1: the client names itself (Kafka: "MemberId can't be empty.")
        raise InvalidRequest("a share group heartbeat needs a non-empty member id: the client generates it")
    if command.member_epoch < LEAVE_EPOCH:
        raise InvalidRequest(f"member epoch {command.member_epoch} is not valid: -1 leaves, 0 joins, above that "
                             "is the member's epoch")
    if state is None and command.member_epoch != JOIN_EPOCH:
        raise UnknownGroup(f"share group {quoted(group_id)} does not exist; join with epoch 0")
    member = state.member(command.member_id) if state is not None else None
    if command.member_epoch == LEAVE_EPOCH:
        if member is None:
            raise UnknownMember(f"member {quoted(command.member_id)} is not in share group {quoted(group_id)}")
        return command.member_id, leave(state, command.member_id, "left the group", mode)
    joining_with = command.subscribed_topics if command.member_epoch == JOIN_EPOCH else None
    if command.member_epoch == JOIN_EPOCH and not joining_with:
        raise InvalidRequest("the first heartbeat of a share group member must name the topics it subscribes to")
    if member is None and state is not None and len(state.members) >= max_size:
        raise GroupMaxSizeReached(f"The share group has reached its maximum capacity of {max_size} members.")
    events: list[Event] = []
    if joining_with is not None:  # a join, its topics named (refused above when not)
        member_id = command.member_id
        current_membership = state.mode_membership() if state is not None else Membership(group_id)
        membership = mode.join(current_membership, mode_consumer(member_id, command))
        events.append(ShareMemberJoined(group_id, member_id, command.client_id, command.client_host,
                                        command.rack_id, tuple(sorted(set(joining_with))),
                                        command.options.lock_duration_ms if command.options else 0))
        events.append(ShareMembershipChanged(group_id, member_id, membership))
    else:
        if member is None:
            raise UnknownMember(f"member {quoted(command.member_id)} is not in share group {quoted(group_id)}; "
                                "rejoin with epoch 0")
        if command.member_epoch != member.member_epoch:
            raise FencedMemberEpoch(
                f"member {quoted(member.member_id)} of share group {quoted(group_id)} sent epoch "
                f"{command.member_epoch}, its current epoch is {member.member_epoch}; rejoin with epoch 0"
            )
        member_id = member.member_id
        wanted = tuple(sorted(set(command.subscribed_topics))) if command.subscribed_topics is not None else None
        if wanted is not None and wanted != member.subscribed_topics:
            events.append(ShareMemberSubscribed(group_id, member_id, wanted))
    folded = fold(state, events, group_id)
    current = folded.member(member_id)
    assert current is not None
    assignment = target_assignment(current.subscribed_topics, topics, mode, folded.mode_membership(), member_id)
    moved = assignment != current.assignment
    if command.member_epoch == JOIN_EPOCH or moved or current.member_epoch != folded.group_epoch:
        # a member takes the group's epoch whenever it is behind, moved or not, as Kafka 4.4's share assignment
        # builder does; a member already there whose partitions moved (a topic grew) moves the group on
        epoch = folded.group_epoch + 1 if moved and current.member_epoch >= folded.group_epoch else folded.group_epoch
        events.append(ShareMemberAssigned(group_id, member_id, epoch, assignment))
    return member_id, events


def leave(state: ShareGroupState | None, member_id: str, reason: str, mode: SubscriptionMode) -> list[Event]:
    """A member leaves or is given up on (session timeout): nothing if it is already gone."""
    if state is None or state.member(member_id) is None:
        return []
    membership = mode.leave(state.mode_membership(), member_id)
    return [ShareMemberLeft(state.group_id, member_id, reason),
            ShareMembershipChanged(state.group_id, member_id, membership)]


def delete(state: ShareGroupState | None, group_id: str, cursor_partitions: Iterable[int]) -> list[Event]:
    """DeleteGroups of a share group: only an empty one, and its cursors (on ``cursor_partitions``) go with it.

    Raises `UnknownGroup` or `NonEmptyGroup` (Kafka's GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP). The group's
    config overrides stay, as Kafka 4.4 keeps them: a group of the same name made later finds them.
    """
    if state is None:
        raise UnknownGroup(f"share group {quoted(group_id)} does not exist")
    if state.members:
        raise NonEmptyGroup(f"share group {quoted(group_id)} still has {len(state.members)} members; they must leave "
                            "(or their sessions time out) before it can be deleted")
    return [*(SubscriptionDeleted(group_id, partition_id) for partition_id in sorted(cursor_partitions)),
            ShareGroupDeleted(group_id, "")]


def check_mode_change(state: ShareGroupState | None, group_id: str, before: str, after: str) -> None:
    """Refuse a change of the group's subscription mode while it has members (`InvalidConfig`).

    The mode's membership (key-hash ownership included) was built by the old mode, and the new one could
    not take over members it would have refused (a second member of an exclusive subscription). Setting
    the value it already has is no change, so every subscriber may name the mode it expects.
    """
    if before == after or state is None or not state.members:
        return
    raise InvalidConfig(
        f"logwright.subscription.mode of share group {quoted(group_id)} is {before!r} and it has {len(state.members)} "
        f"members: it cannot become {after!r} until they leave (or their sessions time out)")
