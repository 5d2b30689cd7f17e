"""Every state change the broker remembers, as frozen, versioned dataclasses.

Each event class has a stable ``TAG`` (its identity in the log, never reused) and a ``VERSION``; the
codec in `eventstore` writes both, so logs written by older versions stay readable. Payloads of
records are not in events: `RecordsAppended` describes a stored batch, the batch itself lives in the
``records`` column family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

ConfigEntries = tuple[tuple[str, str], ...]
ConfigChanges = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True, slots=True)
class Event:
    TAG: ClassVar[int] = 0
    VERSION: ClassVar[int] = 1


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
class OffsetCommitted(Event):
    """A consumer group's committed position (the next offset to read) on one partition."""

    TAG: ClassVar[int] = 7
    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    commit_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class OffsetDeleted(Event):
    TAG: ClassVar[int] = 8
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupDeleted(Event):
    TAG: ClassVar[int] = 9
    group: str


@dataclass(frozen=True, slots=True)
class ProducerIdAllocated(Event):
    """InitProducerId handed out an id (and epoch); ids are never reused, even across restarts."""

    TAG: ClassVar[int] = 10
    producer_id: int
    producer_epoch: int
    transactional_id: str | None = None


@dataclass(frozen=True, slots=True)
class RebalanceStarted(Event):
    """A classic group began a rebalance (PreparingRebalance): every member must rejoin."""

    TAG: ClassVar[int] = 20
    group: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class MemberJoined(Event):
    """A member joined or rejoined a classic group with these protocols (name, metadata)."""

    TAG: ClassVar[int] = 21
    group: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class MemberLeft(Event):
    """A member left, missed its session timeout or did not rejoin a rebalance in time."""

    TAG: ClassVar[int] = 22
    group: str
    member_id: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class GenerationStarted(Event):
    """The join phase completed: a new generation with its protocol and leader (none when empty)."""

    TAG: ClassVar[int] = 23
    group: str
    generation: int
    protocol_name: str | None
    leader: str | None


@dataclass(frozen=True, slots=True)
class AssignmentsSynced(Event):
    """The leader's assignments (member id, assignment bytes) for a generation: the group is Stable."""

    TAG: ClassVar[int] = 24
    group: str
    generation: int
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class StaticMemberReplaced(Event):
    """A static member (``group.instance.id``) rejoined under a new member id; the old id is fenced."""

    TAG: ClassVar[int] = 25
    group: str
    group_instance_id: str
    old_member_id: str
    new_member_id: str


@dataclass(frozen=True, slots=True)
class ManualClockSet(Event):
    """A manual clock (``serve --manual-clock``, tests) started or was advanced to ``now_ms``.

    A restarted broker resumes from the last one, so deadlines recorded before a restart stay where
    they were in the broker's time. A broker on the wall clock never writes it.
    """

    TAG: ClassVar[int] = 11
    now_ms: int


# Defined after Event, which they subclass; the import is here so this stays the one list of event types.
from logwright.core.events.acls import ACL_EVENT_TYPES  # noqa: E402
from logwright.core.events.consumer_groups import CONSUMER_GROUP_EVENT_TYPES  # noqa: E402
from logwright.core.events.cursors import CURSOR_EVENT_TYPES  # noqa: E402
from logwright.core.events.share_groups import SHARE_GROUP_EVENT_TYPES  # noqa: E402
from logwright.core.events.transactions import TRANSACTION_EVENT_TYPES  # noqa: E402
from logwright.core.share_groups.switch_delays import SwitchDelayStarted  # noqa: E402

ALL_EVENT_TYPES: tuple[type[Event], ...] = (
    TopicCreated,
    PartitionsCreated,
    TopicDeleted,
    ConfigChanged,
    RecordsAppended,
    LogTruncated,
    OffsetCommitted,
    OffsetDeleted,
    GroupDeleted,
    ProducerIdAllocated,
    RebalanceStarted,
    MemberJoined,
    MemberLeft,
    GenerationStarted,
    AssignmentsSynced,
    StaticMemberReplaced,
    ManualClockSet,
    *CURSOR_EVENT_TYPES,
    *SHARE_GROUP_EVENT_TYPES,
    *ACL_EVENT_TYPES,
    *TRANSACTION_EVENT_TYPES,
    SwitchDelayStarted,
    *CONSUMER_GROUP_EVENT_TYPES,
)
