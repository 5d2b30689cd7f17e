"""Decisions on a cursor: each command checks the current `CursorState` and returns the events to append.

Commands never change state themselves; the caller appends the events and the projection folds them.
Wrong-state requests raise `InvalidRecordState` (Kafka's INVALID_RECORD_STATE) or `InvalidRequest`,
with a message naming the offsets, and nothing is changed.

An ack for a record whose lock ran out is accepted when nobody has acquired the record since and the
ack comes from the consumer that held it: it acknowledges that very delivery, so redelivering it would
only make a duplicate (RocketMQ's stale-handle weakness, W10). Once another consumer holds the record,
the late ack gets an explicit error, never silence.
"""

from __future__ import annotations

from collections.abc import Iterator

from .cursor import CursorState, Delivery, carve_all
from .cursor_events import (
    LockExpired,
    LockRenewed,
    OffsetRanges,
    RecordsAcked,
    RecordsAcquired,
    RecordsRejected,
    RecordsReleased,
)
from .errors import InvalidRecordState, InvalidRequest
from .events import Event
from .rangeset import RangeSet

DELIVERY_LIMIT_REASON = "delivery count limit reached"


def _normalised(ranges: OffsetRanges) -> RangeSet:
    for first, last in ranges:
        if first > last or first < 0:
            raise InvalidRequest(f"offset range ({first}, {last}) is not a valid inclusive range")
    return RangeSet.from_ranges(ranges)


def available(state: CursorState, log_start: int, log_end: int, now_ms: int) -> Iterator[tuple[int, int]]:
    """Ranges that may be acquired now, in offset order: not settled, not locked, not delayed."""
    start = max(state.mark_delete_position + 1, log_start)
    if start >= log_end:
        return
    blocked = RangeSet.from_ranges((
        *state.settled.ranges,
        *((delivery.first, delivery.last) for delivery in state.in_flight),
        *((span.first, span.last) for span in state.redeliveries if span.available_at_ms > now_ms),
    ))
    yield from blocked.missing(start, log_end - 1).ranges


def acquire(
    state: CursorState,
    log_start: int,
    log_end: int,
    consumer: str,
    max_records: int,
    now_ms: int,
    lock_duration_ms: int,
    eligible: RangeSet | None = None,
) -> RecordsAcquired | None:
    """Lock up to ``max_records`` of the next available offsets for ``consumer``; ``None`` if there are none.

    ``eligible`` narrows the choice (a subscription mode's filter, e.g. Key_Shared's owned key hashes);
    offsets outside it are skipped, not consumed.
    """
    if max_records <= 0:
        return None
    chosen: list[tuple[int, int]] = []
    budget = max_records
    for first, last in available(state, log_start, log_end, now_ms):
        pieces = [(first, last)] if eligible is None else eligible.within(first, last).ranges
        for piece_first, piece_last in pieces:
            take_last = min(piece_last, piece_first + budget - 1)
            chosen.append((piece_first, take_last))
            budget -= take_last - piece_first + 1
            if budget == 0:
                break
        if budget == 0:
            break
    if not chosen:
        return None
    return RecordsAcquired(state.subscription, state.partition_id, consumer, tuple(chosen), now_ms + lock_duration_ms)


def _held_by(state: CursorState, consumer: str, ranges: OffsetRanges, accept_expired: bool) -> None:
    """Raise unless every offset of ``ranges`` is in flight to ``consumer`` (or, if allowed, was last)."""
    wanted = _normalised(ranges)
    held = RangeSet.from_ranges((
        *((d.first, d.last) for d in state.in_flight if d.consumer == consumer),
        *((r.first, r.last) for r in state.redeliveries if accept_expired and r.previous_consumer == consumer),
    ))
    missing = wanted.difference(held)
    if missing:
        raise InvalidRecordState(
            f"offsets {list(missing.ranges)} of {state.topic} (subscription {state.subscription!r}) are not "
            f"acquired by {consumer!r}: they were never delivered to it, are already settled, or are held by "
            "another consumer"
        )


def acknowledge(state: CursorState, consumer: str, ranges: OffsetRanges) -> RecordsAcked:
    """Individual acknowledgement (ACCEPT) of records ``consumer`` holds."""
    _held_by(state, consumer, ranges, accept_expired=True)
    return RecordsAcked(state.subscription, state.partition_id, consumer, _normalised(ranges).ranges)


def acknowledge_cumulative(state: CursorState, consumer: str, offset: int, log_end: int) -> RecordsAcked | None:
    """Settle everything up to ``offset``; only single-active modes may ask (the caller checks the mode)."""
    if offset >= log_end:
        raise InvalidRequest(f"cannot acknowledge up to offset {offset}: the log of {state.topic} ends at {log_end}")
    if offset <= state.mark_delete_position:
        return None
    first = state.mark_delete_position + 1
    return RecordsAcked(state.subscription, state.partition_id, consumer, ((first, offset),), cumulative=True)


