"""The backlog of every partition whose topic has a quota, kept current from commits, and the verdict on appends.

A partition's `BatchIndex` is built once, from the stored batches' headers from its slowest subscription's
position (the only time a batch is read), then kept by folding each commit's `RecordsAppended`,
`LogTruncated` and `TopicDeleted`; a `PartitionCompacted` has the index read again from the rewritten
batches. Positions are read from the subscriptions' projections at each question, so an acknowledgement
staged earlier in the same turn already counts. Appends admitted but not yet
committed are counted as ``pending`` until the commit that writes them, so several requests of one
turn cannot pass the quota together.

Synchronous and free of I/O: the backlog plugin feeds it through `BacklogReads`, a narrow view of the broker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from logwright.core.events import (
    ConfigChanged,
    Event,
    LogTruncated,
    PartitionsCreated,
    RecordsAppended,
    TopicCreated,
    TopicDeleted,
)
from logwright.core.events.compaction import PartitionCompacted

from . import eviction
from .backlog import Backlog, Position, after_append, backlog_of
from .batch_index import BatchExtent, BatchIndex
from .positions import POSITION_SOURCES
from .quota import EVICTION, EXCEPTION, HOLD, Quota, quota_of

_LOG_EVENTS: frozenset[type[Event]] = frozenset({RecordsAppended, PartitionCompacted, LogTruncated, TopicCreated,
                                                 TopicDeleted, ConfigChanged})
"""The events `BacklogTracker.on_commit` follows as changes to the logs and quotas; every other one may start a
position. By exact type: six ``isinstance`` checks per event were most of a 5,000-commit OffsetCommit's fold."""

NONE_LOCATED: tuple[set[str], ...] = ()
"""The keys of a partition where no source located an entity (most partitions of a topic of many): shared, and
replaced by a partition's own sets when a commit starts a position there."""

DROP_AFTER_RECORDS = 4096
"""Settled offsets at the front of an index before its batches there are dropped (not at every admission)."""


class BacklogReads(Protocol):
    """What the tracker reads of the broker."""

    def now_ms(self) -> int: ...

    def broker_config(self, name: str) -> str: ...

    def topic_names(self) -> tuple[str, ...]: ...

    def topic_configs(self, topic: str) -> Mapping[str, str]:
        """The topic's own overrides (not the defaults)."""
        ...

    def partition_ids(self, topic: str) -> tuple[int, ...] | None: ...

    def log_range(self, partition_id: int) -> tuple[int, int]:
        """``(log start, log end)`` of the partition, staged appends included."""
        ...

    def entities(self, projection: str) -> Mapping[str, Any]: ...

    def batch_extents(self, partition_id: int, from_offset: int) -> Iterable[BatchExtent]:
        """The committed batches holding ``from_offset`` and after, from their headers."""
        ...


@dataclass(frozen=True, slots=True)
class Admit:
    """The append may go; ``events`` (an eviction's) are staged with it."""

    events: tuple[Event, ...] = ()


@dataclass(frozen=True, slots=True)
class Hold:
    """Park the append until the backlog falls under the quota (or the request times out)."""

    message: str


@dataclass(frozen=True, slots=True)
class Refuse:
    """Refuse the append now (``producer_exception``)."""

    message: str


Verdict = Admit | Hold | Refuse


@dataclass(slots=True)
class _Tracked:
    topic: str
    partition_index: int
    index: BatchIndex
    pending_records: int = 0
    pending_bytes: int = 0


