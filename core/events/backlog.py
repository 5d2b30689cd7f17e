"""Backlog-quota events (tags 100-109): what the ``consumer_backlog_eviction`` policy did, for the audit trail,
and how an evicted group's later commits were kept from undoing it.

Pulsar's eviction skips a cursor silently (seed weakness W6); here every skip is an event in the same
WriteBatch as the cursor move it explains, so the log says who lost which records, and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events.base import Event


@dataclass(frozen=True, slots=True)
class BacklogEvicted(Event):
    """A subscription's unsettled records ``from_offset..to_offset - 1`` on one partition were skipped.

    ``kind`` says what the subscription is (``group``: a classic or KIP-848 group's committed offset;
    ``cursor``: a share group or logwright subscription; ``pop``: a pop group, whose move the ``pop`` plugin
    derives in the same WriteBatch); ``records`` and ``bytes`` are what left its
    backlog (bytes count whole stored batches); ``reason`` names the quota that was over.
    """

    TAG: ClassVar[int] = 100
    subscription: str
    kind: str
    topic: str
    partition_id: int
    from_offset: int
    to_offset: int
    records: int
    bytes: int
    reason: str


@dataclass(frozen=True, slots=True)
class EvictedCommitRaised(Event):
    """A member of a group that eviction moved committed ``requested_offset``, below the eviction point; the
    group's committed offset was kept at ``evicted_to`` (an `OffsetCommitted` there precedes this event).

    A classic or KIP-848 consumer keeps its own fetch position, so after an eviction it commits where it was;
    as with a Pulsar ack below the mark-delete position, that moves nothing back.
    """

    TAG: ClassVar[int] = 101
    group: str
    topic: str
    partition_id: int
    requested_offset: int
    evicted_to: int


@dataclass(frozen=True, slots=True)
class EvictionPointLifted(Event):
    """The group no longer needs its commits raised to ``evicted_to`` on the partition: it committed past it
    (``reason`` ``committed``), an empty group's commit reset it (``reset``: AlterConsumerGroupOffsets,
    ``kafka-consumer-groups --reset-offsets``), its offsets were deleted (``deleted``), or the topic was
    (``topic deleted``)."""

    TAG: ClassVar[int] = 102
    group: str
    topic: str
    partition_id: int
    evicted_to: int
    reason: str


BACKLOG_EVENT_TYPES: tuple[type[Event], ...] = (BacklogEvicted, EvictedCommitRaised, EvictionPointLifted)
