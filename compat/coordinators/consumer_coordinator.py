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
from collections.abc import Callable
from dataclasses import dataclass

from logwright.compat.broker import Broker
from logwright.compat.coordinators.consumer_classic import (
    JOIN_TIMEOUT_REASON,
    SYNC_TIMEOUT_REASON,
    ClassicMembersMixin,
    new_member_id,
)
from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.compat.coordinators.group_coordinator import coordinator, group_state
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.topic_regex import compile_pattern
from logwright.compat.wire.consumer_protocol import read_assignment, read_subscription
from logwright.core.consumer_groups.consumer_assignors import assignor_names
from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState, MemberState, fold
from logwright.core.consumer_groups.consumer_reconciliation import (
    AssignmentPace,
    ConsumerHeartbeat,
    TopicCatalog,
    check_heartbeat,
    heartbeat,
    remove_all,
)
from logwright.core.consumer_groups.group_migration import UpgradingMember, check_upgrade, upgrade
from logwright.core.consumer_groups.topic_patterns import PatternError
from logwright.core.errors import UnknownGroup
from logwright.core.events import EmptyGroupConverted, Event
from logwright.core.events.consumer_groups import ConsumerMemberLeft
from logwright.core.events.groups import CONSUMER
from logwright.core.groups.groups import GroupState, select_protocol
from logwright.core.log.catalog import ResourceConfig, resource_key

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RegexResolution:
    """A group's regexes resolved for one principal (`ConsumerCoordinator.regex_topics`)."""

    generation: tuple[int, int]
    """The broker's catalog version and the authorizer's generation it was resolved at."""
    regexes: frozenset[str]
    allowed: frozenset[str]
    """The topics the regexes matched that the principal may DESCRIBE."""
    topics: TopicCatalog

UPGRADE_POLICIES = ("upgrade", "bidirectional")
"""``group.consumer.migration.policy`` values that let a consumer-protocol member join a classic group with members."""

SESSION_TIMEOUT_REASON = "session timeout"
REBALANCE_TIMEOUT_REASON = "rebalance timeout: partitions not revoked in time"


def consumer_coordinator(broker: Broker) -> ConsumerCoordinator:
    """The broker's KIP-848 consumer group coordinator."""
    return broker.coordinators.consumer_groups


def consumer_group(broker: Broker, group_id: str) -> ConsumerGroupState | None:
    state = broker.store.state("consumer_groups", group_id)
    return state if isinstance(state, ConsumerGroupState) else None


