"""Kafka 4.4's online migration of a group with members between the classic and the consumer protocol.

Upgrade: a classic group with members becomes a consumer group when a consumer-protocol member joins it.

Kafka 4.4 converts the group in the joining heartbeat, as ``GroupMetadataManager.convertToConsumerGroup`` and
``ConsumerGroup.fromClassicGroup`` do: each classic member becomes a classic member of the consumer group at the
classic generation as its epoch, Stable, owning what its last SyncGroup gave it (its target too), subscribed to
what its subscription in the group's protocol names; the group epoch and the target's epoch are that generation.
The joining heartbeat then goes on as in any consumer group: the group epoch moves past the generation and the
classic members are told to rejoin (`classic_members`). Refusals are Kafka's GROUP_ID_NOT_FOUND, with its words.
What the members' bytes say is read by the caller (`UpgradingMember`): this module is pure.

Downgrade: when members leave a consumer group (a leave, LeaveGroup, a timeout) and only classic members stay, it
becomes a classic group again (``group.consumer.migration.policy`` downgrade or bidirectional, and no more members
than ``group.max.size``), as ``convertToClassicGroup`` does: Stable at the group epoch as its generation, each member
holding its target assignment in the consumer protocol's format, the protocol the members vote for, no leader; then
a rebalance starts, so they rejoin the classic way. A classic static member that takes the place of the last
consumer-protocol one downgrades the group in its JoinGroup (Kafka 4.4's ``classicGroupJoinToConsumerGroup``): it
holds what the member it replaces was assigned, and no rebalance starts unless its join moved the group epoch past the
target's (a stale assignment).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from logwright.core.consumer_groups.classic_members import PROTOCOL_TYPE, ClassicSubscription
from logwright.core.consumer_groups.consumer_assignors import DEFAULT_ASSIGNORS
from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState, ConsumerMember, MemberState, fold
from logwright.core.consumer_groups.consumer_reconciliation import Topics, choose_assignor, subscription_metadata
from logwright.core.consumer_groups.topic_patterns import PatternCompiler
from logwright.core.errors import UnknownGroup
from logwright.core.events import (
    AssignmentsSynced,
    ClassicGroupUpgraded,
    ConsumerGroupDowngraded,
    Event,
    GenerationStarted,
    MemberJoined,
    RebalanceStarted,
)
from logwright.core.events.consumer_groups import (
    ConsumerGroupEpochBumped,
    ConsumerMemberReconciled,
    ConsumerMemberSubscribed,
    ConsumerTargetAssignmentComputed,
    TopicPartitions,
)
from logwright.core.groups.groups import GroupMember, GroupState, select_protocol


@dataclass(frozen=True, slots=True)
class UpgradingMember:
    """A classic member's bytes, read: its subscription in the group's protocol (``None``: it does not read) and its
    assignment (``None``: it does not read; ``custom_user_data``: it carries user data of a custom assignor)."""

    member: GroupMember
    subscription: ClassicSubscription | None
    assigned: TopicPartitions | None
    custom_user_data: bool = False


def check_upgrade(group: GroupState, upgrade_enabled: bool, max_size: int) -> None:
    """Kafka's ``validateOnlineUpgrade``, in its order."""
    if not upgrade_enabled:
        raise UnknownGroup(f"Cannot upgrade classic group {group.group_id} to consumer group because online upgrade "
                           "is disabled.")
    if group.protocol_type != PROTOCOL_TYPE:
        raise UnknownGroup(f"Cannot upgrade classic group {group.group_id} to consumer group because the group does "
                           "not use the consumer embedded protocol.")
    if len(group.members) > max_size:
        raise UnknownGroup(f"Cannot upgrade classic group {group.group_id} to consumer group because the group size "
                           "exceeds the consumer group maximum size.")


