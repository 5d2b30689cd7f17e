"""The log cleaner: compacts partitions of ``cleanup.policy=compact`` topics on the broker clock.

It keeps the segment model of every compacted partition (`core.compaction.segments`) from the commits it
hears of, asks `core.compaction.cleanable` which partition is due (the dirtiest, as Kafka's cleaner picks) and
when the next one will be, and sleeps on a `DeadlineTimer` until then: a commit that closes a segment or ends a
transaction wakes it, nothing polls. A pass (`cleaning_pass`) runs one slice per event-loop turn as a task; on a
manual clock it runs whole inside the tick, so LogwrightAdvanceClock answers after it. Memory: the segment
models (a few numbers per modelled segment of the dirty part) and one pass's key map, bounded by
``log.cleaner.dedupe.buffer.size``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Iterator, Sequence

from logwright.compat.broker import Broker
from logwright.compat.coordinators.cleaning_pass import PassReport, describe, run_pass
from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.compat.wire.record_batch import parse_header
from logwright.core.clock import ManualClock
from logwright.core.compaction.cleanable import CleaningChoice, PartitionView, choose, due_at, first_dirty_offset
from logwright.core.compaction.offset_map import capacity_for
from logwright.core.compaction.segments import SegmentModel
from logwright.core.compaction.settings import CompactionSettings, is_compacted
from logwright.core.compaction.state import CleanerCheckpoint, checkpoint_key
from logwright.core.events import (
    ConfigChanged,
    LogTruncated,
    PartitionsCreated,
    RecordsAppended,
    TopicCreated,
    TopicDeleted,
)
from logwright.core.events.compaction import PartitionCompacted
from logwright.core.events.transactions import TransactionMarkerWritten
from logwright.core.log.catalog import TopicState
from logwright.core.log.partition_log import PartitionState, partition_key
from logwright.core.transactions.partition_transactions import PartitionTransactions
from logwright.eventstore.interface import LoggedEvent

log = logging.getLogger(__name__)

FAILURE_BACKOFF_MS = 15_000
"""After a pass fails, the partition waits this long (broker clock) before it is tried again (Kafka's
``log.cleaner.backoff.ms`` default)."""


class LogCleaner:
    """Compaction of every compacted partition of one broker; `tick` starts the pass that is due."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._models: dict[int, SegmentModel] = {}
        self._topics: dict[int, str] = {}
        self._settings: dict[str, CompactionSettings] = {}
        self._pass: asyncio.Task[None] | None = None
        self._backoff_until: dict[int, int] = {}
        self.last_report: PassReport | None = None
        self.timer = DeadlineTimer(broker.clock, self.next_deadline, self.tick, "log-cleaner")
        broker.store.add_commit_listener(self._on_commit)
        broker.store.add_reload_listener(self._load)
        self._load()

    # -- the segment models ---------------------------------------------------------------------

    def _load(self) -> None:
        """Model every compacted partition from its stored batch headers (start-up, after a store reload)."""
        self._models.clear()
        self._topics.clear()
        self._settings.clear()
        for topic in self.broker.topics():
            self._model_topic(topic)

    def _model_topic(self, topic: TopicState) -> None:
        for partition_id in topic.partition_ids:
            self._models.pop(partition_id, None)
            self._topics.pop(partition_id, None)
        self._settings.pop(topic.name, None)
        if not is_compacted(self.broker.topic_config(topic, "cleanup.policy")):
            return
        settings = self.settings(topic.name)
        for partition_id in topic.partition_ids:
            model = SegmentModel()
            start = self._first_dirty(partition_id)
            for base_offset, data in self.broker.store.scan_batches(partition_id, start, 2**63 - 1):
                header = parse_header(data)
                model.append(base_offset, header.last_offset + 1, len(data), header.max_timestamp, settings)
            self._models[partition_id] = model
            self._topics[partition_id] = topic.name

    def _first_dirty(self, partition_id: int) -> int:
        return first_dirty_offset(self._view(partition_id))

    def settings(self, topic: str) -> CompactionSettings:
        """The topic's compaction settings, parsed once per config change (appends consult them)."""
        settings = self._settings.get(topic)
        if settings is None:
            state = self.broker.topic(topic)
            if state is None:
                raise KeyError(topic)
            settings = CompactionSettings.read(lambda name: self.broker.topic_config(state, name))
            self._settings[topic] = settings
        return settings

    def _on_commit(self, events: Sequence[LoggedEvent]) -> None:
        changed_topics: set[str] = set()
        wake = False
        for logged in events:
            event = logged.event
            if isinstance(event, RecordsAppended):
                wake = self._appended(event) or wake
            elif isinstance(event, TransactionMarkerWritten):
                wake = wake or event.partition_id in self._models
            elif isinstance(event, PartitionCompacted) and event.cleaned_to >= 0:
                model = self._models.get(event.partition_id)
                if model is not None:
                    model.forget_below(event.cleaned_to)
            elif isinstance(event, LogTruncated):
                model = self._models.get(event.partition_id)
                if model is not None:
                    model.forget_below(event.log_start_offset)
            elif isinstance(event, TopicDeleted):
                for partition_id in event.partition_ids:
                    self._models.pop(partition_id, None)
                    self._topics.pop(partition_id, None)
            elif isinstance(event, TopicCreated | PartitionsCreated):
                changed_topics.add(event.topic)
            elif isinstance(event, ConfigChanged) and event.resource_type == "topic":
                changed_topics.add(event.resource_name)
        for name in changed_topics:
            topic = self.broker.topic(name)
            if topic is not None:
                self._model_topic(topic)
                wake = True
        if wake:
            self.timer.wake()

    def _appended(self, event: RecordsAppended) -> bool:
        """Extend the model; ``True`` when a segment rolled (closed segments are what may become cleanable)."""
        model = self._models.get(event.partition_id)
        if model is None:
            return False
        segments = len(model.segments)
        model.append(event.base_offset, event.last_offset + 1, event.byte_size, event.max_timestamp,
                     self.settings(self._topics[event.partition_id]))
        return len(model.segments) > segments and segments > 0

    # -- deciding -------------------------------------------------------------------------------

    def _view(self, partition_id: int) -> PartitionView:
        state = self.broker.store.state("partitions", partition_key(partition_id))
        partition = state if isinstance(state, PartitionState) else PartitionState(partition_id)
        checkpoint = self.broker.store.state("compaction", checkpoint_key(partition_id))
        transactions = self.broker.store.state("partition_transactions", str(partition_id))
        high_watermark = self.broker.high_watermark(partition_id)
        stable = (transactions.last_stable_offset(high_watermark) if isinstance(transactions, PartitionTransactions)
                  else high_watermark)
        cleaned_to, horizon = ((checkpoint.cleaned_to, checkpoint.next_delete_horizon_ms)
                               if isinstance(checkpoint, CleanerCheckpoint) else (0, -1))
        return PartitionView(partition.log_start_offset, partition.next_offset, partition.byte_size, stable,
                             cleaned_to, horizon)

    def _choices(self, now_ms: int) -> Iterator[tuple[int, CleaningChoice | None, int | None]]:
        """(partition id, the range to clean now or ``None``, when to look again) per compacted partition."""
        for partition_id, model in self._models.items():
            if self._backoff_until.get(partition_id, now_ms) > now_ms:
                yield partition_id, None, self._backoff_until[partition_id]
                continue
            settings = self.settings(self._topics[partition_id])
            view = self._view(partition_id)
            choice = choose(view, model, settings, now_ms)
            yield partition_id, choice, None if choice is not None else due_at(view, model, settings, now_ms)

    def next_deadline(self) -> int | None:
        if self._pass is not None and not self._pass.done():
            return None
        now = self.broker.clock.now_ms()
        deadlines = [now if choice is not None else due for _, choice, due in self._choices(now)]
        present = [deadline for deadline in deadlines if deadline is not None]
        return min(present) if present else None

    def filthiest(self, now_ms: int) -> tuple[int, CleaningChoice] | None:
        """The due partition with the highest dirty ratio (Kafka's pick), forced ones first."""
        due = [(partition_id, choice) for partition_id, choice, _ in self._choices(now_ms) if choice is not None]
        if not due:
            return None
        return max(due, key=lambda item: (item[1].forced, item[1].dirty_ratio))

    # -- cleaning -------------------------------------------------------------------------------

    def tick(self) -> None:
        """Start the due pass, if any and none runs; on a manual clock run due passes to the end at once."""
        if self._pass is not None and not self._pass.done():
            return
        if isinstance(self.broker.clock, ManualClock):
            for _ in range(len(self._models) + 1):
                started = self._start()
                if started is None:
                    return
                try:
                    for _ in started[1]:
                        pass
                except Exception:
                    self._failed(started[0])
            return
        started = self._start()
        if started is not None:
            self._pass = asyncio.get_running_loop().create_task(self._run(*started), name="log-cleaner-pass")

    def _start(self) -> tuple[int, Iterator[None]] | None:
        now = self.broker.clock.now_ms()
        picked = self.filthiest(now)
        if picked is None:
            return None
        partition_id, choice = picked
        report = PassReport(partition_id, choice.first_dirty_offset)
        self.last_report = report
        settings = self.settings(self._topics[partition_id])
        capacity = capacity_for(int(self.broker.broker_config("log.cleaner.dedupe.buffer.size")))
        return partition_id, self._committed(run_pass(self.broker.store, partition_id, choice, settings, capacity,
                                                      now, report), report)

    def _committed(self, slices: Iterator[None], report: PassReport) -> Iterator[None]:
        """The pass with each slice's WriteBatch written before the loop moves on (the store stages, the broker
        commits: nothing else may come along to commit it)."""
        for _ in slices:
            self.broker.commit_now()
            yield
        self.broker.commit_now()
        if report.completed:
            log.info("%s", describe(report))
        else:
            log.info("the pass over partition id %d stopped early (topic deleted)", report.partition_id)

    async def _run(self, partition_id: int, slices: Iterable[None]) -> None:
        try:
            for _ in slices:
                await asyncio.sleep(0)
        except Exception:
            self._failed(partition_id)
        finally:
            self.timer.wake()

    def _failed(self, partition_id: int) -> None:
        log.exception("a compaction pass over partition id %d failed; it is tried again in %d ms", partition_id,
                      FAILURE_BACKOFF_MS)
        self._backoff_until[partition_id] = self.broker.clock.now_ms() + FAILURE_BACKOFF_MS

    def close(self) -> None:
        self.timer.close()
        if self._pass is not None:
            self._pass.cancel()
