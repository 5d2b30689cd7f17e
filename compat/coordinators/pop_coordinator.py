"""The async glue around pop consumption: pops with long polling, acks, invisible times, and the revive timer.

Decisions are pure (`core.pop.pop_commands`); this module reads the in-flight tables (`core.pop.inflight`),
reads the records, stages the events and keeps two things in memory only: each table's earliest deadline
(the deadline index the one `DeadlineTimer` sleeps on: revive is "deadline <= now" on the broker clock, no
scan, no polling) and where each group's next pop on a topic starts (the rotation). A pop decides and stages
without awaiting, so pops of one partition never interleave (RocketMQ's ``topic@group@queueId`` lock is the
event loop here); it awaits durability before answering, so a handed-out record is in flight on disk.

What a consumer sends back (acks, nacks, invisible-time changes) is the mixin `pop_results`; what a pop reads,
`pop_reads`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from logwright.compat.broker import Broker
from logwright.compat.broker_commits import EVENTS_STAGED_PER_TURN
from logwright.compat.coordinators.deadline_timer import DeadlineTimer, wait_first
from logwright.compat.coordinators.pop_reads import PopBytes, PopReader
from logwright.compat.coordinators.pop_results import PopResults
from logwright.compat.kafka.list_offsets import lookup
from logwright.compat.wire.batch_slices import BatchSlicer
from logwright.compat.wire.records import Record
from logwright.core.cursors.plugin_decisions import ArchiveDecider
from logwright.core.errors import UnknownTopic, UnsupportedFeature
from logwright.core.events import Event, TopicDeleted
from logwright.core.events.pop import (
    PAGES_EMPTIED,
    CheckpointAcked,
    CheckpointCreated,
    PopCursorCreated,
    PopCursorDeleted,
    PopDeadLettered,
    PopEntriesDropped,
    PopEvent,
)
from logwright.core.log.catalog import ResourceConfig, TopicState, resource_key
from logwright.core.pop import pop_commands
from logwright.core.pop.inflight import (
    PAGE_OFFSETS,
    PROJECTION_NAME,
    PopEntry,
    PopHead,
    PopPartition,
    assemble,
    page_key,
    page_ranges,
    pop_head,
    pop_key,
    pop_page,
)
from logwright.core.pop.inflight_fold import spans_of
from logwright.core.pop.pop_commands import (
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_RECONSUME_TIMES,
    INIT_MODE_KEY,
    MAX_IN_FLIGHT_KEY,
    MAX_RECONSUME_TIMES_KEY,
    PopLimits,
)
from logwright.core.pop.receipt_handle import ReceiptHandle
from logwright.eventstore.interface import LoggedEvent

log = logging.getLogger(__name__)

GONE_REASON = "record no longer in the log (retention or compaction) before it was acknowledged"
TOPIC_DELETED_REASON = "topic deleted"
DELAYED_PER_POP = 1_000
"""Held-back records one pop may pass over and park (bounds one `PopDelayed`)."""
T = TypeVar("T")
_SETTLING = (CheckpointAcked, PopDeadLettered, PopEntriesDropped)
"""Events that may empty a page (a union written inline would be built anew on every call)."""
_ADDING_OR_SETTLING = (CheckpointAcked, CheckpointCreated)


def pop_coordinator(broker: Broker) -> PopCoordinator:
    """The broker's pop coordinator."""
    return broker.coordinators.pop


@dataclass(frozen=True, slots=True)
class PoppedRecord:
    """One record a pop hands out, with its receipt handle."""

    partition: int
    record: Record
    handle: str
    reconsume_times: int
    invisible_until_ms: int


@dataclass(frozen=True, slots=True)
class PoppedPartition:
    """What a compact (v1) pop hands out of one partition: the stored batches holding the records, by reference,
    and the checkpoint that describes them (the client builds each record's receipt handle from it)."""

    partition: int
    epoch: int
    offsets: tuple[int, ...]
    invisible_until_ms: int
    reconsumed: tuple[tuple[int, int], ...]
    """``(offset, reconsume times)`` of the revived records among ``offsets`` (the others: 0)."""
    batches: tuple[bytes, ...]