class BacklogTracker:
    """The backlog state of the partitions of topics with a quota."""

    def __init__(self, reads: BacklogReads) -> None:
        self._reads = reads
        self._tracked: dict[int, _Tracked] = {}
        self._quotas: dict[str, Quota] = {}
        self._quota_topics: list[str] | None = None
        self._age_scope: tuple[frozenset[str], frozenset[int]] | None = None
        """The age-evicting topics and their partition ids, found again when quotas or topics change."""
        self._keys: dict[int, Sequence[set[str]]] = {}
        """Per partition located, per position source: the entity keys holding a position there (`NONE_LOCATED`
        for a partition where none was; no entry for a partition not located yet)."""

    # -- what a topic's quota is ------------------------------------------------------------------

    def quota(self, topic: str, topic_configs: Mapping[str, str] | None = None) -> Quota:
        """``topic``'s effective quota, remembered until a config change names the topic or the broker."""
        known = self._quotas.get(topic)
        if known is None:
            configs = self._reads.topic_configs(topic) if topic_configs is None else topic_configs
            known = self._quotas[topic] = quota_of(configs, self._reads.broker_config)
        return known

    def age_evicting_topics(self) -> list[str]:
        """The topics whose age limit the timer keeps (policy ``consumer_backlog_eviction``)."""
        return [topic for topic in self.quota_topics()
                if self.quota(topic).policy == EVICTION and self.quota(topic).age_ms > 0]

    def quota_topics(self) -> list[str]:
        """The topics with a limit, found from every topic's configs (at start and after config changes)."""
        if self._quota_topics is None:
            self._quota_topics = [topic for topic in self._reads.topic_names() if self.quota(topic).limited]
        return self._quota_topics

    # -- following commits ------------------------------------------------------------------------

    def on_commit(self, events: Sequence[Event]) -> bool:
        """Fold a commit; ``True`` when it may move the next age deadline (wake the timer): a quota may have
        changed, or a backlog moved while some topic evicts by age."""
        changed = reconfigured = False
        ids_by_topic: dict[str, tuple[int, ...]] = {}
        for each in self._tracked.values():
            each.pending_records = each.pending_bytes = 0
        age_topics, age_partitions = self._age_evicting_scope()
        for event in events:
            if type(event) not in _LOG_EVENTS:  # most of a big commit: checked once, not against each kind below
                if self._keys:  # no partition was located yet: locating will find what this started
                    self._started(event, ids_by_topic)
                if isinstance(event, PartitionsCreated):
                    self._age_scope = None  # found again at the next commit
                if not changed and age_topics:
                    changed = _may_move(event, age_topics, age_partitions)
            elif isinstance(event, RecordsAppended):
                tracked = self._tracked.get(event.partition_id)
                if tracked is not None:
                    tracked.index.append_batch(event.base_offset, event.record_count, event.byte_size,
                                               event.max_timestamp)
                    changed = True
            elif isinstance(event, PartitionCompacted):  # batches rewritten smaller: read their headers again
                self._tracked.pop(event.partition_id, None)
                changed = True
            elif isinstance(event, LogTruncated):
                truncated = self._tracked.get(event.partition_id)
                if truncated is not None:
                    truncated.index.drop_below(event.log_start_offset)
                changed = True
            elif isinstance(event, TopicCreated):
                self._quota_topics = None
                reconfigured = True
            elif isinstance(event, TopicDeleted):
                self._quotas.pop(event.topic, None)
                self._quota_topics = None
                for partition_id in event.partition_ids:
                    self._tracked.pop(partition_id, None)
                    self._keys.pop(partition_id, None)
                reconfigured = True
            elif isinstance(event, ConfigChanged):
                self._quota_topics = None
                if event.resource_type == "broker":
                    self._quotas.clear()
                else:
                    self._quotas.pop(event.resource_name, None)
                reconfigured = True
        if reconfigured:
            self._age_scope = None
        return reconfigured or (changed and bool(self.age_evicting_topics()))

    def _age_evicting_scope(self) -> tuple[frozenset[str], frozenset[int]]:
        if self._age_scope is None:
            topics = frozenset(self.age_evicting_topics())
            self._age_scope = (topics, frozenset(partition_id for topic in topics
                                                 for partition_id in self._reads.partition_ids(topic) or ()))
        return self._age_scope

    # -- backlogs -----------------------------------------------------------------------------------

    def _track(self, topic: str, partition_index: int, partition_id: int, positions: list[Position],
               log_start: int) -> _Tracked:
        tracked = self._tracked.get(partition_id)
        lowest = max(min((p.first_unsettled for p in positions), default=log_start), log_start)
        if tracked is None:
            index = BatchIndex(partition_id, lowest)
            for extent in self._reads.batch_extents(partition_id, lowest):
                index.append(extent)
            tracked = self._tracked[partition_id] = _Tracked(topic, partition_index, index)
        elif tracked.index.start_offset > lowest:  # a position moved back: only the batches below are read
            tracked.index.extend_down(lowest, self._reads.batch_extents(partition_id, lowest))
        elif positions and lowest - tracked.index.start_offset >= DROP_AFTER_RECORDS:
            tracked.index.drop_below(lowest)
        return tracked

    def positions(self, topic: str, partition_index: int, partition_id: int) -> list[Position]:
        """Every subscription's position on the partition: the sources' entities are located once per topic (for
        all its partitions), then only the entities found and those a commit started (`PositionSource.started_by`)
        are read."""
        keys = self._keys.get(partition_id)
        if keys is None:
            keys = self._locate(topic, partition_index, partition_id)
        found: list[Position] = []
        for source, known in zip(POSITION_SOURCES, keys, strict=False):  # none when nothing was found there
            states = self._states(source.projection)
            for key in list(known):
                position = source.read(key, states.get(key), topic, partition_index, partition_id, states)
                if position is None:
                    known.discard(key)
                else:
                    found.append(position)
        return found

    def _locate(self, topic: str, partition_index: int, partition_id: int) -> Sequence[set[str]]:
        """Locate every source's entities on all of ``topic``'s partitions in one pass over its states, noting each
        partition's keys; the keys on ``partition_id``. Only the partitions asked about are read later: reading a
        position may be dear (a pop table is assembled from its pages)."""
        partition_ids = self._reads.partition_ids(topic) or ()
        remember = partition_index < len(partition_ids) and partition_ids[partition_index] == partition_id
        if not remember:  # not the topic's partition as the broker knows it (gone in this turn): note nothing
            partition_ids = (*((-1,) * partition_index), partition_id)
        located: dict[int, list[set[str]]] = {}
        for number, source in enumerate(POSITION_SOURCES):
            for located_id, key in source.locate(self._states(source.projection), topic, partition_ids):
                keys = located.get(located_id)
                if keys is None:
                    keys = located[located_id] = [set() for _ in POSITION_SOURCES]
                keys[number].add(key)
        if remember:
            for each in partition_ids:
                self._keys[each] = located.get(each, NONE_LOCATED)
        return located.get(partition_id, NONE_LOCATED)

    def _states(self, projection: str) -> Mapping[str, Any]:
        """A source's projection states; none when its plugin is disabled (the ``pop`` plugin's, say)."""
        try:
            return self._reads.entities(projection)
        except KeyError:
            return {}

    def _started(self, event: Event, ids_by_topic: dict[str, tuple[int, ...]]) -> None:
        """Note the entity ``event`` starts on a partition whose positions were scanned; ``ids_by_topic``: the
        partition ids of the topics this commit named (an OffsetCommit of 5,000 partitions looked its topic up 5,000
        times, 20 ms of the commit)."""
        for number, source in enumerate(POSITION_SOURCES):
            started = source.started_by(event)
            if started is None:
                continue
            topic, partition, key = started
            if topic:
                ids = ids_by_topic.get(topic)
                if ids is None:
                    ids = ids_by_topic[topic] = self._reads.partition_ids(topic) or ()
                partition = ids[int(partition)] if 0 <= int(partition) < len(ids) else -1
            keys = self._keys.get(int(partition))
            if keys is NONE_LOCATED:
                keys = self._keys[int(partition)] = [set() for _ in POSITION_SOURCES]
            if keys is not None:
                keys[number].add(key)

    def backlogs(self, topic: str, partition_index: int, partition_id: int) -> list[tuple[Position, Backlog]]:
        """Every subscription's backlog on the partition (committed and staged state, pending appends aside)."""
        positions = self.positions(topic, partition_index, partition_id)
        log_start = self._reads.log_range(partition_id)[0]
        tracked = self._track(topic, partition_index, partition_id, positions, log_start)
        return [(position, backlog_of(tracked.index, position, log_start)) for position in positions]

    # -- the verdict on an append -------------------------------------------------------------------

    def admit(self, topic: str, partition_index: int, partition_id: int, records: int, byte_size: int,
              topic_configs: Mapping[str, str] | None = None) -> Verdict:
        """Whether an append of ``records`` and ``byte_size`` bytes may go now, per the topic's quota.

        The quota is checked against the backlog the append would leave, so it is crossed by at most this
        one request when the backlog was just under it. Eviction plans the moves for every subscription
        over the target; their events go with the append.
        """
        quota = self.quota(topic, topic_configs)
        if not quota.limited:
            return Admit()
        now = self._reads.now_ms()
        positions = self.positions(topic, partition_index, partition_id)
        if not positions:
            return Admit()
        log_start = self._reads.log_range(partition_id)[0]
        tracked = self._track(topic, partition_index, partition_id, positions, log_start)
        if quota.policy == EVICTION:
            evicting = self._evictions(topic, partition_index, partition_id, quota, now, records, byte_size)
            self._count_pending(partition_id, records, byte_size)
            return Admit(tuple(evicting))
        extra_records, extra_bytes = tracked.pending_records + records, tracked.pending_bytes + byte_size
        worst: tuple[Position, str, Backlog] | None = None
        for position in positions:
            total = after_append(backlog_of(tracked.index, position, log_start), extra_records, extra_bytes, now)
            reason = quota.exceeded_by(total, now)
            if reason is not None and (worst is None or (total.bytes, total.records) > (worst[2].bytes,
                                                                                      worst[2].records)):
                worst = (position, reason, total)
        if worst is None:
            self._count_pending(partition_id, records, byte_size)
            return Admit()
        position, reason, _ = worst
        message = (f"backlog quota {reason} on {topic}-{partition_index} is exceeded by {position.describe()}; "
                   f"policy {quota.policy}")
        if quota.policy == HOLD:
            return Hold(message + ": the request was held until its timeout, retry later")
        assert quota.policy == EXCEPTION
        return Refuse(message + ": the request is refused until the subscription settles records")

    def _count_pending(self, partition_id: int, records: int, byte_size: int) -> None:
        tracked = self._tracked[partition_id]
        tracked.pending_records += records
        tracked.pending_bytes += byte_size

    def _evictions(self, topic: str, partition_index: int, partition_id: int, quota: Quota, now: int,
                   records: int = 0, byte_size: int = 0) -> list[Event]:
        tracked = self._tracked[partition_id]
        log_start, _ = self._reads.log_range(partition_id)
        incoming = eviction.Incoming(records + tracked.pending_records, byte_size + tracked.pending_bytes, now)
        staged: list[Event] = []
        for position in self.positions(topic, partition_index, partition_id):
            move = eviction.plan(tracked.index, position, quota, now, log_start, incoming)
            if move is not None:
                staged.extend(eviction.events(move, topic, partition_index, now))
        return staged

    # -- age quotas on the broker clock -------------------------------------------------------------

    def age_evictions(self) -> list[Event]:
        """The evictions due now on topics with an age limit and the eviction policy (the timer's work)."""
        now = self._reads.now_ms()
        staged: list[Event] = []
        for topic in self.age_evicting_topics():
            quota = self.quota(topic)
            for partition_index, partition_id in enumerate(self._reads.partition_ids(topic) or ()):
                if self.backlogs(topic, partition_index, partition_id):
                    staged.extend(self._evictions(topic, partition_index, partition_id, quota, now))
        return staged

    def next_age_deadline(self) -> int | None:
        """When the oldest unsettled record of an age-limited, evicting topic goes over its limit, among the
        subscriptions an eviction can move (a due deadline nothing can act on would keep the timer from the
        next one that it can)."""
        deadline: int | None = None
        for topic in self.age_evicting_topics():
            quota = self.quota(topic)
            for partition_index, partition_id in enumerate(self._reads.partition_ids(topic) or ()):
                for position, backlog in self.backlogs(topic, partition_index, partition_id):
                    if position.kind not in eviction.EVICTABLE_KINDS:
                        continue
                    if backlog.records and backlog.oldest_timestamp >= 0:
                        due = backlog.oldest_timestamp + quota.age_ms + 1
                        deadline = due if deadline is None else min(deadline, due)
        return deadline

    def describe(self, topic: str, partition_index: int, partition_id: int) -> list[tuple[Position, Backlog]]:
        """Each subscription's backlog for inspection, with the topic's quota state."""
        return self.backlogs(topic, partition_index, partition_id)


def _may_move(event: Event, age_topics: frozenset[str], age_partitions: frozenset[int]) -> bool:
    """Whether a commit's event may move a backlog on an age-evicting topic, so the age deadline must be found again:
    every group, share or pop event woke the timer, which then read every partition of those topics (11-67 ms a
    commit at 2,000-5,000 partitions, an unrelated one-partition OffsetCommit included). An event that names
    neither a partition nor a topic (a group's deletion) is taken as one that may."""
    partition_id = getattr(event, "partition_id", None)
    if isinstance(partition_id, int):
        return partition_id in age_partitions
    topic = getattr(event, "topic", None)
    return topic in age_topics if isinstance(topic, str) else True
