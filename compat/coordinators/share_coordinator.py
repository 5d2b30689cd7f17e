"""The async glue around share groups: membership, share sessions, cursors and the timers that drive them.

Decisions are pure (`core.share_groups`, `core.share_sessions`, `core.share_acks`, `core.cursor_commands`);
this module reads the projections, stages the events and keeps what is not persisted: when each member
last heartbeated and each member's share session. One timer (`DeadlineTimer`) sleeps until the earliest
deadline on `broker.clock` and runs `tick`, so deadlines fire when due; a manual clock (``logwright serve
--manual-clock``) drives session timeouts and lock expiry exactly as the wall clock would, since `tick` is
also called right after the clock is advanced. The coordinator is built with the broker
(`logwright.compat.wiring`), given the plugins' subscription modes and release decision.

A share group is the Shared subscription named after the group: cursor ``(group id, partition id)``.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any

from logwright.compat.broker import Broker
from logwright.compat.coordinators.dead_letters import with_dead_letters
from logwright.compat.coordinators.deadline_timer import DeadlineTimer, wait_first
from logwright.compat.coordinators.processed_keys import settle_processed
from logwright.compat.coordinators.share_group_settings import ShareGroupSettings
from logwright.compat.kafka.list_offsets import lookup
from logwright.compat.wire.record_batch import decode_records, parse_header
from logwright.core.config.configs import iso_duration_ms
from logwright.core.consumer_groups.consumer_groups import CONSUMER_GROUPS
from logwright.core.cursors import cursor_commands
from logwright.core.cursors.acquisition_order import eligible_in_runs, in_due_order, increasing_runs
from logwright.core.cursors.cursor import CursorState, cursor_key
from logwright.core.cursors.key_hash import key_hash
from logwright.core.cursors.plugin_decisions import (
    ArchiveDecider,
    GroupConfigCheck,
    ReleaseDecider,
)
from logwright.core.cursors.subscription_mode import (
    DispatchView,
    Handover,
    SubscriptionMode,
    handover_delay_ms,
)
from logwright.core.errors import ShareSessionLimitReached, UnknownGroup, quoted
from logwright.core.events import ConfigChanged, Event
from logwright.core.events.cursors import SubscriptionCreated
from logwright.core.events.share_groups import ShareMembershipChanged, SwitchDelayStarted
from logwright.core.groups.group_offsets import PROJECTION_NAME as OFFSETS_PROJECTION
from logwright.core.groups.group_offsets import group_key as offsets_group_key
from logwright.core.log.fetch_budget import BatchSpan, FetchBudget, completing_batch, grouped, within_bytes
from logwright.core.rangeset import RangeSet
from logwright.core.share_groups import record_locks
from logwright.core.share_groups.share_acks import RENEW, AckBatch, AckLimits, decide
from logwright.core.share_groups.share_groups import (
    SESSION_TIMEOUT_REASON,
    ConsumerOptions,
    ShareGroupState,
    ShareHeartbeat,
    heartbeat,
    leave,
)
from logwright.core.share_groups.share_groups import delete as delete_share_group
from logwright.core.share_groups.share_sessions import (
    OPEN_EPOCH,
    PartitionRef,
    ShareSession,
    advance,
    round_order,
    served,
)
from logwright.core.share_groups.switch_delays import SWITCH_DELAYS
from logwright.eventstore.interface import LoggedEvent

log = logging.getLogger(__name__)

RENEW_ENABLE_KEY = "share.renew.acknowledge.enable"
"""The group config that lets share consumers renew their locks (read only for a RENEW)."""


def share_coordinator(broker: Broker) -> ShareCoordinator:
    """The broker's share group coordinator."""
    return broker.coordinators.share_groups


@dataclass(frozen=True, slots=True)
class Acquired:
    """What one partition gave a ShareFetch: stored batches and the acquired ranges with delivery counts."""

    records: bytes
    ranges: tuple[tuple[int, int, int], ...]


def _first(candidates: RangeSet, count: int) -> list[tuple[int, int]]:
    chosen: list[tuple[int, int]] = []
    for first, last in candidates.ranges:
        take = min(last, first + count - 1)
        chosen.append((first, take))
        count -= take - first + 1
        if count <= 0:
            break
    return chosen


