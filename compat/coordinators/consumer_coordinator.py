"""The async glue around KIP-848 consumer groups: liveness and the timers on the broker clock.

Decisions are pure (`core.consumer_reconciliation`); this module reads the ``consumer_groups``
projection, stages the events, and keeps in memory what is not persisted: when each member last
heartbeated and by when a member revoking partitions must have done so (its rebalance timeout). A
`DeadlineTimer` sleeps until the earliest of those on ``broker.clock``, and `tick` also runs right after
LogwrightAdvanceClock, so ``serve --manual-clock`` drives both timeouts. The coordinator is built with the
broker (`logwright.compat.wiring`), so after a restart every member's session restarts from the broker's
start, as for classic and share groups.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from logwright.compat.broker import Broker
from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.compat.coordinators.group_coordinator import group_state
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.topic_regex import compile_pattern
from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState, MemberState
from logwright.core.consumer_groups.consumer_reconciliation import (
    ConsumerHeartbeat,
    TopicCatalog,
    heartbeat,
    remove_all,
)
from logwright.core.errors import InconsistentGroupProtocol, UnknownGroup
from logwright.core.events import EmptyGroupConverted, Event
from logwright.core.events.consumer_groups import ConsumerMemberLeft
from logwright.core.events.groups import CONSUMER
from logwright.core.log.catalog import ResourceConfig, resource_key

log = logging.getLogger(__name__)

SESSION_TIMEOUT_REASON = "session timeout"
REBALANCE_TIMEOUT_REASON = "rebalance timeout: partitions not revoked in time"


def consumer_coordinator(broker: Broker) -> ConsumerCoordinator:
    """The broker's KIP-848 consumer group coordinator."""
    return broker.coordinators.consumer_groups


def consumer_group(broker: Broker, group_id: str) -> ConsumerGroupState | None:
    state = broker.store.state("consumer_groups", group_id)
    return state if isinstance(state, ConsumerGroupState) else None