def _limit_split(
    state: CursorState, ranges: OffsetRanges, delivery_count_limit: int
) -> tuple[OffsetRanges, OffsetRanges]:
    """Split in-flight ``ranges`` into those that may go out again and those that used up their attempts."""
    taken, _ = carve_all(state.in_flight, _normalised(ranges).ranges)
    again = tuple((d.first, d.last) for d in taken if d.delivery_count < delivery_count_limit)
    spent = tuple((d.first, d.last) for d in taken if d.delivery_count >= delivery_count_limit)
    return RangeSet.from_ranges(again).ranges, RangeSet.from_ranges(spent).ranges


def release(
    state: CursorState,
    consumer: str,
    ranges: OffsetRanges,
    now_ms: int,
    delay_ms: int,
    delivery_count_limit: int,
) -> list[Event]:
    """Negative acknowledgement (RELEASE): redeliver after ``delay_ms``, or archive at the delivery limit."""
    if delay_ms < 0:
        raise InvalidRequest(f"a redelivery delay must not be negative, got {delay_ms} ms")
    _held_by(state, consumer, ranges, accept_expired=False)
    again, spent = _limit_split(state, ranges, delivery_count_limit)
    events: list[Event] = []
    if again:
        available_at = now_ms + delay_ms if delay_ms else 0
        events.append(RecordsReleased(state.subscription, state.partition_id, consumer, again, available_at))
    if spent:
        events.append(RecordsRejected(state.subscription, state.partition_id, consumer, spent, DELIVERY_LIMIT_REASON))
    return events


def reject(
    state: CursorState, consumer: str, ranges: OffsetRanges, reason: str = "rejected by consumer"
) -> RecordsRejected:
    """REJECT: archive records ``consumer`` holds; they are never delivered again."""
    _held_by(state, consumer, ranges, accept_expired=True)
    return RecordsRejected(state.subscription, state.partition_id, consumer, _normalised(ranges).ranges, reason)


def renew(state: CursorState, consumer: str, ranges: OffsetRanges, now_ms: int, lock_duration_ms: int) -> LockRenewed:
    """RENEW: extend the locks ``consumer`` holds by a full lock duration from now."""
    _held_by(state, consumer, ranges, accept_expired=False)
    return LockRenewed(state.subscription, state.partition_id, consumer, _normalised(ranges).ranges,
                       now_ms + lock_duration_ms)


def expire_locks(state: CursorState, now_ms: int, delivery_count_limit: int) -> list[Event]:
    """Locks whose deadline has passed: available again, or archived if their attempts are used up."""
    expired = tuple((d.first, d.last) for d in state.in_flight if d.lock_deadline_ms <= now_ms)
    if not expired:
        return []
    again, spent = _limit_split(state, expired, delivery_count_limit)
    events: list[Event] = []
    if again:
        events.append(LockExpired(state.subscription, state.partition_id, again))
    if spent:
        events.append(RecordsRejected(state.subscription, state.partition_id, "", spent, DELIVERY_LIMIT_REASON))
    return events


def release_consumer(state: CursorState, consumer: str, now_ms: int, count_as_failed: bool) -> RecordsReleased | None:
    """A consumer left: what it held is available again at once.

    ``count_as_failed=False`` (a clean leave) takes back the attempt; ``True`` (session timeout, crash)
    keeps it, so a record that kills its consumers still reaches the delivery limit.
    """
    held = in_flight_for(state, consumer)
    if not held:
        return None
    return RecordsReleased(state.subscription, state.partition_id, consumer, held, 0,
                           delivery_uncounted=not count_as_failed)


def in_flight_for(state: CursorState, consumer: str) -> OffsetRanges:
    return RangeSet.from_ranges((d.first, d.last) for d in state.in_flight if d.consumer == consumer).ranges


def deliveries(state: CursorState, ranges: OffsetRanges) -> list[Delivery]:
    """The in-flight entries covering ``ranges`` (for answering an acquisition with delivery counts)."""
    taken, _ = carve_all(state.in_flight, _normalised(ranges).ranges)
    return taken


def delivery_count(state: CursorState, offset: int) -> int:
    """How many times ``offset`` was handed out and not settled (0 if never, or settled)."""
    for delivery in state.in_flight:
        if delivery.first <= offset <= delivery.last:
            return delivery.delivery_count
    for redelivery in state.redeliveries:
        if redelivery.first <= offset <= redelivery.last:
            return redelivery.delivery_count
    return 0


def backlog(state: CursorState, log_start: int, log_end: int) -> int:
    """Unsettled records between the cursor and the log end (in flight included)."""
    start = max(state.mark_delete_position + 1, log_start)
    if start >= log_end:
        return 0
    return log_end - start - len(state.settled.below(log_end).at_or_above(start))


def next_deadline(state: CursorState, now_ms: int) -> int | None:
    """The earliest time something changes by itself: a lock expiring or a delayed record coming due."""
    times = [d.lock_deadline_ms for d in state.in_flight]
    times.extend(r.available_at_ms for r in state.redeliveries if r.available_at_ms > now_ms)
    return min(times) if times else None
