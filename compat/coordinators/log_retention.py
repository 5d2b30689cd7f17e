"""Time and size retention: deletes a partition's oldest whole segments when ``retention.ms`` or
``retention.bytes`` says so (topics whose ``cleanup.policy`` lists ``delete``; see docs/compaction.md).

Kafka looks every ``log.retention.check.interval.ms``; this task acts when a partition is due, on the broker
clock (a `DeadlineTimer`, nothing polls): by time when the oldest kept segment's newest record passes
``retention.ms`` (known from the last scan, or from the first append), by size when an append takes the log past
``retention.bytes`` plus the oldest segment; but never before the check interval has passed since the newest
append to a segment (`AppendMarks`, fed the broker clock at each commit), the latest a Kafka broker could delete
it. The append times are not stored: after a start every partition's existing offsets count as appended at the
start (conservative: Kafka's first check comes ``log.initial.task.delay.ms``, 30 s, after its start).

A scan reads stored batch headers from the log start (`core.compaction.segment_retention`), stops at the first segment
that stays, and moves the log start through the store's ``truncate`` (a `LogTruncated` event, reason ``retention-ms`` /
``retention-bytes``), the path DeleteRecords takes, so fetch, ListOffsets, cursors, share groups and pop see it as they
see a DeleteRecords. A scan truncates and yields to the event loop after every slice of at most 1 MiB or 20 ms of
headers; on a manual clock it runs whole inside the tick. Memory: two numbers per partition of a topic with a limit, and
at most about 65 append marks per partition appended to within the check interval.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence

from logwright.compat.broker import Broker
from logwright.compat.coordinators.cleaning_pass import SliceBudget
from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.compat.wire.record_batch import parse_header
from logwright.core.clock import ManualClock
from logwright.core.compaction.segment_retention import (
    CHECK_INTERVAL_MS,
    AppendMarks,
    RetentionScan,
    RetentionSettings,
)
from logwright.core.errors import DomainError
from logwright.core.events import ConfigChanged, PartitionsCreated, RecordsAppended, TopicCreated, TopicDeleted
from logwright.core.log.catalog import TopicState
from logwright.core.log.partition_log import PartitionState, partition_key
from logwright.eventstore.interface import LoggedEvent

log = logging.getLogger(__name__)
_DONE = object()
_LOG_END = 2**63 - 1


class LogRetention:
    """Retention of every partition of one broker; `tick` scans the partitions that are due."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._settings: dict[str, RetentionSettings | None] = {}
        self._topic_of: dict[int, str] = {}
        self._due: dict[int, int] = {}
        """Partition id -> broker ms from which a scan may delete something by time (or now, by size)."""
        self._size_due: dict[int, int] = {}
        """Partition id -> log size (bytes) from which a scan may delete something by size."""
        self._marks: dict[int, AppendMarks] = {}
        """Partition id -> its appends within the check interval (every partition: a limit may be set later)."""
        self._interval_ms = CHECK_INTERVAL_MS
        self._scan: asyncio.Task[None] | None = None
        self.truncations = 0
        self.timer = DeadlineTimer(broker.clock, self.next_deadline, self.tick, "log-retention")
        broker.store.add_commit_listener(
            self._on_commit, (RecordsAppended, TopicDeleted, TopicCreated, PartitionsCreated, ConfigChanged))
        broker.store.add_reload_listener(self.load)
        self.load()

    def load(self) -> None:
        """Every partition with a limit is due now (start-up, a store reload): its first scan finds its deadline.
        Partitions first seen here count as appended to now (their append times are not stored)."""
        self._settings.clear()
        self._topic_of.clear()
        self._due.clear()
        self._size_due.clear()
        interval = self._broker_config("log.retention.check.interval.ms")
        self._interval_ms = int(interval) if interval is not None else CHECK_INTERVAL_MS
        now = self.broker.clock.now_ms()
        for topic in self.broker.topics():
            self._track(topic)
            for partition_id in topic.partition_ids:
                if partition_id not in self._marks:
                    self._marks[partition_id] = AppendMarks(self._interval_ms, [(0, now)])

    def settings(self, topic: str) -> RetentionSettings | None:
        if topic not in self._settings:
            state = self.broker.topic(topic)
            self._settings[topic] = None if state is None else RetentionSettings.read(
                state.config, self._broker_config, lambda name: self.broker.topic_config(state, name))
        return self._settings[topic]

    def _broker_config(self, name: str) -> str | None:
        try:
            return self.broker.broker_config(name)
        except KeyError:
            return None

    def _track(self, topic: TopicState, appended_if_created: set[int] | None = None) -> None:
        """Every partition of ``topic`` holding records is due now, to find its deadline; an empty one gets its
        deadline from its first append (`_appended`). Scanning the 1,000 empty partitions of a topic just created
        took a twentieth of the broker's time while its first 100 MB were produced.

        ``appended_if_created``: the topic was created in the commit followed, and these partitions were appended
        to in it; no other of its partitions can hold a record or be due yet (a 5,000-partition CreateTopics
        looked up each partition's row in its commit's turn, a millisecond before a waiting client's answer)."""
        self._settings.pop(topic.name, None)
        settings = self.settings(topic.name)
        self._topic_of.update(dict.fromkeys(topic.partition_ids, topic.name))
        due, size_due = self._due, self._size_due
        if (due or size_due) and appended_if_created is None:
            for partition_id in topic.partition_ids:
                due.pop(partition_id, None)
                size_due.pop(partition_id, None)
        if settings is None or settings.unlimited:
            return
        now = self.broker.clock.now_ms()
        rows = self.broker.store.entities("partitions")  # a partition without a row is empty
        candidates = topic.partition_ids if appended_if_created is None else (
            [partition_id for partition_id in topic.partition_ids if partition_id in appended_if_created]
            if len(appended_if_created) < len(topic.partition_ids) else topic.partition_ids)
        for partition_id in candidates:
            if not _empty(rows.get(partition_key(partition_id))):
                due[partition_id] = now

    # -- following the commits ----------------------------------------------------------------------

    def _on_commit(self, events: Sequence[LoggedEvent]) -> None:
        earliest: int | None = None
        retrack: set[str] = set()
        created: set[str] = set()
        appended: set[int] = set()
        for logged in events:
            event = logged.event
            if isinstance(event, RecordsAppended):
                appended.add(event.partition_id)
                due = self._appended(event)
                if due is not None and (earliest is None or due < earliest):
                    earliest = due
            elif isinstance(event, TopicDeleted):
                for partition_id in event.partition_ids:
                    self._due.pop(partition_id, None)
                    self._size_due.pop(partition_id, None)
                    self._topic_of.pop(partition_id, None)
                    self._marks.pop(partition_id, None)
            elif isinstance(event, TopicCreated | PartitionsCreated):
                retrack.add(event.topic)
                if isinstance(event, TopicCreated):
                    created.add(event.topic)
            elif isinstance(event, ConfigChanged) and event.resource_type == "topic":
                retrack.add(event.resource_name)
            elif isinstance(event, ConfigChanged) and event.resource_type == "broker":
                self.load()
                earliest = self.broker.clock.now_ms()
        for name in retrack:
            topic = self.broker.topic(name)
            if topic is not None:
                self._track(topic, appended if name in created else None)
                earliest = self.broker.clock.now_ms()
        if earliest is not None:
            self.timer.schedule(earliest)

    def _appended(self, event: RecordsAppended) -> int | None:
        """Note the append's time and what it may make due; the new deadline if it is one."""
        partition_id = event.partition_id
        now = self.broker.clock.now_ms()
        marks = self._marks.get(partition_id)
        if marks is None:  # not built for every append just to be thrown away, as setdefault would
            marks = self._marks[partition_id] = AppendMarks(self._interval_ms)
        marks.note(event.base_offset, now)
        topic = self._topic_of.get(partition_id)
        settings = self.settings(topic) if topic is not None else None
        if settings is None or settings.unlimited:
            return None
        due: int | None = None
        if settings.retention_bytes >= 0:
            state = self.broker.store.state("partitions", partition_key(partition_id))
            size = state.byte_size if isinstance(state, PartitionState) else 0
            if size > settings.retention_bytes and size >= self._size_due.get(partition_id, 0):
                due = now  # an older segment may be free to go; the scan holds back the recent ones
        if due is None and settings.retention_ms >= 0 and event.max_timestamp >= 0:
            due = max(event.max_timestamp + settings.retention_ms + 1, now + self._interval_ms)
        if due is None:
            return None
        current = self._due.get(partition_id)
        if current is not None and current <= due:
            return None
        self._due[partition_id] = due
        return due

    # -- scanning -------------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        if self._scan is not None and not self._scan.done():
            return None
        return min(self._due.values()) if self._due else None

    def tick(self) -> None:
        """Scan every due partition: whole at once on a manual clock (unless a staging over turns holds commits: a
        truncation commits), else as a task in slices."""
        if self._scan is not None and not self._scan.done():
            return
        now = self.broker.clock.now_ms()
        due = [partition_id for partition_id, at in self._due.items() if at <= now]
        if not due:
            return
        if isinstance(self.broker.clock, ManualClock) and not self.broker.commits_held:  # else in slices, waiting
            for partition_id in due:
                for _ in self._scan_partition(partition_id, now):
                    pass
            return
        self._scan = asyncio.get_running_loop().create_task(self._run(due, now), name="log-retention-scan")

    async def _run(self, partition_ids: list[int], now: int) -> None:
        try:
            for partition_id in partition_ids:
                slices = self._scan_partition(partition_id, now)
                while True:
                    await self.broker.commits_free()  # each slice may commit: never between a staging's parts
                    if next(slices, _DONE) is _DONE:
                        break
                    await asyncio.sleep(0)
        finally:
            self.timer.wake()

    def _scan_partition(self, partition_id: int, now: int) -> Iterator[None]:
        """Decide and apply one partition's retention, truncating after each slice that got further."""
        self._due.pop(partition_id, None)
        topic = self._topic_of.get(partition_id)
        settings = self.settings(topic) if topic is not None else None
        state = self.broker.store.state("partitions", partition_key(partition_id))
        if settings is None or settings.unlimited or not isinstance(state, PartitionState) or _empty(state):
            return  # nothing to delete; an empty partition's first append makes it due (`_appended`)
        marks = self._marks.get(partition_id)
        if marks is not None:
            marks.prune(now)
        scan = RetentionScan(settings, now, state.byte_size, self.broker.high_watermark(partition_id), marks)
        budget, applied, finished = SliceBudget(), state.log_start_offset, True
        try:
            for _, data in self.broker.store.scan_batches(partition_id, 0, _LOG_END):
                header = parse_header(data)
                if header.last_offset < state.log_start_offset:
                    continue
                if not scan.feed(header.base_offset, header.last_offset + 1, len(data), header.max_timestamp):
                    finished = False
                    break
                if budget.spend(len(data)):
                    applied = self._truncate(partition_id, scan, applied)
                    yield
                    budget = SliceBudget()
            if finished:
                scan.finish()
            self._truncate(partition_id, scan, applied)
        except DomainError:
            return  # the topic was deleted between slices
        except Exception:
            log.exception("retention of partition id %d failed; it is tried again in a minute", partition_id)
            self._due[partition_id] = self.broker.clock.now_ms() + 60_000
            return
        if scan.due_at is not None:
            self._due[partition_id] = min(scan.due_at, self._due.get(partition_id, scan.due_at))
        if settings.retention_bytes >= 0:
            kept = scan.kept_bytes
            self._size_due[partition_id] = settings.retention_bytes + kept

    def _truncate(self, partition_id: int, scan: RetentionScan, applied: int) -> int:
        if scan.cut is None or scan.cut <= applied:
            return applied
        if self.broker.store.truncate(partition_id, scan.cut, scan.reason) is not None:
            self.truncations += 1
            self.broker.commit_now()
            log.info("retention (%s) moved the log start of partition id %d to %d", scan.reason, partition_id,
                     scan.cut)
        return scan.cut

    def close(self) -> None:
        self.timer.close()
        if self._scan is not None:
            self._scan.cancel()


def _empty(state: object) -> bool:
    """Whether a partition's state says it keeps no record (or names no partition): nothing retention could delete."""
    return not isinstance(state, PartitionState) or state.next_offset <= state.log_start_offset
