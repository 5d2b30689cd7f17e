"""Events of a subscription's cursor on one partition: deliveries and their outcomes (tags 30-39).

Every event names offset *ranges* (inclusive ``(first, last)`` pairs): one event per request and
partition, never one per record, so a ShareFetch of 500 records is one small event. Delivery counts
are not carried: they are folded from the acquisitions, so they survive restarts by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events.base import Event

OffsetRanges = tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class CursorEvent(Event):
    """Base of the events folded into one ``(subscription, partition_id)`` cursor."""

    subscription: str
    partition_id: int


@dataclass(frozen=True, slots=True)
class SubscriptionCreated(CursorEvent):
    """A cursor starts: everything below ``start_offset`` counts as settled."""

    TAG: ClassVar[int] = 30
    topic: str
    start_offset: int


@dataclass(frozen=True, slots=True)
class RecordsAcquired(CursorEvent):
    """Records handed to ``consumer`` under a lock until ``lock_deadline_ms``; each one's count goes up by one."""

    TAG: ClassVar[int] = 31
    consumer: str
    ranges: OffsetRanges
    lock_deadline_ms: int


@dataclass(frozen=True, slots=True)
class RecordsAcked(CursorEvent):
    """Records settled as processed (ACCEPT); ``cumulative`` records that the ack named a position, not a set."""

    TAG: ClassVar[int] = 32
    consumer: str
    ranges: OffsetRanges
    cumulative: bool = False


@dataclass(frozen=True, slots=True)
class RecordsReleased(CursorEvent):
    """Records given back (negative ack / RELEASE): available again at ``available_at_ms`` (0: at once).

    ``delivery_uncounted`` takes back the count of the delivery being released, for releases that are
    not failures of the record (a consumer leaving cleanly before it looked at them).
    """

    TAG: ClassVar[int] = 33
    consumer: str
    ranges: OffsetRanges
    available_at_ms: int = 0
    delivery_uncounted: bool = False


@dataclass(frozen=True, slots=True)
class RecordsRejected(CursorEvent):
    """Records archived: never delivered again (REJECT, or the delivery-count limit was reached)."""

    TAG: ClassVar[int] = 34
    consumer: str
    ranges: OffsetRanges
    reason: str


@dataclass(frozen=True, slots=True)
class LockExpired(CursorEvent):
    """Acquisition locks that ran out (the ack timeout): available again at ``available_at_ms`` (0: at once;
    a later time when a plugin's release decision asked for a delay)."""

    TAG: ClassVar[int] = 35
    ranges: OffsetRanges
    available_at_ms: int = 0


@dataclass(frozen=True, slots=True)
class LockRenewed(CursorEvent):
    """The holder extended its locks (KIP-932 RENEW) to ``lock_deadline_ms``; counts do not change."""

    TAG: ClassVar[int] = 36
    consumer: str
    ranges: OffsetRanges
    lock_deadline_ms: int


@dataclass(frozen=True, slots=True)
class SubscriptionDeleted(CursorEvent):
    """The cursor is gone (its group or topic was deleted)."""

    TAG: ClassVar[int] = 37


@dataclass(frozen=True, slots=True)
class DeadLettered(CursorEvent):
    """Archived records copied to a dead-letter topic in the same WriteBatch as their `RecordsRejected`.

    The cursor does not change (the `RecordsRejected` beside it settles the records); this event keeps the
    attempt history the copy carries: ``deliveries`` are ``(first, last, delivery_count)``, ``consumer``
    the last holder ("" after a lock expiry), ``reason`` why they were archived, ``time_ms`` when, and
    where the copies went (``dead_letter_partition_id`` from ``dead_letter_base_offset``, in offset order).
    """

    TAG: ClassVar[int] = 38
    consumer: str
    deliveries: tuple[tuple[int, int, int], ...]
    reason: str
    time_ms: int
    dead_letter_topic: str
    dead_letter_partition_id: int
    dead_letter_base_offset: int


@dataclass(frozen=True, slots=True)
class MovedToRetry(CursorEvent):
    """A held record copied to the subscription's retry topic (Pulsar's ``reconsumeLater``) in the same
    WriteBatch as the `RecordsAcked` that settles the original.

    The cursor does not change (the ack beside it does); this event says where the copy went
    (``retry_partition_id`` at ``retry_offset``), the copy's ``reconsume_times`` and the ``delay_ms`` it waits.
    """

    TAG: ClassVar[int] = 39
    consumer: str
    offset: int
    reconsume_times: int
    delay_ms: int
    time_ms: int
    retry_topic: str
    retry_partition_id: int
    retry_offset: int


@dataclass(frozen=True, slots=True)
class DeadLetterDeferred(CursorEvent):
    """Records about to be dead-lettered whose copy the broker could not write (the dead-letter topic is
    missing, refuses it, or refused the append): they are kept, not archived, and offered again at
    ``available_at_ms`` with their delivery counts, when archiving them retries the copy.

    It replaces the `RecordsRejected` it would have followed, so nothing is lost while the topic is broken;
    ``deliveries`` are ``(first, last, delivery_count)``, ``error`` says why the copy failed.
    """

    TAG: ClassVar[int] = 40
    consumer: str
    deliveries: tuple[tuple[int, int, int], ...]
    reason: str
    time_ms: int
    dead_letter_topic: str
    error: str
    available_at_ms: int


CURSOR_EVENT_TYPES: tuple[type[Event], ...] = (
    SubscriptionCreated,
    RecordsAcquired,
    RecordsAcked,
    RecordsReleased,
    RecordsRejected,
    LockExpired,
    LockRenewed,
    SubscriptionDeleted,
    DeadLettered,
    MovedToRetry,
    DeadLetterDeferred,
)
