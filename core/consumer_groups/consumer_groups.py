"""KIP-848 consumer groups: the persisted state, folded from `consumer_group_events`.

A group has a group epoch (bumped by every change of membership, subscriptions or subscribed topics), a
target assignment computed for an epoch (``assignment_epoch``), and per member the assignment it has
reconciled to so far with its member epoch. The decisions are in `consumer_reconciliation`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import singledispatch
from typing import Any, ClassVar

from logwright.core.events import (
    ClassicGroupUpgraded,
    ConsumerGroupDowngraded,
    EmptyGroupConverted,
    Event,
    GroupDeleted,
)
from logwright.core.events.consumer_groups import (
    CONSUMER_GROUP_EVENT_TYPES,
    ConsumerGroupEpochBumped,
    ConsumerGroupEvent,
    ConsumerMemberLeft,
    ConsumerMemberReconciled,
    ConsumerMemberSubscribed,
    ConsumerStaticMemberReplaced,
    ConsumerTargetAssignmentComputed,
    SubscriptionMetadata,
    TopicPartitions,
)
from logwright.core.events.groups import CONSUMER
from logwright.core.member_tuples import member_by_id, with_member
from logwright.core.projection import Projection

DEFAULT_ASSIGNOR = "uniform"
STATIC_LEAVE_EPOCH = -2


class MemberState(StrEnum):
    """Kafka's member reconciliation states (ConsumerGroupDescribe does not report them)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    """Must revoke ``revoking`` before it may move to the target epoch."""
    UNRELEASED_PARTITIONS = "unreleased_partitions"
    """At the target epoch, waiting for partitions another member still owns."""


TopicPartition = tuple[str, int]


def as_set(partitions: TopicPartitions) -> frozenset[TopicPartition]:
    return frozenset((topic, index) for topic, indexes in partitions for index in indexes)