class ConsumerCoordinator:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._last_seen: dict[tuple[str, str], int] = {}
        self._revoke_by: dict[tuple[str, str], int] = {}
        self._members_of: dict[str, set[str]] = {}
        """Each group's members with an entry in either table, so forgetting a group reads only its own."""
        self._topics: tuple[int, TopicCatalog] | None = None
        """The topics as of a catalog version (`Broker.catalog_version`)."""
        self.timer = DeadlineTimer(broker.clock, self.next_deadline, self.tick, "logwright-consumer-groups")
        now = broker.clock.now_ms()
        for group in self.groups():
            for member in group.members:
                self._seen(group.group_id, member.member_id, now)
            self._track(group, now)

    def groups(self) -> list[ConsumerGroupState]:
        return [s for s in self.broker.store.entities("consumer_groups").values()
                if isinstance(s, ConsumerGroupState)]

    def topics(self) -> TopicCatalog:
        """Every topic, kept while the broker's catalog stays as it is: each heartbeat asks, with the regex matches
        of its group's members (`TopicCatalog`)."""
        version = self.broker.catalog_version
        if self._topics is not None and self._topics[0] == version:
            return self._topics[1]
        changed = self.broker.catalog_changes_since(self._topics[0]) if self._topics is not None else None
        if self._topics is None or changed is None:
            catalog = TopicCatalog({topic.name: (topic.topic_id, len(topic.partition_ids))
                                    for topic in self.broker.topics()})
        else:  # the topics created, deleted or grown since: read again, the rest carried over
            states = {name: self.broker.topic(name) for name in changed}
            catalog = self._topics[1].with_changes({
                name: None if state is None else (state.topic_id, len(state.partition_ids))
                for name, state in states.items()})
        self._topics = (version, catalog)
        return catalog

    def _group_setting(self, group_id: str, group_key: str, broker_key: str) -> int:
        stored = self.broker.store.state("catalog", resource_key("group", group_id))
        if isinstance(stored, ResourceConfig):
            for key, value in stored.overrides:
                if key == group_key:
                    return int(value)
        return int(self.broker.broker_config(broker_key))

    def session_timeout_ms(self, group_id: str) -> int:
        return self._group_setting(group_id, "consumer.session.timeout.ms", "group.consumer.session.timeout.ms")

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._group_setting(group_id, "consumer.heartbeat.interval.ms",
                                   "group.consumer.heartbeat.interval.ms")

    async def heartbeat(self, command: ConsumerHeartbeat) -> tuple[str, ConsumerGroupState]:
        """Decide, stage, wait until durable; raises a `DomainError` for a refusal (nothing changed)."""
        classic = group_state(self.broker, command.group_id)
        if classic is not None and classic.members:
            raise InconsistentGroupProtocol(f"group {command.group_id!r} is a classic group with members; a "
                                            "consumer-protocol member cannot join it until they leave")
        if share_coordinator(self.broker).group(command.group_id) is not None:
            raise UnknownGroup(f"group {command.group_id!r} is not a consumer group: it is a share group")
        before = consumer_group(self.broker, command.group_id)
        member_id, events = heartbeat(before, command, self.topics(), lambda: str(uuid.uuid4()), compile_pattern)
        if classic is not None and events:  # an empty classic group: the joining member takes its id over
            events.insert(0, EmptyGroupConverted(command.group_id, CONSUMER, self.broker.clock.now_ms()))
        now = self.broker.clock.now_ms()
        if command.member_epoch == -1 or (command.member_epoch == -2 and before is not None
                                          and not _is_static(before, member_id)):
            self._forget(command.group_id, member_id)
        else:
            self._seen(command.group_id, member_id, now)
            self.timer.schedule(now + self.session_timeout_ms(command.group_id))
        if events:
            self.broker.stage(events)
            await self.broker.durable()
        state = consumer_group(self.broker, command.group_id)
        assert state is not None
        self._track(state, now)
        return member_id, state

    def forget_group(self, group_id: str) -> None:
        """Forget the liveness of a deleted group's members (its own entries: a DeleteGroups of many groups went
        over every member of every group for each)."""
        for member_id in self._members_of.pop(group_id, ()):
            self._last_seen.pop((group_id, member_id), None)
            self._revoke_by.pop((group_id, member_id), None)

    def _seen(self, group_id: str, member_id: str, now: int) -> None:
        self._last_seen[(group_id, member_id)] = now
        self._members_of.setdefault(group_id, set()).add(member_id)

    def _forget(self, group_id: str, member_id: str) -> None:
        self._last_seen.pop((group_id, member_id), None)
        self._revoke_by.pop((group_id, member_id), None)
        members = self._members_of.get(group_id)
        if members is not None:
            members.discard(member_id)
            if not members:
                del self._members_of[group_id]

    def _track(self, state: ConsumerGroupState, now: int) -> None:
        """Start a member's rebalance timeout when it starts revoking; stop it once it has."""
        for member in state.members:
            key = (state.group_id, member.member_id)
            if member.state == MemberState.UNREVOKED_PARTITIONS:
                if key not in self._revoke_by:
                    self._revoke_by[key] = now + member.rebalance_timeout_ms
                    self._members_of.setdefault(state.group_id, set()).add(member.member_id)
                    self.timer.schedule(self._revoke_by[key])
            else:
                self._revoke_by.pop(key, None)

    def tick(self) -> list[Event]:
        """Remove members whose session or rebalance timeout ran out, a group's all at once (one rebalance: one per
        member made 1,000 members timing out together cost 1,000 assignments); stage the events and return them."""
        now = self.broker.clock.now_ms()
        timeouts = self._session_timeouts()
        expired: dict[str, list[tuple[str, str]]] = {}
        for (group_id, member_id), seen in list(self._last_seen.items()):
            if now - seen >= timeouts(group_id):
                expired.setdefault(group_id, []).append((member_id, SESSION_TIMEOUT_REASON))
        for (group_id, member_id), deadline in list(self._revoke_by.items()):
            if now >= deadline:
                expired.setdefault(group_id, []).append((member_id, REBALANCE_TIMEOUT_REASON))
        events: list[Event] = []
        topics = self.topics() if expired else {}
        for group_id, gone in expired.items():
            for member_id, _ in gone:
                self._forget(group_id, member_id)
            state = consumer_group(self.broker, group_id)
            if state is None:
                continue
            removed = remove_all(state, gone, topics, compile_pattern)
            for event in removed:
                if isinstance(event, ConsumerMemberLeft):
                    log.info("consumer group %s: member %s removed (%s)", group_id, event.member_id, event.reason)
            if removed:
                self.broker.stage(removed)
                events.extend(removed)
        return events

    def next_deadline(self) -> int | None:
        """The earliest session or rebalance timeout; ``None`` when no member is tracked."""
        timeouts = self._session_timeouts()
        deadlines = [seen + timeouts(group_id) for (group_id, _), seen in self._last_seen.items()]
        deadlines.extend(self._revoke_by.values())
        return min(deadlines, default=None)

    def _session_timeouts(self) -> Callable[[str], int]:
        """Each group's session timeout, read once per pass over the members (a config lookup per member before)."""
        known: dict[str, int] = {}

        def timeout(group_id: str) -> int:
            found = known.get(group_id)
            if found is None:
                found = known[group_id] = self.session_timeout_ms(group_id)
            return found

        return timeout

    def close(self) -> None:
        self.timer.close()


def _is_static(state: ConsumerGroupState, member_id: str) -> bool:
    member = state.member(member_id)
    return member is not None and member.instance_id is not None