def upgrade(group: GroupState, members: Sequence[UpgradingMember], topics: Topics, patterns: PatternCompiler,
            now_ms: int, assignors: Sequence[str] = DEFAULT_ASSIGNORS) -> list[Event]:
    """The events that turn ``group`` into a consumer group of classic members (`check_upgrade` first). Raises
    `UnknownGroup` when a member's bytes do not read, or carry a custom assignor's user data, as Kafka refuses."""
    group_id = group.group_id
    generation = group.generation
    events: list[Event] = [ClassicGroupUpgraded(group_id, generation, now_ms)]
    targets: list[tuple[str, TopicPartitions]] = []
    for upgrading in members:
        member = upgrading.member
        if upgrading.custom_user_data:
            raise UnknownGroup(f"Cannot upgrade classic group {group_id} to consumer group because an unsupported "
                               "custom assignor is in use. Please refer to the documentation or switch to a default "
                               "assignor before re-attempting the upgrade.")
        if upgrading.assigned is None or upgrading.subscription is None:
            raise UnknownGroup(f"Cannot upgrade classic group {group_id} to consumer group because the embedded "
                               "consumer protocol is malformed.")
        subscription = upgrading.subscription
        events.append(ConsumerMemberSubscribed(
            group_id, member.member_id, instance_id=member.group_instance_id, rack_id=subscription.rack_id,
            client_id=member.client_id, client_host=member.client_host,
            rebalance_timeout_ms=member.rebalance_timeout_ms, server_assignor=None,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))), subscribed_topic_regex=None,
            classic_session_timeout_ms=member.session_timeout_ms, classic_protocols=member.protocols))
        events.append(ConsumerMemberReconciled(group_id, member.member_id, generation, generation,
                                               MemberState.STABLE, upgrading.assigned, ()))
        targets.append((member.member_id, upgrading.assigned))
    state = fold(None, events, group_id)
    events.append(ConsumerGroupEpochBumped(group_id, "", generation, subscription_metadata(state, topics, patterns)))
    events.append(ConsumerTargetAssignmentComputed(group_id, "", generation, choose_assignor(state, assignors),
                                                   tuple(sorted(targets)), 0))
    return events


def downgrades(state: ConsumerGroupState, leaving: Collection[str], downgrade_enabled: bool,
               classic_max_size: int) -> bool:
    """Kafka's ``validateOnlineDowngradeWithFencedMembers``: members stay, every one of them classic, the policy
    allows downgrades and they fit a classic group."""
    staying = [member for member in state.members if member.member_id not in leaving]
    return (bool(staying) and all(member.uses_classic_protocol for member in staying) and downgrade_enabled
            and len(staying) <= classic_max_size)


def downgrades_on_replacement(state: ConsumerGroupState, replaced_id: str, downgrade_enabled: bool,
                              classic_max_size: int) -> bool:
    """Kafka 4.4's ``validateOnlineDowngradeWithReplacedMember``: a classic static member takes ``replaced_id``'s
    place, every other member is classic, the policy allows downgrades and the group fits a classic one."""
    return (all(member.uses_classic_protocol for member in state.members if member.member_id != replaced_id)
            and downgrade_enabled and len(state.members) <= classic_max_size)


def downgrade(state: ConsumerGroupState, leaving: Collection[str], now_ms: int,
              encode_assignment: Callable[[ConsumerMember, str | None, TopicPartitions], bytes],
              joining: ConsumerMember | None = None, stale: bool = False) -> list[Event]:
    """The events that make ``state``, less the ``leaving`` members, a classic group (`downgrades` or
    `downgrades_on_replacement` said so). ``joining`` is a classic static member taking the place of the member of
    its instance id (which ``leaving`` names): it holds that member's target. A downgrade by leaving starts a
    rebalance, one by replacement only when ``stale`` (its join moved the group epoch past the target's).
    ``encode_assignment`` writes a member's target in the consumer protocol's format of its subscription in the
    group's protocol."""
    group_id = state.group_id
    holding = [(member, state.target(member.member_id)) for member in state.members
               if member.member_id not in leaving]
    if joining is not None:
        replaced = state.static_member(joining.instance_id) if joining.instance_id is not None else None
        holding.append((joining, state.target(replaced.member_id) if replaced is not None else ()))
    generation = state.group_epoch
    events: list[Event] = [ConsumerGroupDowngraded(group_id, generation, now_ms)]
    classic: list[GroupMember] = []
    for member, _ in holding:
        timeout = member.classic_session_timeout_ms or 0
        events.append(MemberJoined(group_id, member.member_id, member.instance_id, member.client_id,
                                   member.client_host, timeout, member.rebalance_timeout_ms, PROTOCOL_TYPE,
                                   member.classic_protocols))
        classic.append(GroupMember(member.member_id, member.instance_id, member.client_id, member.client_host,
                                   timeout, member.rebalance_timeout_ms, member.classic_protocols))
    protocol = select_protocol(classic)
    events.append(GenerationStarted(group_id, generation, protocol, None, now_ms))
    events.append(AssignmentsSynced(group_id, generation, tuple(
        (member.member_id, encode_assignment(member, protocol, target)) for member, target in holding)))
    if joining is None:
        events.append(RebalanceStarted(group_id, f"Downgrade group {group_id} from consumer to classic for member "
                                                 "leaving."))
    elif stale:
        events.append(RebalanceStarted(group_id, f"Downgrade group {group_id} from consumer to classic with stale "
                                                 "assignment."))
    return events
