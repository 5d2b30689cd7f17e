"""The log cleaner's segment model of every compacted partition, kept up to date from the commits.

A model covers a partition from its first dirty offset on (`core.compaction.segments`). At start-up (and after
a store reload) every model is built at once from the stored batch headers, before the broker serves. When a
topic becomes compacted later (CreateTopics, AlterConfigs) its existing log may be large, so its models are
built in slices of at most `SLICE_BYTES` or `SLICE_SECONDS` (about 600 MB/s of headers here, warm) by a task
that yields to the event loop in between; appends arriving meanwhile are read by the next slice, and the model
joins the others once its scan reaches the log end. On a manual clock the build runs at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from logwright.compat.broker import Broker
from logwright.compat.coordinators.cleaning_pass import SliceBudget
from logwright.compat.wire.record_batch import parse_header
from logwright.core.clock import ManualClock
from logwright.core.compaction.cleanable import PartitionView, first_dirty_offset
from logwright.core.compaction.segments import SegmentModel
from logwright.core.compaction.settings import CompactionSettings, is_compacted
from logwright.core.compaction.state import CleanerCheckpoint, checkpoint_key
from logwright.core.config.topic_synonyms import TOPIC_BROKER_SYNONYMS
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
_LOG_END = 2**63 - 1
_INHERITED = frozenset(synonym.name for synonyms in TOPIC_BROKER_SYNONYMS.values() for synonym in synonyms)
"""Broker keys topics inherit (``log.segment.bytes``, ``log.cleanup.policy``, ...): a change remodels every topic."""


def partition_view(broker: Broker, partition_id: int) -> PartitionView:
    """What the cleaning decision needs of a partition: its log, last stable offset and cleaner checkpoint."""
    state = broker.store.state("partitions", partition_key(partition_id))
    partition = state if isinstance(state, PartitionState) else PartitionState(partition_id)
    checkpoint = broker.store.state("compaction", checkpoint_key(partition_id))
    transactions = broker.store.state("partition_transactions", str(partition_id))
    high_watermark = broker.high_watermark(partition_id)
    stable = (transactions.last_stable_offset(high_watermark) if isinstance(transactions, PartitionTransactions)
              else high_watermark)
    cleaned_to, horizon = ((checkpoint.cleaned_to, checkpoint.next_delete_horizon_ms)
                           if isinstance(checkpoint, CleanerCheckpoint) else (0, -1))
    return PartitionView(partition.log_start_offset, partition.next_offset, partition.byte_size, stable,
                         cleaned_to, horizon)


@dataclass(slots=True)
class _Building:
    """A model being built: its topic, what it has so far and the offset its next slice scans from."""

    topic: str
    model: SegmentModel
    position: int


FOLLOWED_EVENTS = (RecordsAppended, TransactionMarkerWritten, PartitionCompacted, LogTruncated, TopicDeleted,
                   TopicCreated, PartitionsCreated, ConfigChanged)
"""What `SegmentModels.on_commit` follows: a commit holding none of them is not walked."""


class SegmentModels:
    """Every compacted partition's model; ``changed()`` is called when one may have become cleanable."""

    def __init__(self, broker: Broker, changed: Callable[[], None]) -> None:
        self.broker = broker
        self.models: dict[int, SegmentModel] = {}
        self.topics: dict[int, str] = {}
        self._settings: dict[str, CompactionSettings] = {}
        self._building: dict[int, _Building] = {}
        self._builder: asyncio.Task[None] | None = None
        self._changed = changed

    def load(self) -> None:
        """Model every compacted partition at once (start-up, after a store reload)."""
        self.models.clear()
        self.topics.clear()
        self._settings.clear()
        self._building.clear()
        for topic in self.broker.topics():
            self._restart(topic)
        self._build_all()

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

    def _restart(self, topic: TopicState, created: bool = False) -> None:
        """Forget the topic's models and, if it is compacted, queue them to be built from the first dirty offset.
        ``created``: the topic was created in the commit followed, so its partitions have nothing to forget (a walk
        of a 5,000-partition topic's ids, half a millisecond of the creating commit's turn, is skipped)."""
        if not created:
            for partition_id in topic.partition_ids:
                self.models.pop(partition_id, None)
                self.topics.pop(partition_id, None)
                self._building.pop(partition_id, None)
        self._settings.pop(topic.name, None)
        if is_compacted(self.broker.topic_config(topic, "cleanup.policy")):
            for partition_id in topic.partition_ids:
                start = first_dirty_offset(partition_view(self.broker, partition_id))
                self._building[partition_id] = _Building(topic.name, SegmentModel(), start)

    # -- building in slices -------------------------------------------------------------------------

    def _build_slice(self, partition_id: int, building: _Building) -> bool:
        """Scan one slice of the partition's batches into its model; ``True`` once the model reached the log end."""
        budget, settings = SliceBudget(), self.settings(building.topic)
        for base_offset, data in self.broker.store.scan_batches(partition_id, building.position, _LOG_END):
            header = parse_header(data)
            building.model.append(base_offset, header.last_offset + 1, len(data), header.max_timestamp, settings)
            building.position = header.last_offset + 1
            if budget.spend(len(data)):
                return False
        del self._building[partition_id]
        self.models[partition_id] = building.model
        self.topics[partition_id] = building.topic
        return True

    def _build_all(self) -> None:
        for partition_id, building in list(self._building.items()):
            while not self._build_slice(partition_id, building):
                pass

    def _start_building(self) -> None:
        """On a manual clock, or with no event loop running (a synchronous commit), build at once."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or isinstance(self.broker.clock, ManualClock):
            self._build_all()
            self._changed()
        elif self._building and (self._builder is None or self._builder.done()):
            self._builder = loop.create_task(self._build(), name="log-cleaner-models")

    async def _build(self) -> None:
        while self._building:
            partition_id, building = next(iter(self._building.items()))
            try:
                if self._build_slice(partition_id, building):
                    self._changed()
            except Exception:
                log.exception("modelling the segments of partition id %d failed; it is not compacted until the "
                              "topic's configs change or the broker restarts", partition_id)
                self._building.pop(partition_id, None)
            await asyncio.sleep(0)

    # -- following the commits ----------------------------------------------------------------------

    def on_commit(self, events: Sequence[LoggedEvent]) -> bool:
        """Follow what was committed; ``True`` when a partition may have become cleanable."""
        changed_topics: set[str] = set()
        created: set[str] = set()
        changed = False
        for logged in events:
            event = logged.event
            if isinstance(event, RecordsAppended):
                changed = self._appended(event) or changed
            elif isinstance(event, TransactionMarkerWritten):
                changed = changed or event.partition_id in self.models
            elif isinstance(event, PartitionCompacted) and event.cleaned_to >= 0:
                self._forget_below(event.partition_id, event.cleaned_to)
            elif isinstance(event, LogTruncated):
                self._forget_below(event.partition_id, event.log_start_offset)
            elif isinstance(event, TopicDeleted):
                for partition_id in event.partition_ids:
                    self.models.pop(partition_id, None)
                    self.topics.pop(partition_id, None)
                    self._building.pop(partition_id, None)
            elif isinstance(event, TopicCreated | PartitionsCreated):
                changed_topics.add(event.topic)
                if isinstance(event, TopicCreated):
                    created.add(event.topic)
            elif isinstance(event, ConfigChanged) and event.resource_type == "topic":
                changed_topics.add(event.resource_name)
            elif isinstance(event, ConfigChanged) and event.resource_type == "broker" and any(
                    name in _INHERITED for name, _ in event.changes):
                changed_topics.update(topic.name for topic in self.broker.topics())
        for name in changed_topics:
            topic = self.broker.topic(name)
            if topic is not None:
                self._restart(topic, created=name in created)
        if changed_topics:
            self._start_building()
        return changed

    def _appended(self, event: RecordsAppended) -> bool:
        """Extend the model; ``True`` when a segment rolled (closed segments are what may become cleanable)."""
        model = self.models.get(event.partition_id)
        if model is None:
            return False
        segments = len(model.segments)
        model.append(event.base_offset, event.last_offset + 1, event.byte_size, event.max_timestamp,
                     self.settings(self.topics[event.partition_id]))
        return len(model.segments) > segments and segments > 0

    def _forget_below(self, partition_id: int, offset: int) -> None:
        model = self.models.get(partition_id)
        if model is not None:
            model.forget_below(offset)
        building = self._building.get(partition_id)
        if building is not None:
            building.model.forget_below(offset)

    def close(self) -> None:
        if self._builder is not None:
            self._builder.cancel()
