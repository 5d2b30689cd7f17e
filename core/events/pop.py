"""Events of pop consumption (RocketMQ 5's Pop): checkpoints, acks, invisible times, revivals (tags 90-98),
positions moved and entries dropped (tags 41-42).

One group's pops on one partition fold into one in-flight table (`logwright.core.pop.inflight`). Each event
names the offsets it touches; bodies are never copied: a revived record is delivered again from its own
partition, by reference. Reconsume counts are folded from the checkpoints, so they survive restarts by
construction, and every handle carries an epoch the fold can compare (an older one is refused as stale).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events.base import Event


@dataclass(frozen=True, slots=True)
class PopEvent(Event):
    """Base of the events folded into one ``(group, partition_id)`` in-flight table."""

    group: str
    partition_id: int


@dataclass(frozen=True, slots=True)
class PopCursorCreated(PopEvent):
    """The group starts popping the partition at ``start_offset`` (``logwright.pop.init.mode``)."""

    TAG: ClassVar[int] = 90
    topic: str
    start_offset: int


@dataclass(frozen=True, slots=True)
class CheckpointCreated(PopEvent):
    """One pop on one partition (RocketMQ's CK): ``offsets`` handed out, invisible until
    ``pop_time_ms + invisible_time_ms``, each under the handle epoch ``epoch``; offsets below ``next_offset``
    that were neither popped nor in flight (control records, compacted gaps) count as settled."""

    TAG: ClassVar[int] = 91
    consumer: str
    offsets: tuple[int, ...]
    next_offset: int
    pop_time_ms: int
    invisible_time_ms: int
    epoch: int
    orderly: bool = False


@dataclass(frozen=True, slots=True)
class CheckpointAcked(PopEvent):
    """Popped records settled (RocketMQ's ACK): each ``(offset, epoch)`` of ``handles`` named the current
    handle, and so did every offset of each ``(first, last, epoch)`` of ``ranges`` (a compact ack: one range for
    a pop of 1,024, where pairs cost a fold step per record)."""

    TAG: ClassVar[int] = 92
    consumer: str
    handles: tuple[tuple[int, int], ...]
    ranges: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class HandleSuperseded(PopEvent):
    """Base of the events that move one in-flight record (handle ``old_epoch``) to a new deadline
    ``invisible_until_ms`` under the new epoch ``epoch``; ``old_epoch`` is stale from then on."""

    consumer: str
    offset: int
    old_epoch: int
    epoch: int
    invisible_until_ms: int


@dataclass(frozen=True, slots=True)
class InvisibleTimeChanged(HandleSuperseded):
    """The holder changed the invisible time: the record stays held, under the new handle ``epoch``."""

    TAG: ClassVar[int] = 93


@dataclass(frozen=True, slots=True)
class Revived(PopEvent):
    """In-flight records whose invisible time ran out (deadline <= broker time ``revive_time_ms``): visible to
    the next pop, which counts one more reconsume; their handles are stale."""

    TAG: ClassVar[int] = 94
    offsets: tuple[int, ...]
    revive_time_ms: int


@dataclass(frozen=True, slots=True)
class PopNacked(HandleSuperseded):
    """The holder gave ``offset`` back as failed: it stays invisible until ``invisible_until_ms`` (the retry
    table's level for its attempt), then revives; ``epoch`` is nobody's handle."""

    TAG: ClassVar[int] = 95


@dataclass(frozen=True, slots=True)
class PopDeadLettered(PopEvent):
    """Records past the group's max reconsume times, copied to ``dead_letter_topic`` in the same WriteBatch and
    settled here: ``records`` are ``(offset, deliveries)``; the copies start at ``dead_letter_base_offset``
    of ``dead_letter_partition_id`` in that order (-1 when no copy could be written)."""

    TAG: ClassVar[int] = 96
    records: tuple[tuple[int, int], ...]
    reason: str
    time_ms: int
    dead_letter_topic: str
    dead_letter_partition_id: int
    dead_letter_base_offset: int


@dataclass(frozen=True, slots=True)
class PopCursorDeleted(PopEvent):
    """The group's table on the partition is gone with the partition (its topic was deleted): a topic
    recreated under the same name has new partitions and starts afresh, never reviving the old records."""

    TAG: ClassVar[int] = 97
    reason: str


@dataclass(frozen=True, slots=True)
class PopDelayed(PopEvent):
    """A pop passed over records a plugin holds back (``logwright_hold_back``: delayed delivery): ``records``
    are ``(offset, due_ms)``; each waits in the in-flight table, never delivered, until its due time revives it
    (the broker clock), so the pop position moves on without losing it."""

    TAG: ClassVar[int] = 98
    records: tuple[tuple[int, int], ...]
    time_ms: int


@dataclass(frozen=True, slots=True)
class PopPositionMoved(PopEvent):
    """The group's pop position on the partition is set to ``offset`` from outside the pops: an admin reset
    (F41: earliest, latest, an offset or a timestamp) or a backlog eviction; ``reason`` says which. The next
    pop of new records starts there; what is in flight is dropped by the `PopEntriesDropped` staged with it."""

    TAG: ClassVar[int] = 41
    offset: int
    reason: str
    time_ms: int


@dataclass(frozen=True, slots=True)
class PopEntriesDropped(PopEvent):
    """Every in-flight entry of the table inside ``ranges`` (inclusive ``(first, last)`` offsets) is settled
    without a delivery: skipped by a reset or an eviction, or gone with its deleted topic; their handles answer
    ``unknown`` from then on. With ``reason`` `PAGES_EMPTIED` nothing is in flight there any more: the event only
    lets the table's head forget pages that acks emptied (the fold cannot see that from the acks alone)."""

    TAG: ClassVar[int] = 42
    ranges: tuple[tuple[int, int], ...]
    reason: str
    time_ms: int


PAGES_EMPTIED = "pages emptied"
"""The `PopEntriesDropped` reason of an event that drops nothing and only prunes the head's page list."""

POP_EVENT_TYPES: tuple[type[Event], ...] = (
    PopCursorCreated,
    CheckpointCreated,
    CheckpointAcked,
    InvisibleTimeChanged,
    Revived,
    PopNacked,
    PopDeadLettered,
    PopCursorDeleted,
    PopDelayed,
    PopPositionMoved,
    PopEntriesDropped,
)