def as_tuple(partitions: Iterable[TopicPartition]) -> TopicPartitions:
    by_topic: dict[str, set[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, set()).add(index)
    return tuple((topic, tuple(sorted(by_topic[topic]))) for topic in sorted(by_topic))


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    """Version 2 added the classic protocol's fields (`ConsumerMemberSubscribed`); version 1 rows read their
    defaults."""

    VERSION: ClassVar[int] = 2
    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    server_assignor: str | None
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: str = MemberState.STABLE
    assigned: TopicPartitions = ()
    revoking: TopicPartitions = ()
    classic_session_timeout_ms: int | None = None
    classic_protocols: tuple[tuple[str, bytes], ...] = ()

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        return fields

    @property
    def uses_classic_protocol(self) -> bool:
        """Joined with JoinGroup (Kafka's ``useClassicProtocol``): it syncs, heartbeats and leaves the classic way."""
        return self.classic_session_timeout_ms is not None


@dataclass(frozen=True, slots=True)
class ConsumerGroupState:
    """A new group starts at group and assignment epoch 1, as Kafka 4.3+ (0 is a joining member's epoch, and a member
    may reconcile to the empty assignment of epoch 1 while the first one is computed): its first member gets 2."""

    group_id: str
    group_epoch: int = 1
    assignment_epoch: int = 1
    assignor: str = DEFAULT_ASSIGNOR
    subscription_metadata: SubscriptionMetadata = ()
    members: tuple[ConsumerMember, ...] = ()
    targets: tuple[tuple[str, TopicPartitions], ...] = ()
    assignment_time_ms: int = 0
    """When the target was computed (`ConsumerTargetAssignmentComputed.computed_at_ms`); 0: not paced."""

    def member(self, member_id: str) -> ConsumerMember | None:
        return member_by_id(self.members, member_id)

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        for member in self.members:
            if member.instance_id == instance_id:
                return member
        return None

    def target(self, member_id: str) -> TopicPartitions:
        """A member's target, by bisection: ``targets`` is sorted by owner (a scan per member made describing a
        5,000-member group quadratic)."""
        index = bisect_left(self.targets, member_id, key=lambda target: target[0])
        if index < len(self.targets) and self.targets[index][0] == member_id:
            return self.targets[index][1]
        return ()

    @property
    def phase(self) -> str:
        """Kafka's consumer group states as ListGroups and ConsumerGroupDescribe report them."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(m.member_epoch != self.assignment_epoch or m.state != MemberState.STABLE for m in self.members
               if m.member_epoch != STATIC_LEAVE_EPOCH):
            return "Reconciling"
        return "Stable"


@singledispatch
def _evolve(event: Event, state: ConsumerGroupState) -> ConsumerGroupState:
    return state


@_evolve.register
def _(event: ConsumerMemberSubscribed, state: ConsumerGroupState) -> ConsumerGroupState:
    existing = state.member(event.member_id)
    member = ConsumerMember(event.member_id, event.instance_id, event.rack_id, event.client_id, event.client_host,
                            event.rebalance_timeout_ms, event.server_assignor, event.subscribed_topic_names,
                            event.subscribed_topic_regex, classic_session_timeout_ms=event.classic_session_timeout_ms,
                            classic_protocols=event.classic_protocols)
    if existing is not None:
        member = replace(member, member_epoch=existing.member_epoch,
                         previous_member_epoch=existing.previous_member_epoch, state=existing.state,
                         assigned=existing.assigned, revoking=existing.revoking)
    return replace(state, members=with_member(state.members, member))


@_evolve.register
def _(event: ConsumerGroupEpochBumped, state: ConsumerGroupState) -> ConsumerGroupState:
    return replace(state, group_epoch=event.group_epoch, subscription_metadata=event.subscription_metadata)


@_evolve.register
def _(event: ConsumerTargetAssignmentComputed, state: ConsumerGroupState) -> ConsumerGroupState:
    return replace(state, assignment_epoch=event.assignment_epoch, assignor=event.assignor, targets=event.targets,
                   assignment_time_ms=event.computed_at_ms)


@_evolve.register
def _(event: ConsumerMemberReconciled, state: ConsumerGroupState) -> ConsumerGroupState:
    member = state.member(event.member_id)
    if member is None:
        return state
    updated = replace(member, member_epoch=event.member_epoch, previous_member_epoch=event.previous_member_epoch,
                      state=event.state, assigned=event.assigned, revoking=event.revoking)
    return replace(state, members=with_member(state.members, updated))


@_evolve.register
def _(event: ConsumerMemberLeft, state: ConsumerGroupState) -> ConsumerGroupState:
    members = tuple(member for member in state.members if member.member_id != event.member_id)
    targets = tuple(target for target in state.targets if target[0] != event.member_id)
    return replace(state, members=members, targets=targets)


@_evolve.register
def _(event: ConsumerStaticMemberReplaced, state: ConsumerGroupState) -> ConsumerGroupState:
    old = state.member(event.old_member_id)
    if old is None:
        return state
    members = tuple(m for m in state.members if m.member_id != event.old_member_id)
    new = replace(old, member_id=event.member_id, member_epoch=0, previous_member_epoch=-1,
                  state=MemberState.STABLE, revoking=())
    targets = tuple(sorted(((event.member_id if owner == event.old_member_id else owner), partitions)
                           for owner, partitions in state.targets))
    return replace(state, members=with_member(members, new), targets=targets)


def evolve(state: ConsumerGroupState | None, event: Event, key: str) -> ConsumerGroupState | None:
    if isinstance(event, GroupDeleted | ConsumerGroupDowngraded) or (isinstance(event, EmptyGroupConverted)
                                                                     and event.to != CONSUMER):
        return None
    if isinstance(event, ClassicGroupUpgraded):
        return ConsumerGroupState(event.group)
    if not isinstance(event, ConsumerGroupEvent):
        return state
    return _evolve(event, state if state is not None else ConsumerGroupState(event.group_id))


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, ConsumerGroupEvent):
        return (event.group_id,)
    if isinstance(event, GroupDeleted | EmptyGroupConverted | ClassicGroupUpgraded | ConsumerGroupDowngraded):
        return (event.group,)
    return ()


CONSUMER_GROUPS: Projection[ConsumerGroupState] = Projection(
    "consumer_groups", _keys, evolve, frozenset((*CONSUMER_GROUP_EVENT_TYPES, GroupDeleted, EmptyGroupConverted,
                                               ClassicGroupUpgraded, ConsumerGroupDowngraded))
)


def fold(state: ConsumerGroupState | None, events: Iterable[Event], group_id: str) -> ConsumerGroupState:
    """``state`` with ``events`` applied, as the projection will see it once they are appended."""
    folded = state if state is not None else ConsumerGroupState(group_id)
    for event in events:
        folded = _evolve(event, folded)
    return folded
