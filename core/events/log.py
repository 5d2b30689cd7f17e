"""Events of topics and their partition logs (tags 1-6, 10 and 12-15): topics, configs, stored batches, truncation,
producer ids and their expiry, delayed records, the cluster's finalized feature levels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events.base import ConfigChanges, ConfigEntries, Event


@dataclass(frozen=True, slots=True)
class TopicCreated(Event):
    """A topic and its partitions; partition ids are global u32s that key the records column family."""

    TAG: ClassVar[int] = 1
    topic: str
    topic_id: bytes
    partition_ids: tuple[int, ...]
    configs: ConfigEntries = ()


@dataclass(frozen=True, slots=True)
class PartitionsCreated(Event):
    """Partitions added to an existing topic (CreatePartitions); ids continue the global sequence."""

    TAG: ClassVar[int] = 2
    topic: str
    partition_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicDeleted(Event):
    TAG: ClassVar[int] = 3
    topic: str
    topic_id: bytes
    partition_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class ConfigChanged(Event):
    """Config overrides set (a value) or removed back to the default (``None``) on one resource."""

    TAG: ClassVar[int] = 4
    resource_type: str
    resource_name: str
    changes: ConfigChanges


@dataclass(frozen=True, slots=True)
class RecordsAppended(Event):
    """One RecordBatch stored at ``base_offset``; enough to answer any question but the payload."""

    TAG: ClassVar[int] = 5
    partition_id: int
    base_offset: int
    record_count: int
    byte_size: int
    max_timestamp: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.record_count - 1


@dataclass(frozen=True, slots=True)
class LogTruncated(Event):
    """The log start moved up (retention or DeleteRecords); whole batches below it are deleted."""

    TAG: ClassVar[int] = 6
    partition_id: int
    log_start_offset: int
    removed_batches: int = 0
    removed_bytes: int = 0
    reason: str = "delete-records"


@dataclass(frozen=True, slots=True)
class ProducerIdAllocated(Event):
    """InitProducerId handed out an id (and epoch); ids are never reused, even across restarts."""

    TAG: ClassVar[int] = 10
    producer_id: int
    producer_epoch: int
    transactional_id: str | None = None


@dataclass(frozen=True, slots=True)
class ProducerStatesExpired(Event):
    """Idle producers' states on one partition forgotten (Kafka's ``producer.id.expiration.ms``): their sequences and
    epochs; a producer's next batch there is taken as its first."""

    TAG: ClassVar[int] = 14
    partition_id: int
    producer_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DelayedRecordsIndexed(Event):
    """Records of one appended batch that share consumers may not acquire before their time.

    ``entries`` are ``(offset, deliver_at_ms)`` in offset order, read from the records' delivery headers
    when the batch was appended at ``appended_at_ms`` (broker clock); written in the batch's WriteBatch,
    so the records and their delays are stored together or not at all. An index entry, never a copy.
    """

    TAG: ClassVar[int] = 12
    partition_id: int
    appended_at_ms: int
    entries: tuple[tuple[int, int], ...]
    own_row: bool = False
    """True: the entries are a row of their own (keyed by the partition and the first entry's offset), written
    once and removed by `DelayedRecordsDropped`. False (every entry logged before the per-append rows): they
    join the partition's one legacy row, which drops entries due by the append, as the index first did."""


@dataclass(frozen=True, slots=True)
class DelayedRecordsDropped(Event):
    """Rows of the delayed-delivery index no longer needed: every entry due, truncated, or its topic deleted.

    ``rows`` names each row by the offset of its first entry (-1: the partition's legacy row). Staged by the
    ``delayed_delivery`` plugin in the WriteBatch of the change that made them unneeded (an append, an
    acquisition or acknowledgement on the partition, a truncation, a topic deletion).
    """

    TAG: ClassVar[int] = 13
    partition_id: int
    rows: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class FeatureLevelsUpdated(Event):
    """UpdateFeatures changed the finalized feature levels (KIP-584): every feature's level from now on (0: not
    finalized) and the finalized-features epoch ApiVersions names from now on."""

    TAG: ClassVar[int] = 15
    levels: tuple[tuple[str, int], ...]
    epoch: int


LOG_EVENT_TYPES: tuple[type[Event], ...] = (
    TopicCreated,
    PartitionsCreated,
    TopicDeleted,
    ConfigChanged,
    RecordsAppended,
    LogTruncated,
    ProducerIdAllocated,
    ProducerStatesExpired,
    DelayedRecordsIndexed,
    DelayedRecordsDropped,
    FeatureLevelsUpdated,
)
