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

from bisect import bisect_right
from collections.abc import Callable, Iterator

from logwright.core.cursors.cursor import CursorState, Delivery, carve_all
from logwright.core.cursors.plugin_decisions import (
    Redeliver,
    Reject,
    ReleaseContext,
    ReleasedDelivery,
    ReleaseDecision,
    ReleaseReason,
)
from logwright.core.errors import InvalidRecordState, InvalidRequest, quoted
from logwright.core.events import Event
from logwright.core.events.cursors import (
    LockExpired,
    LockRenewed,
    OffsetRanges,
    RecordsAcked,
    RecordsAcquired,
    RecordsRejected,
    RecordsReleased,
)
from logwright.core.rangeset import RangeSet

DELIVERY_LIMIT_REASON = "delivery count limit reached"


def _normalised(ranges: OffsetRanges) -> RangeSet:
    for first, last in ranges:
        if first > last or first < 0:
            raise InvalidRequest(f"offset range ({first}, {last}) is not a valid inclusive range")
    return RangeSet.from_ranges(ranges)


def available(state: CursorState, log_start: int, log_end: int, now_ms: int) -> Iterator[tuple[int, int]]:
    """Ranges that may be acquired now (not settled, not locked, not delayed): due redeliveries first, the
    earliest due first (ties in offset order), then records never delivered, in offset order.

    RocketMQ reads its retry queue first only one time in five, at random (W11); here a record whose
    backoff ran out always goes before new ones, and in the order the backoffs ran out.
    """
    start = max(state.mark_delete_position + 1, log_start)
    if start >= log_end:
        return
    due = sorted((span for span in state.redeliveries if span.available_at_ms <= now_ms),
                 key=lambda span: (span.available_at_ms, span.first))
    for span in due:
        first, last = max(span.first, start), min(span.last, log_end - 1)
        if first <= last:
            yield first, last
    blocked = RangeSet.from_ranges((
        *state.settled.ranges,
        *((delivery.first, delivery.last) for delivery in state.in_flight),
        *((span.first, span.last) for span in state.redeliveries),
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
    """Lock up to ``max_records`` of the available offsets for ``consumer``, in `available`'s order (due
    redeliveries first); ``None`` if there are none.

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
    return RecordsAcquired(state.subscription, state.partition_id, consumer, RangeSet.from_ranges(chosen).ranges,
                           now_ms + lock_duration_ms)


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
            f"offsets {list(missing.ranges)} of {state.topic} (subscription {quoted(state.subscription)}) are not "
            f"acquired by {quoted(consumer)}: they were never delivered to it, are already settled, or are held by "
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


def _returned(
    state: CursorState,
    taken: list[Delivery],
    reason: ReleaseReason,
    now_ms: int,
    delay_ms: int,
    delivery_count_limit: int | None,
    context: ReleaseContext | None,
) -> list[Event]:
    """The events for in-flight ``taken`` deliveries that came back unacknowledged.

    Without a ``context`` the records go out again after ``delay_ms`` (at once if 0), or are archived
    once their count reached ``delivery_count_limit`` (``None``: never). With one, the plugins decide,
    once per consumer and delivery count (never per record).
    """
    again: dict[tuple[str, int], list[tuple[int, int]]] = {}
    archived: dict[tuple[str, str], list[tuple[int, int]]] = {}
    groups: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for delivery in taken:
        groups.setdefault((delivery.consumer, delivery.delivery_count), []).append((delivery.first, delivery.last))
    expired = reason is ReleaseReason.LOCK_EXPIRED
    for (consumer, count), spans in groups.items():
        decision: ReleaseDecision
        if context is None:
            limited = delivery_count_limit is not None and count >= delivery_count_limit
            decision = Reject(DELIVERY_LIMIT_REASON) if limited else Redeliver(delay_ms)
        else:
            decision = context.decide(ReleasedDelivery(
                state.subscription, state.topic, context.partition_index, RangeSet.from_ranges(spans).ranges, count,
                reason, consumer, now_ms, delay_ms if reason is ReleaseReason.RELEASED else None, context.settings))
        holder = "" if expired else consumer
        if isinstance(decision, Reject):
            archived.setdefault((holder, decision.reason), []).extend(spans)
        else:
            available_at = now_ms + decision.delay_ms if decision.delay_ms > 0 else 0
            again.setdefault((holder, available_at), []).extend(spans)
    events: list[Event] = []
    for (holder, available_at), spans in again.items():
        ranges = RangeSet.from_ranges(spans).ranges
        if expired:
            events.append(LockExpired(state.subscription, state.partition_id, ranges, available_at))
        else:
            events.append(RecordsReleased(state.subscription, state.partition_id, holder, ranges, available_at))
    for (holder, why), spans in archived.items():
        events.append(RecordsRejected(state.subscription, state.partition_id, holder,
                                      RangeSet.from_ranges(spans).ranges, why))
    return events


def release(
    state: CursorState,
    consumer: str,
    ranges: OffsetRanges,
    now_ms: int,
    delay_ms: int,
    delivery_count_limit: int,
    context: ReleaseContext | None = None,
) -> list[Event]:
    """Negative acknowledgement (RELEASE): redeliver after ``delay_ms``, or archive at the delivery limit
    (or as the plugins decide, given a ``context``)."""
    if delay_ms < 0:
        raise InvalidRequest(f"a redelivery delay must not be negative, got {delay_ms} ms")
    _held_by(state, consumer, ranges, accept_expired=False)
    taken, _ = carve_all(state.in_flight, _normalised(ranges).ranges)
    return _returned(state, taken, ReleaseReason.RELEASED, now_ms, delay_ms, delivery_count_limit, context)


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


def expire_locks(state: CursorState, now_ms: int, delivery_count_limit: int,
                 context: ReleaseContext | None = None) -> list[Event]:
    """Locks whose deadline has passed: available again, or archived if their attempts are used up."""
    expired = [d for d in state.in_flight if d.lock_deadline_ms <= now_ms]
    if not expired:
        return []
    return _returned(state, expired, ReleaseReason.LOCK_EXPIRED, now_ms, 0, delivery_count_limit, context)


def release_consumer(state: CursorState, consumer: str, now_ms: int, count_as_failed: bool,
                     delivery_count_limit: int | None = None, context: ReleaseContext | None = None) -> list[Event]:
    """A consumer left: what it held is available again at once.

    ``count_as_failed=False`` (a clean leave) takes back the attempt and asks nobody; ``True`` (session
    timeout, crash) keeps it, so a record that kills its consumers still reaches the delivery limit and
    is archived there (or goes where the plugins decide, given a ``context``).
    """
    taken = [d for d in state.in_flight if d.consumer == consumer]
    if not taken:
        return []
    if not count_as_failed:
        return [RecordsReleased(state.subscription, state.partition_id, consumer, in_flight_for(state, consumer), 0,
                                delivery_uncounted=True)]
    return _returned(state, taken, ReleaseReason.CONSUMER_LEFT, now_ms, 0, delivery_count_limit, context)


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


def delivery_counter(state: CursorState) -> Callable[[int], int]:
    """`delivery_count` for many offsets of one state: both tables are sorted and disjoint, so each question is a
    bisection (asked of each of 4,000 rejected offsets, the scan of the tables took 160-175 ms)."""
    tables = [([span.first for span in spans], spans) for spans in (state.in_flight, state.redeliveries)]

    def count(offset: int) -> int:
        for firsts, spans in tables:
            at = bisect_right(firsts, offset) - 1
            if at >= 0 and spans[at].last >= offset:
                return spans[at].delivery_count
        return 0

    return count


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
