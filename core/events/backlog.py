"""Backlog-quota events (tags 100-109): what the ``consumer_backlog_eviction`` policy did, for the audit trail.

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
    ``cursor``: a share group or logwright subscription); ``records`` and ``bytes`` are what left its
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


BACKLOG_EVENT_TYPES: tuple[type[Event], ...] = (BacklogEvicted,)