class PopCoordinator(PopResults):
    def __init__(self, broker: Broker, archive_decider: ArchiveDecider | None = None) -> None:
        self.broker = broker
        self._archive_decider = archive_decider
        """The plugins' ``logwright_decide_archive`` chain: where records past the max reconsume times go."""
        self._enabled: bool | None = None
        self._deadlines: dict[str, int] = {}
        """In-flight table key → its earliest deadline: the deadline index."""
        self._rotation: dict[tuple[str, str], int] = {}
        self._tables: dict[str, tuple[PopHead, tuple[object, ...], PopPartition]] = {}
        """Head key → the rows a table was last assembled from and the table: reused while they are the same
        objects (the store replaces a row's object whenever an event changes it)."""
        self.reader = PopReader(broker)
        """Reads the records and batches a pop hands out (`pop_reads`)."""
        self.slicer = BatchSlicer()
        """Cuts the stored batches a compact pop sends down to the records it hands out (walks kept per batch)."""
        self._available = asyncio.Event()
        self.timer = DeadlineTimer(broker.clock, self.next_deadline, self.tick, "logwright-pop")
        broker.store.add_commit_listener(self._on_commit, (TopicDeleted,))
        if self.enabled():
            for key, state in broker.store.entities(PROJECTION_NAME).items():
                head = pop_head(state)
                table = self.table(head.group, head.partition_id) if head is not None else None
                if table is not None:
                    self._track(key, table)

    def enabled(self) -> bool:
        """Whether the built-in plugin ``pop`` registered the in-flight projection (fixed when the store opened)."""
        if self._enabled is None:
            self._enabled = any(projection.name == PROJECTION_NAME for projection in self.broker.store.projections)
        return self._enabled

    def _require(self) -> None:
        if not self.enabled():
            raise UnsupportedFeature("pop consumption is served by the built-in plugin 'pop', which is disabled")

    # -- settings -------------------------------------------------------------------------------

    def settings(self, group: str) -> Mapping[str, str]:
        return self.broker.coordinators.share_groups.group_settings(group)

    def setting(self, group: str, name: str, default: int) -> int:
        """One group config's value: the group's override, else the key's default (what `settings` gives for it,
        without building every key's: that was 9% of a pop's broker time, asked on every pop)."""
        stored = self.broker.store.state("catalog", resource_key("group", group))
        if isinstance(stored, ResourceConfig):
            for key, value in stored.overrides:
                if key == name and value is not None:
                    return int(value)
        registered = self.broker.configs.get("group", name)
        return int(registered.default) if registered is not None and registered.default is not None else default

    def max_reconsume_times(self, group: str) -> int:
        return self.setting(group, MAX_RECONSUME_TIMES_KEY, DEFAULT_MAX_RECONSUME_TIMES)

    def max_in_flight(self, group: str) -> int:
        """``logwright.pop.max.in.flight.per.partition``: records of one partition a group may hold unsettled
        (RocketMQ's popCkOffsetMaxQueueSize); the table is written with every event, so this bounds its cost."""
        return self.setting(group, MAX_IN_FLIGHT_KEY, DEFAULT_MAX_IN_FLIGHT)

    def nack_delay_ms(self, group: str, entry: PopEntry) -> int:
        """The retry table's level for this failure (`pop_commands.retry_delay_ms`)."""
        return pop_commands.retry_delay_ms(self.settings(group), entry.deliveries)

    # -- tables ---------------------------------------------------------------------------------

    def table(self, group: str, partition_id: int) -> PopPartition | None:
        """The group's in-flight table on the partition, assembled from its head and page rows."""
        key = pop_key(group, partition_id)
        head = pop_head(self.broker.store.state(PROJECTION_NAME, key))
        if head is None:
            self._tables.pop(key, None)
            return None
        rows = tuple(self.broker.store.state(PROJECTION_NAME, page_key(group, partition_id, page))
                     for page in head.pages)
        cached = self._tables.get(key)
        if cached is not None and cached[0] is head and len(cached[1]) == len(rows) \
                and all(old is new for old, new in zip(cached[1], rows, strict=True)):
            return cached[2]
        table = assemble(head, (pop_page(row) for row in rows))
        self._tables[key] = (head, rows, table)
        return table

    def _table_at(self, key: str) -> PopPartition | None:
        head = pop_head(self.broker.store.state(PROJECTION_NAME, key))
        return self.table(head.group, head.partition_id) if head is not None else None

    def _stage(self, state: PopPartition, events: Sequence[Event]) -> None:
        if not events:
            return
        self.broker.stage(events)
        settling: list[PopEvent] = [event for event in events if isinstance(event, _SETTLING)]
        if settling:
            self._prune(state.group, state.partition_id, settling)
        key = pop_key(state.group, state.partition_id)
        known = self._deadlines.get(key)
        if pop_head(self.broker.store.state(PROJECTION_NAME, key)) is None:
            self._deadlines.pop(key, None)
        elif known is not None and all(isinstance(event, _ADDING_OR_SETTLING) for event in events):
            # acks only remove entries and a checkpoint adds them with its own deadline: the earliest deadline
            # is at most the known one or the checkpoint's, with no scan of the table (a third of a compact pop's
            # broker time at 4,000 entries); if it is lower than the truth, `tick` finds nothing due and looks
            # the exact one up
            for event in events:
                if isinstance(event, CheckpointCreated) and event.offsets:
                    known = min(known, event.pop_time_ms + event.invisible_time_ms)
            self._deadlines[key] = known
            self.timer.schedule(known)
        else:
            after = self.table(state.group, state.partition_id)
            if after is not None:
                self._track(key, after)

    def _prune(self, group: str, partition_id: int, settling: Sequence[PopEvent]) -> None:
        """Pages the ``settling`` events just emptied leave the head's list (in the same WriteBatch): the head's
        fold cannot tell from an ack whether it settled a page's last run. Only the pages they touched are looked
        at, not every page of the table."""
        head = pop_head(self.broker.store.state(PROJECTION_NAME, pop_key(group, partition_id)))
        if head is None:
            return
        spans = [span for event in settling for span in spans_of(event)]
        emptied = [page for page in head.pages
                   if any(first < (page + 1) * PAGE_OFFSETS and last >= page * PAGE_OFFSETS for first, last in spans)
                   and self.broker.store.state(PROJECTION_NAME, page_key(group, partition_id, page)) is None]
        if emptied:
            self.broker.stage([PopEntriesDropped(group, partition_id, page_ranges(emptied), PAGES_EMPTIED,
                                                 self.broker.clock.now_ms())])

    # -- pop ------------------------------------------------------------------------------------

    async def pop(self, group: str, topic: TopicState, consumer: str, limits: PopLimits) -> list[PoppedRecord]:
        """Pop up to ``limits.max_messages``, waiting up to ``limits.long_poll_ms`` (wall time) for any to come;
        durable before it returns."""
        return await self._polled(lambda: self.pop_once(group, topic, consumer, limits), group, topic, limits)

    async def pop_batches(self, group: str, topic: TopicState, consumer: str, limits: PopLimits
                          ) -> list[PoppedPartition]:
        """`pop` in the compact form (v1): stored batches by reference and one checkpoint per partition, no
        record decoded unless its batch has gaps (compaction) and no handle built on the broker."""
        return await self._polled(lambda: self.pop_batches_once(group, topic, consumer, limits), group, topic,
                                  limits)

    async def _polled(self, once: Callable[[], list[T]], group: str, topic: TopicState, limits: PopLimits
                      ) -> list[T]:
        self._require()
        missing = self._without_cursor(group, topic.partition_ids)
        if len(missing) > EVENTS_STAGED_PER_TURN:  # a part a turn, one WriteBatch; fewer are created in the pass
            await self.broker.stage_in_parts(
                functools.partial(self._create_cursors, group, topic, missing[start:start + EVENTS_STAGED_PER_TURN])
                for start in range(0, len(missing), EVENTS_STAGED_PER_TURN))
        loop = asyncio.get_running_loop()
        give_up = loop.time() + limits.long_poll_ms / 1000
        while True:
            if self.broker.topic_by_id(topic.topic_id) is None:  # deleted while the cursors were created or it waited
                raise UnknownTopic(f"topic {topic.name!r} was deleted during the pop")
            popped = once()
            remaining = give_up - loop.time()
            if popped or remaining <= 0:
                break
            await self.broker.durable()  # what was staged before waiting (acks carried by the pop) is on disk
            await self._wait(remaining, topic.partition_ids)
        await self.broker.durable()
        return popped

    def pop_once(self, group: str, topic: TopicState, consumer: str, limits: PopLimits) -> list[PoppedRecord]:
        """One pass over the topic's partitions, decided and staged without awaiting."""
        topic_id = uuid.UUID(bytes=bytes(topic.topic_id))
        popped: list[PoppedRecord] = []
        room = PopBytes()

        def take(index: int, state: PopPartition, revived: Sequence[int], budget: int, held_room: int) -> int:
            records, revived, next_offset, held = self.reader.read(state, revived, budget, held_room, room)
            if held:
                state = self._delay(state, held)
            popped.extend(self._checkpoint(state, index, topic_id, consumer, revived, records, next_offset,
                                           limits))
            return len(records) - len(revived)

        self._pass(group, topic, limits, take, room)
        return popped

    def pop_batches_once(self, group: str, topic: TopicState, consumer: str, limits: PopLimits
                         ) -> list[PoppedPartition]:
        """`pop_once` in the compact form."""
        popped: list[PoppedPartition] = []
        room = PopBytes()

        def take(index: int, state: PopPartition, revived: Sequence[int], budget: int, held_room: int) -> int:
            offsets, revived, batches, next_offset, held = self.reader.read_offsets(state, revived, budget, held_room,
                                                                                    room)
            if held:
                state = self._delay(state, held)
            recorded = self._record_checkpoint(state, consumer, revived, offsets, next_offset, limits)
            if recorded is not None:
                event, after = recorded
                # the revived among the offsets (a set intersection, not a look at each of up to 1024 offsets)
                again = sorted(set(revived).intersection(event.offsets)) if revived else ()
                reconsumed = tuple((offset, entry.reconsume_times) for offset in again
                                   if (entry := after.entry(offset)) is not None)
                popped.append(PoppedPartition(index, event.epoch, event.offsets,
                                              event.pop_time_ms + event.invisible_time_ms, reconsumed,
                                              tuple(batches.values())))
            return len(offsets) - len(revived)

        self._pass(group, topic, limits, take, room)
        return popped

    def _pass(self, group: str, topic: TopicState, limits: PopLimits,
              take: Callable[[int, PopPartition, Sequence[int], int, int], int], pop_bytes: PopBytes) -> None:
        """Visit the partitions (due revivals first, then from the rotating start), calling ``take(index, state,
        revived offsets, budget for new records, room for held-back ones)``, which returns the new records taken,
        until ``pop_bytes`` is spent (the revivals of the partitions not visited stay due for the next pop).

        A partition with nothing in flight is read from its head alone, and one with nothing due is passed over
        while its position is at the high watermark: a pop assembled and read every partition's table, 16-36 ms a
        pop of an empty 10,000-partition topic, each long poll's wake-up as much again."""
        heads = self._heads_or_create(group, topic)
        tables: dict[int, PopPartition] = {}
        for index, head in enumerate(heads):
            if head.pages:
                table = self.table(group, head.partition_id)
                assert table is not None
                tables[index] = table
        busy = list(tables)
        budget = limits.max_messages
        chosen: dict[int, list[int]] = {}
        if not limits.orderly:
            for position, due_offsets in pop_commands.due_revivals([tables[index] for index in busy], budget):
                chosen[busy[position]] = list(due_offsets)
                budget -= len(due_offsets)
        cap = self.max_in_flight(group)
        rotation_key = (group, topic.name)
        start = self._rotation.get(rotation_key, 0)
        self._rotation[rotation_key] = start + 1
        for index in pop_commands.rotated(len(heads), start):
            if pop_bytes.spent:
                break
            state = tables.get(index)
            if state is None:
                head = heads[index]
                if budget <= 0 or head.next_offset >= self.broker.high_watermark(head.partition_id):
                    continue
                state = PopPartition(head.group, head.partition_id, head.topic, head.next_offset, head.last_epoch)
            offsets = chosen.get(index, [])
            if limits.orderly:
                if pop_commands.orderly_blocked(state):
                    continue
                offsets = pop_commands.first_revived(state, budget)
                budget -= len(offsets)
            room = max(0, cap - state.in_flight())
            new_budget = min(budget, room)  # revived ones add no entry
            if not offsets and (new_budget <= 0 or state.next_offset >= self.broker.high_watermark(state.partition_id)):
                continue
            budget -= take(index, state, offsets, new_budget, min(room, DELAYED_PER_POP))

    def _heads_or_create(self, group: str, topic: TopicState) -> list[PopHead]:
        """The group's table heads on every partition of ``topic``, the missing ones created at once (a group's
        first pop on a topic starts every partition where it is): staged together, the store folding them in
        one call rather than one call and one table each. On a wide topic `_polled` has created them already."""
        store = self.broker.store
        heads = [pop_head(store.state(PROJECTION_NAME, pop_key(group, pid))) for pid in topic.partition_ids]
        if all(head is not None for head in heads):
            return cast("list[PopHead]", heads)
        self._create_cursors(group, topic, [pid for pid, head in zip(topic.partition_ids, heads, strict=True)
                                            if head is None])
        created = [pop_head(store.state(PROJECTION_NAME, pop_key(group, pid))) for pid in topic.partition_ids]
        assert all(head is not None for head in created)
        return cast("list[PopHead]", created)

    def _without_cursor(self, group: str, partition_ids: Sequence[int]) -> list[int]:
        store = self.broker.store
        return [pid for pid in partition_ids if store.state(PROJECTION_NAME, pop_key(group, pid)) is None]

    def _create_cursors(self, group: str, topic: TopicState, partition_ids: Sequence[int]) -> None:
        """Stage a `PopCursorCreated` for each of ``partition_ids`` (of ``topic``) the group still has no table on
        and that still exists, at its log start (``consumer.init.mode`` earliest) or its high watermark.

        A new group on 10,000 partitions staged them in one stretch, 44-62 ms of the event loop; `_polled` creates
        that many a part a turn (`Broker.stage_in_parts`), in one WriteBatch all the same. A part asks again what is
        missing: another pop of the group may have created some meanwhile."""
        missing = [pid for pid in self._without_cursor(group, partition_ids) if self.broker.partition_exists(pid)]
        if not missing:
            return
        earliest = self.settings(group).get(INIT_MODE_KEY, "latest") == "earliest"
        self.broker.stage([PopCursorCreated(group, pid, topic.name,
                                            self.broker.partition(pid).log_start_offset if earliest
                                            else self.broker.high_watermark(pid)) for pid in missing])

    def _delay(self, state: PopPartition, held: Sequence[tuple[int, int]]) -> PopPartition:
        """Park held-back records in the table until their due time (`PopDelayed`): the revive timer turns
        them visible then, on the broker clock, and wakes long polls."""
        event = pop_commands.delayed(state, held, self.broker.clock.now_ms())
        if event is None:
            return state
        self._stage(state, [event])
        return self.table(state.group, state.partition_id) or state

    def _record_checkpoint(self, state: PopPartition, consumer: str, revived: Sequence[int], found: Collection[int],
                           next_offset: int, limits: PopLimits) -> tuple[CheckpointCreated, PopPartition] | None:
        """Record the pop of the ``found`` offsets (the ``revived`` ones among them, and new ones up to
        ``next_offset``); a revived record the log no longer holds is settled instead, so it never takes a pop's
        place again. The event and the table after it; ``None`` if nothing was recorded."""
        now = self.broker.clock.now_ms()
        present = set(found) if revived else ()  # a pop of fresh records only needs no set of them
        gone = [entry for offset in revived if offset not in present and (entry := state.entry(offset)) is not None]
        if gone:
            self._stage(state, [pop_commands.dead_lettered(state, gone, now, "", -1, -1, GONE_REASON)])
            state = self.table(state.group, state.partition_id) or state
        event = pop_commands.checkpoint(state, consumer, sorted(found), next_offset, now, limits)
        if event is None:
            return None
        self._stage(state, [event])
        after = self.table(state.group, state.partition_id)
        assert after is not None
        return event, after

    def _checkpoint(self, state: PopPartition, index: int, topic_id: uuid.UUID, consumer: str,
                    revived: Sequence[int], records: Mapping[int, Record], next_offset: int, limits: PopLimits
                    ) -> list[PoppedRecord]:
        """`_record_checkpoint` of ``records``, each handed out with its receipt handle (v0)."""
        recorded = self._record_checkpoint(state, consumer, revived, records.keys(), next_offset, limits)
        if recorded is None:
            return []
        event, after = recorded
        popped: list[PoppedRecord] = []
        for offset in event.offsets:
            entry = after.entry(offset)
            assert entry is not None
            handle = ReceiptHandle(state.group, topic_id, index, offset, entry.epoch)
            popped.append(PoppedRecord(index, records[offset], handle.text(), entry.reconsume_times,
                                       entry.invisible_until_ms))
        return popped

    async def _wait(self, timeout_s: float, partition_ids: Sequence[int]) -> None:
        """Sleep until records are appended to ``partition_ids`` or revived anywhere, or the timeout passes."""
        await wait_first(timeout_s, self._available.wait(), self.broker.wait_for_data(timeout_s, partition_ids))

    def _wake(self) -> None:
        self._available.set()
        self._available = asyncio.Event()

    # -- admin ----------------------------------------------------------------------------------

    def reset(self, group: str, topic: TopicState, partitions: Sequence[int], to: str, value: int = 0
              ) -> list[tuple[int, int]]:
        """An admin reset (F41) of ``group``'s pop position on the ``partitions`` (indexes) of ``topic``: ``to`` is
        ``earliest``, ``latest``, ``offset`` (``value``, clamped to the log) or ``timestamp`` (the first record at or
        after ``value`` ms, else the log end). It takes precedence over the pop position and the init mode (a
        partition never popped starts there); in-flight entries are dropped. Staged; ``(index, new position)``."""
        self._require()
        now = self.broker.clock.now_ms()
        reason = f"admin reset to {to}" + (f" {value}" if to in ("offset", "timestamp") else "")
        moved: list[tuple[int, int]] = []
        for index in partitions:
            partition_id = topic.partition_ids[index]
            offset = self.reset_offset(partition_id, to, value)
            state = self.table(group, partition_id)
            if state is None:
                self.broker.stage([PopCursorCreated(group, partition_id, topic.name, offset)])
            else:
                self._stage(state, pop_commands.reset(state, offset, now, reason))
            moved.append((index, offset))
        self._wake()
        return moved

    def reset_offset(self, partition_id: int, to: str, value: int) -> int:
        """Where a reset ``to`` (with ``value``) puts the pop position of ``partition_id``."""
        log_start = self.broker.partition(partition_id).log_start_offset
        end = self.broker.high_watermark(partition_id)
        if to == "earliest":
            return log_start
        if to == "latest":
            return end
        if to == "offset":
            return min(max(value, log_start), end)
        _, found = lookup(self.broker, partition_id, value)
        return end if found < 0 else max(found, log_start)

    def evict(self, group: str, partition_id: int, offset: int, reason: str) -> bool:
        """Skip ``group``'s records of ``partition_id`` below ``offset`` (a backlog eviction): the entries below it
        are dropped, the pop position moves there if it was below. Staged; whether anything changed."""
        state = self.table(group, partition_id)
        if state is None:
            return False
        events = pop_commands.evict(state, offset, self.broker.clock.now_ms(), reason)
        self._stage(state, events)
        if events:
            self._wake()
        return bool(events)

    # -- time -----------------------------------------------------------------------------------

    def _track(self, key: str, state: PopPartition) -> None:
        deadline = state.next_deadline()
        if deadline is None:
            self._deadlines.pop(key, None)
        else:
            self._deadlines[key] = deadline
            self.timer.schedule(deadline)

    def _partition_exists(self, state: PopPartition) -> bool:
        topic = self.broker.topic(state.topic)
        return topic is not None and state.partition_id in topic.partition_ids

    def _on_commit(self, events: Sequence[LoggedEvent]) -> None:
        """A deleted topic's tables are due at once: the timer deletes them (never revives their records)."""
        deleted = {pid for logged in events if isinstance(logged.event, TopicDeleted)
                   for pid in logged.event.partition_ids}
        if not deleted or not self.enabled():
            return
        now = self.broker.clock.now_ms()
        for key, state in self.broker.store.entities(PROJECTION_NAME).items():
            if isinstance(state, PopHead) and state.partition_id in deleted:
                self._deadlines[key] = now
                self.timer.schedule(now)

    def next_deadline(self) -> int | None:
        return min(self._deadlines.values(), default=None)

    def tick(self) -> list[Event]:
        """Revive what is due (or dead-letter it past the max reconsume times); stage and return the events."""
        now = self.broker.clock.now_ms()
        staged: list[Event] = []
        for key, deadline in list(self._deadlines.items()):
            if deadline > now:
                continue
            state = self._table_at(key)
            if state is None:
                self._deadlines.pop(key, None)
                continue
            if not self._partition_exists(state):
                gone: list[Event] = [*self._drop_all(state, TOPIC_DELETED_REASON, now),
                                     PopCursorDeleted(state.group, state.partition_id, TOPIC_DELETED_REASON)]
                self._stage(state, gone)
                staged.extend(gone)
                continue
            revived, exhausted = pop_commands.revive(state, now, self.max_reconsume_times(state.group))
            events: list[Event] = [revived] if revived is not None else []
            if exhausted:
                events.extend(self._dead_letter(state, exhausted, now))
            self._stage(state, events)
            staged.extend(events)
            after = self.table(state.group, state.partition_id)
            if after is None:
                self._deadlines.pop(key, None)
            else:
                self._track(key, after)  # the exact earliest deadline (`_stage` may have kept a lower bound)
        if staged:
            self._wake()
        return staged

    def _drop_all(self, state: PopPartition, reason: str, now: int) -> list[Event]:
        """The event dropping every entry of the table (its page rows go with it); none if it holds none."""
        head = pop_head(self.broker.store.state(PROJECTION_NAME, pop_key(state.group, state.partition_id)))
        if head is None or not head.pages:
            return []
        return [PopEntriesDropped(state.group, state.partition_id, page_ranges(head.pages), reason, now)]

    def close(self) -> None:
        self.timer.close()