@dataclass(frozen=True, slots=True)
class DeletionIndex:
    """What deleting share groups reads, by group (`ShareCoordinator.deletion_index`)."""

    cursors: dict[str, dict[str, CursorState]]
    kept: dict[str, list[tuple[dict[Any, Any], tuple[str, str]]]]
    """The in-memory tables' entries of each group: sessions, last heartbeats, consumer options."""


class ShareCoordinator(ShareGroupSettings):
    def __init__(self, broker: Broker, modes: Callable[[str], SubscriptionMode],
                 release_decider: ReleaseDecider | None, backoff_decider: ReleaseDecider | None = None,
                 archive_decider: ArchiveDecider | None = None,
                 group_config_check: GroupConfigCheck | None = None) -> None:
        """``modes`` names the registered subscription modes (raising `InvalidConfig` for an unknown one);
        ``release_decider`` is the plugins' release decision, ``None`` when only the built-in default decides;
        ``backoff_decider`` is that default itself, asked only for groups with a redelivery backoff policy."""
        self.broker = broker
        self._check_group_bounds()
        self._modes = modes
        self._release_decider = release_decider
        self._backoff_decider = backoff_decider
        self._archive_decider = archive_decider
        """The plugins' dead-letter decision for archived records (`dead_letters`); ``None``: archive only."""
        self._group_config_check = group_config_check
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self._session_connections: dict[tuple[str, str], int] = {}
        """The connection each session was opened on: its close ends the session (as Kafka's share session cache
        does on a disconnect), releasing what the member still holds."""
        self._closed = False
        broker.connection_closed_listeners.append(self._connection_closed)
        self.consumer_options: dict[tuple[str, str], ConsumerOptions] = {}
        """Options a member declared before joining (``LogwrightConsumerOptions``); read when it joins."""
        self._last_seen: dict[tuple[str, str], int] = {}
        self._locks: dict[str, int] = {}
        """Cursor key → earliest lock deadline or delayed redelivery of a cursor with records in flight."""
        self._lock_order: list[tuple[int, str]] = []
        """(deadline, key) of `_locks`, a heap: an entry whose deadline is no longer the key's is dropped when met.
        A timer pass walked every locked cursor of the broker, and a pass comes at each deadline."""
        self._locked_of: dict[str, set[str]] = {}
        """Each group's keys in `_locks`: a member leaving or timing out reads its own group's cursors only."""
        now = broker.clock.now_ms()
        self._handovers: dict[str, Handover] = {
            group_id: handover for group_id, handover in broker.store.entities(SWITCH_DELAYS.name).items()
            if isinstance(handover, Handover) and handover.until_ms > now}
        """Group → its running switch delay (Failover); each is a `SwitchDelayStarted` event, so a restart keeps it."""
        self._available = asyncio.Event()
        self.timer = DeadlineTimer(broker.clock, self.next_deadline, self.tick, "logwright-share-groups")
        broker.store.add_commit_listener(self._on_commit, (ConfigChanged,))
        for group in self.groups():
            for member in group.members:
                self._last_seen[(group.group_id, member.member_id)] = now
        self._delayed_due: dict[int, int] = {}
        """Partition id → when the first record the plugins hold back there may go (`_not_yet_due`)."""
        groups = {group.group_id for group in self.groups()}
        self._left_holding: set[tuple[str, str]] = set()
        """(group, consumer) holding records after it left, whose share session (in memory) a restart lost: no
        closing request can release them now, so the first timer pass does."""
        for key, state in broker.store.entities("cursors").items():
            if isinstance(state, CursorState) and state.subscription in groups:
                self._track(key, state)
                self._left_holding.update((state.subscription, delivery.consumer) for delivery in state.in_flight
                                          if (state.subscription, delivery.consumer) not in self._last_seen)

    # -- membership -----------------------------------------------------------------------------

    def _topic(self, name: str) -> tuple[bytes, int] | None:
        topic = self.broker.topic(name)
        return (topic.topic_id, len(topic.partition_ids)) if topic is not None else None

    async def heartbeat(self, command: ShareHeartbeat) -> tuple[str, ShareGroupState]:
        """Decide, stage, wait until durable; raises a `DomainError` for a refusal."""
        if command.member_epoch == 0 and command.member_id:
            command = replace(command, options=self.consumer_options.get((command.group_id, command.member_id)))
        before = self.group(command.group_id)
        joins_new = before is None and command.member_epoch == 0 and command.group_id != ""
        if joins_new and self.held_by_other_kind(command.group_id):
            raise UnknownGroup(f"group {quoted(command.group_id)} is not a share group")
        member_id, events = heartbeat(before, command, self._topic, self.mode(command.group_id),
                                      int(self.broker.broker_config("group.share.max.size")))
        now = self.broker.clock.now_ms()
        if command.member_epoch == -1:
            if (command.group_id, member_id) not in self.sessions:  # else its closing request releases them
                events.extend(self._release_member(command.group_id, member_id, failed=False))
            self._last_seen.pop((command.group_id, member_id), None)
            self.consumer_options.pop((command.group_id, member_id), None)
        else:
            self._last_seen[(command.group_id, member_id)] = now
            self.timer.schedule(now + self.session_timeout_ms(command.group_id))
        if events:
            self._note_membership_change(command.group_id, before, events, now)
            self.broker.stage(events)
            self._retrack(command.group_id)
            self._wake_if_released(events)
            await self.broker.durable()
        state = self.group(command.group_id)
        assert state is not None
        return member_id, state

    def held_by_other_kind(self, group_id: str) -> bool:
        """Whether a classic group (members, or committed offsets) or a KIP-848 consumer group has the id: group ids
        are one namespace, so Kafka refuses a share member's join there and the share offset admin APIs too
        (GROUP_ID_NOT_FOUND, "not a share group")."""
        store = self.broker.store
        return (store.state("groups", group_id) is not None
                or store.state(OFFSETS_PROJECTION, offsets_group_key(group_id)) is not None
                or store.state(CONSUMER_GROUPS.name, group_id) is not None)

    def _note_membership_change(self, group_id: str, before: ShareGroupState | None, events: Sequence[Event],
                                now: int) -> None:
        """Start the mode's switch delay at a membership change, unless one is already running or nobody was
        a member before (there was no active consumer to switch from)."""
        if before is None or not before.members or not any(isinstance(e, ShareMembershipChanged) for e in events):
            return
        delay = handover_delay_ms(self.mode(group_id), self.group_settings(group_id))
        running = self._handovers.get(group_id)
        if delay > 0 and (running is None or running.until_ms <= now):
            self._handovers[group_id] = Handover(before.mode_membership(), now + delay)
            self.broker.stage([SwitchDelayStarted(group_id, before.mode_membership(), now + delay)])
            self.timer.schedule(now + delay)

    def deletion_index(self) -> DeletionIndex:
        """Every cursor by subscription, and every member entry kept in memory by group, in one pass each: what
        `delete_group` needs for each of many groups (a pass per group deleted grew with the groups named times the
        cursors, and times the consumer options any client may fill)."""
        cursors: dict[str, dict[str, CursorState]] = {}
        for key, state in self.broker.store.entities("cursors").items():
            if isinstance(state, CursorState):
                cursors.setdefault(state.subscription, {})[key] = state
        kept: dict[str, list[tuple[dict[Any, Any], tuple[str, str]]]] = {}
        tables: tuple[dict[Any, Any], ...] = (self.sessions, self._session_connections, self._last_seen,
                                               self.consumer_options)
        for table in tables:
            for entry in table:
                kept.setdefault(entry[0], []).append((table, entry))
        return DeletionIndex(cursors, kept)

    def delete_group(self, group_id: str, index: DeletionIndex | None = None) -> None:
        """Stage an empty share group's deletion with its cursors (`core.share_groups.delete` refuses with a
        `DomainError`) and forget what is kept of it in memory; the caller awaits durability. ``index``:
        `deletion_index` taken in this turn, for a caller deleting several groups."""
        index = index if index is not None else self.deletion_index()
        cursors = index.cursors.get(group_id, {})
        self.broker.stage(delete_share_group(self.group(group_id), group_id,
                                             (state.partition_id for state in cursors.values())))
        for key in cursors:
            self._unlock(key)
        for table, entry in index.kept.pop(group_id, ()):
            table.pop(entry, None)
        self._handovers.pop(group_id, None)

    def session_timeout_ms(self, group_id: str) -> int:
        return int(self.group_config(group_id, "share.session.timeout.ms"))

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return int(self.group_config(group_id, "share.heartbeat.interval.ms"))

    def _release_member(self, group_id: str, member_id: str, failed: bool) -> list[Event]:
        events: list[Event] = []
        now = self.broker.clock.now_ms()
        for _key, state in self._locked_cursors(group_id):
            context = self.release_context(group_id, state.topic, state.partition_id) if failed else None
            events.extend(self._dead_letters(state, cursor_commands.release_consumer(
                state, member_id, now, failed, self.delivery_count_limit(group_id), context)))
        return events

    # -- cursors --------------------------------------------------------------------------------

    def cursor(self, group_id: str, topic: str, partition_id: int) -> CursorState:
        """The group's cursor on the partition, created at ``share.auto.offset.reset`` on first use."""
        key = cursor_key(group_id, partition_id)
        state = self.broker.store.state("cursors", key)
        if isinstance(state, CursorState):
            return state
        start = self._start_offset(group_id, partition_id)
        self.broker.stage([SubscriptionCreated(group_id, partition_id, topic, start)])
        created = self.broker.store.state("cursors", key)
        assert isinstance(created, CursorState)
        return created

    def _start_offset(self, group_id: str, partition_id: int) -> int:
        """Where ``share.auto.offset.reset`` puts a new cursor: log start, log end, or the first record at most
        ``by_duration:<ISO-8601>`` old (the log end if there is none)."""
        reset = self.group_config(group_id, "share.auto.offset.reset")
        if reset == "earliest":
            return self.broker.partition(partition_id).log_start_offset
        high_watermark = self.broker.high_watermark(partition_id)
        prefix, _, duration = reset.partition(":")
        if prefix != "by_duration":
            return high_watermark
        _, offset = lookup(self.broker, partition_id, self.broker.clock.now_ms() - iso_duration_ms(duration))
        return offset if offset >= 0 else high_watermark

    def acquire(self, group_id: str, member_id: str, topic: str, partition_id: int, budget: FetchBudget
                ) -> Acquired | None:
        """Lock available records of the partition for the member within ``budget`` (and spend it), and read
        their stored batches: whole batches in batch-optimized mode, the byte budget in whole batches."""
        state = self.cursor(group_id, topic, partition_id)
        now = self.broker.clock.now_ms()
        log_start = self.broker.partition(partition_id).log_start_offset
        log_end = self.broker.high_watermark(partition_id)
        unlimited = list(cursor_commands.available(state, log_start, log_end, now))
        # At the record lock limit only records inside the in-flight window come (Kafka's SharePartition).
        ceiling = record_locks.acquisition_ceiling(state, log_start, self.record_lock_limit(group_id))
        ordered = [(first, min(last, ceiling)) for first, last in unlimited if first <= ceiling]
        candidates = RangeSet.from_ranges(ordered)
        pending = self._not_yet_due(group_id, partition_id, now) if candidates else RangeSet()
        if pending:
            candidates = candidates.difference(pending)
        if not candidates:
            return None
        chosen = self._eligible(group_id, member_id, topic, partition_id, state, candidates, budget.records,
                                (ordered, pending))
        stored = self._stored_batches(partition_id, chosen)
        spans = list(stored)
        tail = completing_batch(chosen, spans) if budget.batch_optimized else None
        if tail is None and chosen.last == ceiling:  # record-limit mode: within max_records still
            tail = next((span for span in spans if span.first <= ceiling < span.last), None)
        if tail is not None and chosen.last is not None:
            # Kafka 4.4 completes the stored batch the record lock limit falls in, in both acquire modes.
            reach = candidates if tail.last <= ceiling else RangeSet.from_ranges(unlimited).difference(pending)
            last = tail.last if budget.batch_optimized else min(tail.last, chosen.last + budget.records - len(chosen))
            wider = self._eligible(group_id, member_id, topic, partition_id, state, reach.below(last + 1),
                                   budget.records + last - chosen.last)
            chosen = chosen.union(wider.within(chosen.last + 1, last))
        chosen, kept = within_bytes(chosen, spans, budget)
        chosen = settle_processed(self.broker, self.group_settings(group_id), group_id, topic, partition_id, chosen,
                                  [stored[span] for span in kept], self.apply)
        event = cursor_commands.acquire(state, log_start, log_end, member_id, len(chosen), now,
                                        self.lock_duration_ms(group_id, member_id), eligible=chosen)
        if event is None:
            return None
        self.broker.stage([event])
        key = cursor_key(group_id, partition_id)
        after = self.broker.store.state("cursors", key)
        assert isinstance(after, CursorState)
        self._track(key, after)
        ranges = tuple((d.first, d.last, d.delivery_count) for d in cursor_commands.deliveries(after, event.ranges))
        budget.spend(len(RangeSet.from_ranges(event.ranges)), sum(span.size for span in kept))
        return Acquired(b"".join(stored[span] for span in kept),
                        grouped(ranges, kept, budget.batch_size) if budget.batch_optimized else ranges)

    def _not_yet_due(self, group_id: str, partition_id: int, now: int) -> RangeSet:
        """Offsets the plugins hold back (``logwright_hold_back``: delayed delivery), the timer set for the first
        to go, so waiting fetches wake then. Modes with cumulative acknowledgement (Exclusive, Failover) say
        they deliver in order, and the built-in plugin holds nothing back for them, as Pulsar does."""
        held = self.broker.held_back(partition_id, self.broker.partition(partition_id).log_start_offset,
                                     self.broker.high_watermark(partition_id) - 1,
                                     self.mode(group_id).allows_cumulative_ack, now)
        due = held.next_due_ms
        if due is not None and due < self._delayed_due.get(partition_id, due + 1):
            self._delayed_due[partition_id] = due
            self.timer.schedule(due)
        return held.offsets

    def _stored_batches(self, partition_id: int, offsets: RangeSet) -> dict[BatchSpan, bytes]:
        """The stored batches holding any of ``offsets``, in offset order (read once each)."""
        found: dict[int, bytes] = {}
        for first, last in offsets.ranges:
            for batch in self.broker.store.read_batches(partition_id, first, 2**31 - 1, end_offset=last):
                found.setdefault(int.from_bytes(batch[:8], "big"), batch)
        return {BatchSpan(base, base + parse_header(batch).last_offset_delta, len(batch)): batch
                for base, batch in sorted(found.items())}

    def _eligible(self, group_id: str, member_id: str, topic: str, partition_id: int, state: CursorState,
                  candidates: RangeSet, limit: int,
                  order: tuple[list[tuple[int, int]], RangeSet] | None = None) -> RangeSet:
        """What the group's subscription mode lets ``member_id`` acquire of the available ``candidates``; given
        their hand-out ``order`` (`cursor_commands.available`'s spans and the offsets still delayed), Shared
        modes choose due redeliveries earliest-due first (`acquisition_order`)."""
        group = self.group(group_id)
        # looked up, not searched in the topic's partition list: a search per partition served was quadratic
        located = self.broker.topic_of_partition(partition_id)
        if group is None or located is None or located[0].name != topic:
            return RangeSet()
        topic_state, partition_index = located
        mode = self.mode(group_id)
        holders: dict[str, list[tuple[int, int]]] = {}
        for delivery in state.in_flight:
            holders.setdefault(delivery.consumer, []).append((delivery.first, delivery.last))
        view = DispatchView(
            membership=group.mode_membership(),
            partition_index=partition_index,
            partition_count=len(topic_state.partition_ids),
            in_flight={consumer: RangeSet.from_ranges(ranges) for consumer, ranges in holders.items()},
            key_hash_of=self._key_hashes(partition_id) if mode.uses_key_hashes else None,
            settings=self.group_settings(group_id),
            now_ms=self.broker.clock.now_ms(),
            handover=self._handovers.get(group_id),
        )
        # A bounded window of the backlog: modes that skip records (key_shared) scan at most this much.
        window = max(limit * 16, 1024)
        if order is not None and in_due_order(mode):
            return eligible_in_runs(mode, view, member_id, increasing_runs(*order, window), limit, window)
        return mode.eligible(view, member_id, RangeSet.from_ranges(_first(candidates, window)), limit)

    def _key_hashes(self, partition_id: int) -> Callable[[int], int]:
        """Key hash of an offset, read from its stored batch once per fetch (Key_Shared only)."""
        hashes: dict[int, int] = {}

        def key_hash_of(offset: int) -> int:
            if offset not in hashes:
                for batch in self.broker.store.read_batches(partition_id, offset, 1, end_offset=offset):
                    for record in decode_records(batch):
                        hashes[record.offset] = key_hash(record.key)
            return hashes.get(offset, key_hash(None))

        return key_hash_of

    def acknowledge(self, group_id: str, member_id: str, topic: str, partition_id: int,
                    batches: Sequence[AckBatch], renew_allowed: bool, kafka_offsets: bool = False) -> None:
        """Apply one partition's acknowledgements; raises `InvalidRecordState`/`InvalidRequest` (nothing changed).
        ``kafka_offsets``: Kafka's answer to offsets past the last one handed out (`share_acks`)."""
        state = self.cursor(group_id, topic, partition_id)
        renews = renew_allowed and any(RENEW in batch.types for batch in batches)  # the config read only then
        limits = AckLimits(self.delivery_count_limit(group_id), self.lock_duration_ms(group_id, member_id),
                           renew_allowed, self.release_context(group_id, topic, partition_id), kafka_offsets,
                           renew_enabled=not renews or self.group_config(group_id, RENEW_ENABLE_KEY) == "true")
        self.apply(group_id, partition_id, decide(state, member_id, batches, self.broker.clock.now_ms(), limits))

    def apply(self, group_id: str, partition_id: int, events: Sequence[Event], reconsume_times: int = 0,
              real_topic: str = "") -> list[Event]:
        """Stage cursor events decided elsewhere (the extension keys), keep the timers and wake fetchers; return
        what was staged. ``reconsume_times`` and ``real_topic`` mark a retry move past its limit
        (`with_dead_letters`)."""
        before = self.broker.store.state("cursors", cursor_key(group_id, partition_id))
        if events and isinstance(before, CursorState):
            events = self._dead_letters(before, events, reconsume_times, real_topic)
        if events:
            self.broker.stage(events)
            key = cursor_key(group_id, partition_id)
            after = self.broker.store.state("cursors", key)
            if isinstance(after, CursorState):
                self._track(key, after)
            self._wake_if_released(events)
        return list(events)

    def _dead_letters(self, state: CursorState, events: Sequence[Event], reconsume_times: int = 0,
                      real_topic: str = "") -> list[Event]:
        """``events`` with the plugins' dead-letter copies staged now (the caller stages ``events`` in this turn)."""
        return with_dead_letters(self.broker, self._archive_decider, state,
                                 lambda: self.group_settings(state.subscription), events, reconsume_times, real_topic)

    # -- share sessions -------------------------------------------------------------------------

    def advance_session(self, group_id: str, member_id: str, epoch: int, added: Sequence[PartitionRef],
                        forgotten: Sequence[PartitionRef], connection_id: int = 0) -> tuple[PartitionRef, ...]:
        """The partitions a ShareFetch or ShareAcknowledge of ``epoch`` covers, its member's session moved on. A
        session keeps only partitions that exist; the broker holds at most ``group.share.max.share.sessions``, as
        Kafka does (any client could open sessions for made-up members, each kept until its member left).

        A session outlives its member's leave heartbeat, as Kafka's does: a client's closing request (epoch -1)
        races the leave on another connection, and must still find the session, its acknowledgements applied.
        The request that closes it calls `release_closed_session` once its acknowledgements are applied."""
        key = (group_id, member_id)
        if epoch == OPEN_EPOCH and key not in self.sessions:
            self._make_room_for_a_session()
        session, partitions = advance(self.sessions.get(key), group_id, member_id, epoch, added, forgotten,
                                      self._exists)
        if session is None:
            self.sessions.pop(key, None)
            self._session_connections.pop(key, None)
        else:
            self.sessions[key] = session
            if epoch == OPEN_EPOCH:
                self._session_connections[key] = connection_id
        return partitions

    def release_closed_session(self, group_id: str, member_id: str) -> None:
        """A request closed the member's share session (epoch -1): what it still holds becomes available, as Kafka's
        ``releaseSession`` releases it, after the request's own acknowledgements."""
        self._wake_if_released(self._stage_release(group_id, member_id, failed=False))

    def _stage_release(self, group_id: str, member_id: str, failed: bool) -> list[Event]:
        """Stage the release of what the member holds (`_release_member`) and track the cursors it changed."""
        events = self._release_member(group_id, member_id, failed)
        if events:
            self.broker.stage(events)
            self._retrack(group_id)
        return events

    def _connection_closed(self, connection_id: int) -> None:
        """The sessions opened on a closed connection end, and their members' records are released (a client that
        left and lost its connection before its closing request holds nothing until its locks ran out)."""
        if self._closed:
            return
        for key in [key for key, opened_on in self._session_connections.items() if opened_on == connection_id]:
            del self._session_connections[key]
            if self.sessions.pop(key, None) is not None:
                self.release_closed_session(*key)

    def _exists(self, ref: PartitionRef) -> bool:
        topic = self.broker.topic_by_id(ref[0])
        return topic is not None and 0 <= ref[1] < len(topic.partition_ids)

    def _make_room_for_a_session(self) -> None:
        """Refuse a new session at the limit, once the sessions of ids that are not live members are dropped (a
        member's session goes with it, but one opened for an id that never joined was kept for good)."""
        limit = int(self.broker.broker_config("group.share.max.share.sessions"))
        if len(self.sessions) < limit:
            return
        for stale in [key for key in self.sessions if key not in self._last_seen]:
            del self.sessions[stale]
            self._session_connections.pop(stale, None)
            self.release_closed_session(*stale)
        if len(self.sessions) >= limit:
            raise ShareSessionLimitReached(f"the broker holds {len(self.sessions)} share sessions, "
                                           f"group.share.max.share.sessions={limit}")

    def round_order(self, group_id: str, member_id: str, partitions: tuple[PartitionRef, ...]
                    ) -> tuple[PartitionRef, ...]:
        """The order a ShareFetch visits ``partitions``: from where the member's session's last round stopped."""
        return round_order(self.sessions.get((group_id, member_id)), partitions)

    def served(self, group_id: str, member_id: str, ref: PartitionRef) -> None:
        """Records of ``ref`` were acquired: the member's next round starts after it."""
        key = (group_id, member_id)
        session = self.sessions.get(key)
        if session is not None:
            self.sessions[key] = served(session, ref)

    # -- waiting --------------------------------------------------------------------------------

    async def wait_for_records(self, timeout_s: float, partition_ids: Collection[int] | None = None) -> None:
        """Sleep until records are released or fall due anywhere, or are appended anywhere (to one of
        ``partition_ids`` when given: `Broker.wait_for_data`), or the timeout passes (ShareFetch long polls)."""
        if timeout_s <= 0:
            return
        await wait_first(timeout_s, self._available.wait(), self.broker.wait_for_data(timeout_s, partition_ids))

    def _wake_if_released(self, events: Sequence[Event] | bool) -> None:
        if events:
            self._available.set()
            self._available = asyncio.Event()

    # -- time -----------------------------------------------------------------------------------

    def _track(self, key: str, state: CursorState, taken_off: bool = False) -> None:
        """Keep the cursor's next deadline; ``taken_off``: its heap entry was popped (`_due_locks`), so it goes back
        even when the deadline did not move."""
        deadline = cursor_commands.next_deadline(state, self.broker.clock.now_ms())
        if deadline is None:
            self._unlock(key)
        else:
            if taken_off or self._locks.get(key) != deadline:
                heapq.heappush(self._lock_order, (deadline, key))
                if len(self._lock_order) > 4 * len(self._locks) + 1_024:  # stale entries: rebuilt, kept bounded
                    self._lock_order = [(at, locked) for locked, at in self._locks.items() if locked != key]
                    self._lock_order.append((deadline, key))
                    heapq.heapify(self._lock_order)
            self._locks[key] = deadline
            self._locked_of.setdefault(state.subscription, set()).add(key)
            self.timer.schedule(deadline)

    def _unlock(self, key: str) -> None:
        if self._locks.pop(key, None) is not None:
            group_id = key.split("/", 1)[1]  # `cursor_key`: partition, then the subscription
            keys = self._locked_of.get(group_id)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._locked_of[group_id]

    def _earliest_lock(self) -> int | None:
        """The earliest lock deadline or delayed redelivery, the heap's stale tops dropped."""
        order, locks = self._lock_order, self._locks
        while order and locks.get(order[0][1]) != order[0][0]:
            heapq.heappop(order)
        return order[0][0] if order else None

    def _due_locks(self, now: int) -> list[tuple[int, str]]:
        """The (deadline, key) entries that have come, each once, taken off the heap: each goes back when its cursor
        is tracked again (`_track` with ``taken_off``), or as it was if handling it failed."""
        due: list[tuple[int, str]] = []
        order, locks = self._lock_order, self._locks
        while order and order[0][0] <= now:
            deadline, key = heapq.heappop(order)
            if locks.get(key) == deadline:
                due.append((deadline, key))
        return due

    def _locked_cursors(self, group_id: str) -> list[tuple[str, CursorState]]:
        """The group's cursors with records in flight."""
        found = []
        for key in sorted(self._locked_of.get(group_id, ())):
            state = self.broker.store.state("cursors", key)
            if isinstance(state, CursorState) and state.subscription == group_id:
                found.append((key, state))
        return found

    def _retrack(self, group_id: str) -> None:
        """Deadlines of the group's cursors after a member's records were released (some may come due sooner)."""
        for key, state in self._locked_cursors(group_id):
            self._track(key, state)

    def next_deadline(self) -> int | None:
        """The earliest time `tick` has something to do: a session, a lock or delayed record, a switch delay."""
        timeouts = {group_id: self.session_timeout_ms(group_id)  # a config lookup per group, not per member
                    for group_id in {group_id for group_id, _member in self._last_seen}}
        times = [seen + timeouts[group_id] for (group_id, _member), seen in self._last_seen.items()]
        earliest_lock = self._earliest_lock()
        if earliest_lock is not None:
            times.append(earliest_lock)
        times.extend(handover.until_ms for handover in self._handovers.values())
        times.extend(self._delayed_due.values())
        if self._left_holding:
            times.append(self.broker.clock.now_ms())
        return min(times, default=None)

    def _on_commit(self, events: Sequence[LoggedEvent]) -> None:
        if any(isinstance(logged.event, ConfigChanged) for logged in events):
            self.timer.wake()  # a session timeout may have shrunk

    def tick(self) -> list[Event]:
        """Expire sessions of silent members and locks that ran out; stage the events and return them."""
        now = self.broker.clock.now_ms()
        events: list[Event] = []
        due = False
        while self._left_holding:
            events.extend(self._stage_release(*self._left_holding.pop(), failed=False))
        timeouts: dict[str, int] = {}
        for (group_id, member_id), seen in list(self._last_seen.items()):
            timeout = timeouts.get(group_id)
            if timeout is None:  # a config lookup per group, not per member
                timeout = timeouts[group_id] = self.session_timeout_ms(group_id)
            if now - seen < timeout:
                continue
            self._last_seen.pop((group_id, member_id), None)
            self.sessions.pop((group_id, member_id), None)
            self._session_connections.pop((group_id, member_id), None)
            before = self.group(group_id)
            left = leave(before, member_id, SESSION_TIMEOUT_REASON, self.mode(group_id))
            if left:
                log.info("share group %s: member %s timed out", group_id, member_id)
                self._note_membership_change(group_id, before, left, now)
                self.broker.stage(left)
                events.extend(left)
                events.extend(self._stage_release(group_id, member_id, failed=True))
        due_locks = self._due_locks(now)
        for position, (_deadline, key) in enumerate(due_locks):
            due = True
            try:
                events.extend(self._expire_locks(key, now))
            except BaseException:  # the entries not handled go back as they were: the next pass tries again
                for entry in due_locks[position:]:
                    heapq.heappush(self._lock_order, entry)
                raise
        for group_id, handover in list(self._handovers.items()):
            if handover.until_ms <= now:
                del self._handovers[group_id]
                due = True
        for partition_id in [pid for pid, at in self._delayed_due.items() if at <= now]:
            del self._delayed_due[partition_id]  # the fetchers woken ask again, and learn the next time
            due = True
        # Delayed (re)deliveries and switch delays coming due change nothing persisted, but fetchers waiting must
        # look again.
        self._wake_if_released(bool(events) or due)
        return events

    def _expire_locks(self, key: str, now: int) -> list[Event]:
        """Release or archive what ran out on one cursor; stage it and track the cursor's next deadline."""
        state = self.broker.store.state("cursors", key)
        if not isinstance(state, CursorState):
            self._unlock(key)
            return []
        expired = self._dead_letters(state, cursor_commands.expire_locks(
            state, now, self.delivery_count_limit(state.subscription),
            self.release_context(state.subscription, state.topic, state.partition_id)))
        if expired:
            self.broker.stage(expired)
        after = self.broker.store.state("cursors", key)
        if isinstance(after, CursorState):
            self._track(key, after, taken_off=True)
        else:
            self._unlock(key)
        return expired

    def close(self) -> None:
        self._closed = True
        self.timer.close()
