"""The consumer group coordinator's side of classic members (`core.consumer_groups.classic_members`): their timers.

A classic member of a consumer group lives by its own JoinGroup session timeout, not the group's
``consumer.session.timeout.ms``. Two more deadlines are Kafka's: once a Heartbeat or SyncGroup told it to rejoin, it
must send JoinGroup within its rebalance timeout (the join timeout), and once answered at JoinGroup it must send
SyncGroup within it (the sync timeout); a member that misses either is removed, as by a session timeout. Like
every other liveness deadline here they live in memory, on the broker clock (`ConsumerCoordinator.tick`).
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.topic_regex import compile_pattern
from logwright.compat.wire.consumer_protocol import metadata_version, write_assignment
from logwright.core.consumer_groups.classic_members import (
    ClassicJoin,
    classic_heartbeat,
    classic_join,
    classic_leave,
    classic_sync,
    left_members,
)
from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState, ConsumerMember, fold
from logwright.core.consumer_groups.group_migration import downgrade, downgrades, downgrades_on_replacement
from logwright.core.errors import DomainError, InconsistentGroupProtocol, RebalanceInProgress, UnknownMember, quoted
from logwright.core.events import Event
from logwright.core.events.consumer_groups import ConsumerStaticMemberReplaced, TopicPartitions

if TYPE_CHECKING:
    from logwright.compat.broker import Broker
    from logwright.compat.coordinators.deadline_timer import DeadlineTimer
    from logwright.core.consumer_groups.consumer_reconciliation import AssignmentPace, TopicCatalog

JOIN_TIMEOUT_REASON = "did not rejoin within its rebalance timeout (classic member)"
SYNC_TIMEOUT_REASON = "did not send SyncGroup within its rebalance timeout (classic member)"
MIGRATION_DISABLED = "disabled"
DOWNGRADE_POLICIES = ("downgrade", "bidirectional")
"""``group.consumer.migration.policy`` values that make a consumer group of classic members a classic group again."""


class ClassicMembersMixin:
    """Classic members' requests and deadlines, for `ConsumerCoordinator` (which provides the members' liveness
    tables, the topics and the group settings this reads)."""

    broker: Broker
    timer: DeadlineTimer
    _rejoin_by: dict[tuple[str, str], int]
    _sync_by: dict[tuple[str, str], int]
    _classic_session: dict[tuple[str, str], int]

    # provided by ConsumerCoordinator
    def _seen(self, group_id: str, member_id: str, now: int) -> None:
        raise NotImplementedError

    def _forget(self, group_id: str, member_id: str) -> None:
        raise NotImplementedError

    def _track(self, state: ConsumerGroupState, now: int) -> None:
        raise NotImplementedError

    def _group_topics(self, group_id: str) -> TopicCatalog:
        raise NotImplementedError

    def assignors(self) -> tuple[str, ...]:
        raise NotImplementedError

    def assignment_pace(self, group_id: str) -> AssignmentPace:
        raise NotImplementedError

    def migration_policy(self) -> str:
        return str(self.broker.broker_config("group.consumer.migration.policy")).lower()

    def check_classic_member_may_join(self, group_id: str) -> None:
        """Kafka 4.4's ``throwIfClassicMemberCannotJoinConsumerGroup``: only a disabled migration keeps them out."""
        if self.migration_policy() == MIGRATION_DISABLED:
            raise InconsistentGroupProtocol(f"Cannot join the consumer group {group_id} with the classic protocol "
                                            "because the group migration is disabled.")

    def _classic_seen(self, member: ConsumerMember, group_id: str, now: int) -> None:
        key = (group_id, member.member_id)
        if member.classic_session_timeout_ms is not None:
            self._classic_session[key] = member.classic_session_timeout_ms
        self._seen(group_id, member.member_id, now)
        self._schedule(now + (member.classic_session_timeout_ms or 0))

    def _schedule(self, deadline: int) -> None:
        self.timer.schedule(deadline)

    def _rejoin_within(self, state: ConsumerGroupState, member: ConsumerMember, now: int) -> None:
        """Start the member's join timeout unless it runs already (Kafka's
        ``scheduleConsumerGroupJoinTimeoutIfAbsent``)."""
        key = (state.group_id, member.member_id)
        if key not in self._rejoin_by:
            self._rejoin_by[key] = now + member.rebalance_timeout_ms
            self._schedule(self._rejoin_by[key])

    async def classic_join(self, state: ConsumerGroupState, command: ClassicJoin) -> tuple[ConsumerMember,
                                                                                         ConsumerGroupState]:
        """Decide, stage, wait until durable: the member as answered and the group after. Raises a `DomainError`."""
        group_id = command.group_id
        self.check_classic_member_may_join(group_id)
        member_id, events = classic_join(
            state, command, self._group_topics(group_id), new_member_id, compile_pattern,
            self.assignment_pace(group_id), int(self.broker.broker_config("group.consumer.max.size")), self.assignors())
        replaced = state.static_member(command.instance_id) if command.instance_id is not None else None
        if replaced is not None and downgrades_on_replacement(
                state, replaced.member_id, self.migration_policy() in DOWNGRADE_POLICIES,
                int(self.broker.broker_config("group.max.size"))):
            return await self._replace_into_classic(state, replaced, member_id, events)
        now = self.broker.clock.now_ms()
        for event in events:
            if isinstance(event, ConsumerStaticMemberReplaced) and event.old_member_id != event.member_id:
                self._forget(group_id, event.old_member_id)
        self.broker.stage(events)
        await self.broker.durable()
        after = self._consumer_group(group_id)
        member = after.member(member_id) if after is not None else None
        if after is None or member is None:  # removed meanwhile (a timeout while the join was written)
            raise UnknownMember(f"member {quoted(member_id)} left consumer group {quoted(group_id)} while joining")
        key = (group_id, member_id)
        self._rejoin_by.pop(key, None)
        self._classic_seen(member, group_id, now)
        self._sync_by[key] = now + member.rebalance_timeout_ms
        self._schedule(self._sync_by[key])
        self._track(after, now)
        return member, after

    async def _replace_into_classic(self, state: ConsumerGroupState, replaced: ConsumerMember, member_id: str,
                                    joined: list[Event]) -> tuple[ConsumerMember, ConsumerGroupState]:
        """A classic static member took the place of the last consumer-protocol member: the group becomes a classic
        group in this join (`group_migration.downgrade`), and the join's own events, which only led there, are not
        written. Answered with its epoch after reconciling, as Kafka does, or unreconciled (0) when its join moved
        the group epoch past the target's."""
        group_id = state.group_id
        after = fold(state, joined, group_id)
        joiner = after.member(member_id)
        assert joiner is not None, "classic_join adds the member it answers"
        stale = after.group_epoch > state.assignment_epoch
        if stale:
            joiner = replace(joiner, member_epoch=0)
        self.broker.stage(downgrade(state, (replaced.member_id,), self.broker.clock.now_ms(), _encoded_target,
                                   joining=joiner, stale=stale))
        self.hand_to_classic(group_id)  # forgets every member's liveness here, the replaced one's too
        await self.broker.durable()
        return joiner, after

    def classic_sync(self, state: ConsumerGroupState, member_id: str, instance_id: str | None, generation: int,
                     protocol_type: str | None, protocol_name: str | None) -> ConsumerMember:
        now = self.broker.clock.now_ms()
        try:
            member = classic_sync(state, member_id, instance_id, generation, protocol_type, protocol_name)
        except RebalanceInProgress:
            found = state.member(member_id)
            if found is not None:
                self._rejoin_within(state, found, now)
            raise
        self._sync_by.pop((state.group_id, member.member_id), None)
        self._classic_seen(member, state.group_id, now)
        return member

    def classic_heartbeat(self, state: ConsumerGroupState, member_id: str, instance_id: str | None,
                          generation: int) -> bool:
        """Whether to answer REBALANCE_IN_PROGRESS; raises a `DomainError` for a refusal."""
        now = self.broker.clock.now_ms()
        member, rejoin = classic_heartbeat(state, member_id, instance_id, generation)
        self._classic_seen(member, state.group_id, now)
        if rejoin:
            self._rejoin_within(state, member, now)
        return rejoin

    async def classic_leave(self, state: ConsumerGroupState, leaving: Sequence[tuple[str, str | None]]
                            ) -> list[DomainError | None]:
        outcomes, events = classic_leave(state, leaving, self._group_topics(state.group_id), compile_pattern,
                                         self.assignors())
        for member_id in left_members(events):
            self._forget(state.group_id, member_id)
        downgraded = self.downgraded(state, events)
        if downgraded is not None:
            events = downgraded
        if events:
            self.broker.stage(events)
            if downgraded is not None:
                self.hand_to_classic(state.group_id)
            await self.broker.durable()
        return outcomes

    def downgraded(self, before: ConsumerGroupState, events: list[Event]) -> list[Event] | None:
        """The events of a classic group in place of ``events`` (they remove members from ``before``) when only
        classic members stay and the policy allows it (`group_migration.downgrade`); ``None`` otherwise."""
        leaving = left_members(events)
        if not leaving or not downgrades(before, leaving, self.migration_policy() in DOWNGRADE_POLICIES,
                                         int(self.broker.broker_config("group.max.size"))):
            return None
        return downgrade(before, leaving, self.broker.clock.now_ms(), _encoded_target)

    def hand_to_classic(self, group_id: str) -> None:
        """After a downgrade was staged: the classic coordinator keeps the members' liveness from now on."""
        self.forget_group(group_id)
        coordinator(self.broker).take_over(group_id)

    def forget_group(self, group_id: str) -> None:
        raise NotImplementedError

    def _consumer_group(self, group_id: str) -> ConsumerGroupState | None:
        state = self.broker.store.state("consumer_groups", group_id)
        return state if isinstance(state, ConsumerGroupState) else None


def new_member_id() -> str:
    """A member id the coordinator hands out, as Kafka's ``Uuid.randomUuid().toString()``: 16 random bytes in URL-safe
    base64 without padding (22 characters), never starting with a dash (Kafka draws again then)."""
    while True:
        text = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _encoded_target(member: ConsumerMember, protocol: str | None, partitions: TopicPartitions) -> bytes:
    """A member's target as a downgraded group's assignment: in the version of its subscription in the group's
    protocol, as Kafka's ``ClassicGroup.fromConsumerGroup`` writes it."""
    metadata = next((data for name, data in member.classic_protocols if name == protocol), b"")
    return write_assignment(partitions, metadata_version(metadata))