class ConsumerCoordinator(ClassicMembersMixin):
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._last_seen: dict[tuple[str, str], int] = {}
        self._revoke_by: dict[tuple[str, str], int] = {}
        self._rejoin_by: dict[tuple[str, str], int] = {}
        """Classic members told to rejoin: by when their JoinGroup must come (`consumer_classic`)."""
        self._sync_by: dict[tuple[str, str], int] = {}
        """Classic members answered at JoinGroup: by when their SyncGroup must come."""
        self._classic_session: dict[tuple[str, str], int] = {}
        """Classic members' own session timeouts (the group's applies to the others)."""
        self._members_of: dict[str, set[str]] = {}
        """Each group's members with an entry in either table, so forgetting a group reads only its own."""
        self._topics: tuple[int, TopicCatalog] | None = None
        """The topics as of a catalog version (`Broker.catalog_version`)."""
        self._resolved: dict[str, RegexResolution] = {}
        """Each group's regexes as resolved for a principal, while an authorizer is set (`regex_topics`)."""
        self.timer = DeadlineTimer(broker.clock, self.next_deadline, self.tick, "logwright-consumer-groups")
        now = broker.clock.now_ms()
        for group in self.groups():
            for member in group.members:
                if member.classic_session_timeout_ms is not None:
                    self._classic_session[(group.group_id, member.member_id)] = member.classic_session_timeout_ms
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

    def assignment_pace(self, group_id: str) -> AssignmentPace:
        """The group's ``consumer.assignment.interval.ms`` (else the broker's), within the broker's min and max, as
        Kafka clamps it, at the broker clock's now."""
        interval = self._group_setting(group_id, "consumer.assignment.interval.ms",
                                       "group.consumer.assignment.interval.ms")
        low = int(self.broker.broker_config("group.consumer.min.assignment.interval.ms"))
        high = int(self.broker.broker_config("group.consumer.max.assignment.interval.ms"))
        return AssignmentPace(self.broker.clock.now_ms(), min(max(interval, low), max(low, high)))

    def assignors(self) -> tuple[str, ...]:
        """``group.consumer.assignors`` by name, the default first (static: checked when the broker starts)."""
        return assignor_names(self.broker.broker_config("group.consumer.assignors"))

    async def heartbeat(self, command: ConsumerHeartbeat,
                        describable: Callable[[str], bool] | None = None) -> tuple[str, ConsumerGroupState]:
        """Decide, stage, wait until durable; raises a `DomainError` for a refusal (nothing changed).
        ``describable`` says whether the heartbeat's principal may DESCRIBE a topic (``None``: no authorizer)."""
        classic = group_state(self.broker, command.group_id)
        if share_coordinator(self.broker).group(command.group_id) is not None:
            raise UnknownGroup(f"group {command.group_id!r} is not a consumer group: it is a share group")
        before = consumer_group(self.broker, command.group_id)
        upgrading: list[Event] = []
        if classic is not None and classic.members:  # Kafka's online upgrade, in the joining heartbeat
            upgrading = self.upgrade(classic, command)
            before = fold(None, upgrading, command.group_id)
        topics = self.regex_topics(before, command, describable)
        member_id, events = heartbeat(before, command, topics, new_member_id, compile_pattern,
                                      self.assignment_pace(command.group_id),
                                      int(self.broker.broker_config("group.consumer.max.size")), self.assignors())
        downgraded = self.downgraded(before, events) if before is not None and command.member_epoch < 0 else None
        if downgraded is not None:
            events = downgraded
        if upgrading:
            events[:0] = upgrading
            coordinator(self.broker).hand_over(command.group_id)
            now = self.broker.clock.now_ms()
            for member in before.members if before is not None else ():
                self._classic_seen(member, command.group_id, now)
        elif classic is not None and events:  # an empty classic group: the joining member takes its id over
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
            if downgraded is not None:
                self.hand_to_classic(command.group_id)
            await self.broker.durable()
        state = consumer_group(self.broker, command.group_id)
        if state is None:  # it left, and the group became a classic group
            return member_id, ConsumerGroupState(command.group_id)
        self._track(state, now)
        return member_id, state

    def upgrade(self, classic: GroupState, command: ConsumerHeartbeat) -> list[Event]:
        """The events that make a classic group with members a consumer group for this joining heartbeat, or the
        refusal Kafka 4.4 answers (GROUP_ID_NOT_FOUND): a heartbeat that is not a join, a migration policy without
        upgrades, a group not on the consumer protocol or larger than ``group.consumer.max.size``, members' bytes
        that do not read."""
        check_heartbeat(command, compile_pattern, self.assignors())
        if command.member_epoch != 0:
            raise UnknownGroup(f"Group {command.group_id} is not a consumer group.")
        check_upgrade(classic, self.migration_policy() in UPGRADE_POLICIES,
                      int(self.broker.broker_config("group.consumer.max.size")))
        members = []
        # a group still in its first rebalance has no protocol yet: the one its members would elect (Kafka fails the
        # heartbeat there, reading a protocol name it does not have: UNKNOWN_SERVER_ERROR)
        protocol = classic.protocol_name or select_protocol(classic.members)
        for member in classic.members:
            assigned, custom = read_assignment(member.assignment)
            metadata = member.metadata(protocol) if protocol is not None else b""
            members.append(UpgradingMember(member, read_subscription(metadata) if metadata else None, assigned,
                                           custom))
        return upgrade(classic, members, self.topics(), compile_pattern, self.broker.clock.now_ms(),
                       self.assignors())

    def regex_topics(self, group: ConsumerGroupState | None, command: ConsumerHeartbeat,
                     describable: Callable[[str], bool] | None) -> TopicCatalog:
        """The topics a heartbeat decides with. With an authorizer, the group's subscribed regexes match only the
        topics the principal of the heartbeat that resolved them may DESCRIBE, as Kafka's TopicRegexResolver
        filters a group's resolution with the context of the heartbeat that started it. They are resolved again at
        a heartbeat once a regex is new to the group, a topic was created, deleted or grown, or an ACL changed
        (Kafka waits for new topics only, so a DESCRIBE revoked from a regex subscriber held until the next topic
        was created: ours). Without an authorizer, or for a group without regexes, every match counts."""
        topics = self.topics()
        members = group.members if group is not None else ()
        regexes = {regex for regex in (command.subscribed_topic_regex,
                                       *(member.subscribed_topic_regex for member in members)) if regex}
        authorizer = self.broker.authorizer
        if authorizer is None or describable is None or not regexes:
            self._resolved.pop(command.group_id, None)
            return topics
        generation = (self.broker.catalog_version, authorizer.generation)
        resolved = self._resolved.get(command.group_id)
        if resolved is not None and resolved.generation == generation and regexes <= resolved.regexes:
            return resolved.topics
        matched: set[str] = set()
        for regex in regexes:
            try:
                matched.update(topics.matching(regex, compile_pattern(regex)))
            except PatternError:
                continue  # refused by the heartbeat's own checks
        allowed = frozenset(name for name in matched if describable(name))
        resolution = RegexResolution(generation, frozenset(regexes), allowed, topics.regex_matches_within(allowed))
        self._resolved[command.group_id] = resolution
        return resolution.topics

    def _group_topics(self, group_id: str) -> TopicCatalog:
        """The topics a timeout's rebalance decides with: the group's last resolution of its regexes, if any (a topic
        created since it is in no regex's matches until a member's heartbeat resolves them again)."""
        topics = self.topics()
        resolved = self._resolved.get(group_id)
        if resolved is None:
            return topics
        if resolved.generation[0] == self.broker.catalog_version:
            return resolved.topics
        return topics.regex_matches_within(resolved.allowed)

    def forget_group(self, group_id: str) -> None:
        """Forget the liveness of a deleted group's members (its own entries: a DeleteGroups of many groups went
        over every member of every group for each)."""
        self._resolved.pop(group_id, None)
        for member_id in self._members_of.pop(group_id, ()):
            for table in self._tables():
                table.pop((group_id, member_id), None)

    def _seen(self, group_id: str, member_id: str, now: int) -> None:
        self._last_seen[(group_id, member_id)] = now
        self._members_of.setdefault(group_id, set()).add(member_id)

    def _tables(self) -> tuple[dict[tuple[str, str], int], ...]:
        return self._last_seen, self._revoke_by, self._rejoin_by, self._sync_by, self._classic_session

    def _forget(self, group_id: str, member_id: str) -> None:
        for table in self._tables():
            table.pop((group_id, member_id), None)
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
            if now - seen >= (self._classic_session.get((group_id, member_id)) or timeouts(group_id)):
                expired.setdefault(group_id, []).append((member_id, SESSION_TIMEOUT_REASON))
        for table, reason in ((self._revoke_by, REBALANCE_TIMEOUT_REASON), (self._rejoin_by, JOIN_TIMEOUT_REASON),
                              (self._sync_by, SYNC_TIMEOUT_REASON)):
            for (group_id, member_id), deadline in list(table.items()):
                if now >= deadline:
                    expired.setdefault(group_id, []).append((member_id, reason))
        events: list[Event] = []
        for group_id, gone in expired.items():
            for member_id, _ in gone:
                self._forget(group_id, member_id)
            state = consumer_group(self.broker, group_id)
            if state is None:
                continue
            removed = remove_all(state, gone, self._group_topics(group_id), compile_pattern, self.assignors())
            for event in removed:
                if isinstance(event, ConsumerMemberLeft):
                    log.info("consumer group %s: member %s removed (%s)", group_id, event.member_id, event.reason)
            downgraded = self.downgraded(state, removed)
            if downgraded is not None:
                log.info("consumer group %s: only classic members left; it is a classic group again", group_id)
                removed = downgraded
            if removed:
                self.broker.stage(removed)
                events.extend(removed)
            if downgraded is not None:
                self.hand_to_classic(group_id)
        return events

    def next_deadline(self) -> int | None:
        """The earliest session or rebalance timeout; ``None`` when no member is tracked."""
        timeouts = self._session_timeouts()
        deadlines = [seen + (self._classic_session.get(key) or timeouts(key[0]))
                     for key, seen in self._last_seen.items()]
        deadlines.extend(self._revoke_by.values())
        deadlines.extend(self._rejoin_by.values())
        deadlines.extend(self._sync_by.values())
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

