"""The cursor of one subscription on one partition, folded from its events.

State (Pulsar's triple, plus what Pulsar keeps only in memory):

- ``mark_delete_position``: every offset at or below it is settled (acked or archived);
- ``settled``: a `RangeSet` of offsets above it settled individually (ack holes, unbounded, durable);
- ``in_flight``: offset ranges acquired by a consumer, with lock deadline and delivery count;
- ``redeliveries``: offsets delivered before but not settled and not in flight (released or expired),
  with their delivery count, when they may go out again, and who had them last.

What counts as a delivery attempt: an *acquisition*. The count goes up when a record is handed out,
as in KIP-932, so a consumer that crashes while holding a record still uses up an attempt (Pulsar
counts only explicit redelivery requests and forgets the count on restart: seed weakness W1). A
release that is not the record's fault (a consumer leaving cleanly) can take the attempt back.

Everything is kept as ranges, so folding an event costs O(ranges it touches), never O(records).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import singledispatch
from typing import TypeVar

from logwright.core.events import Event
from logwright.core.events.cursors import (
    CURSOR_EVENT_TYPES,
    CursorEvent,
    DeadLetterDeferred,
    LockExpired,
    LockRenewed,
    OffsetRanges,
    RecordsAcked,
    RecordsAcquired,
    RecordsRejected,
    RecordsReleased,
    SubscriptionCreated,
    SubscriptionDeleted,
)
from logwright.core.projection import Projection
from logwright.core.rangeset import RangeSet


@dataclass(frozen=True, slots=True)
class Delivery:
    """Offsets ``first..last`` locked by ``consumer`` until ``lock_deadline_ms``, delivered ``delivery_count`` times."""

    first: int
    last: int
    consumer: str
    lock_deadline_ms: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class Redelivery:
    """Offsets delivered ``delivery_count`` times, unsettled, free again from ``available_at_ms``."""

    first: int
    last: int
    delivery_count: int
    available_at_ms: int
    previous_consumer: str


@dataclass(frozen=True, slots=True)
class CursorState:
    subscription: str
    topic: str
    partition_id: int
    mark_delete_position: int
    settled: RangeSet = RangeSet()
    in_flight: tuple[Delivery, ...] = ()
    redeliveries: tuple[Redelivery, ...] = ()


Span = TypeVar("Span", Delivery, Redelivery)


def cursor_key(subscription: str, partition_id: int) -> str:
    """Entity key: partition first, so one partition's cursors sort together."""
    return f"{partition_id}/{subscription}"


def carve_all(spans: tuple[Span, ...], ranges: OffsetRanges) -> tuple[list[Span], tuple[Span, ...]]:
    """Split ``spans`` (sorted, disjoint) into the pieces inside any of ``ranges`` and the pieces outside.

    One sweep over both sorted lists: O(spans + ranges), so an ack of 10,000 holes stays linear.
    """
    wanted = sorted(ranges)
    inside: list[Span] = []
    outside: list[Span] = []
    index = 0
    for span in spans:
        while index < len(wanted) and wanted[index][1] < span.first:
            index += 1
        position = span.first
        probe = index
        while probe < len(wanted) and wanted[probe][0] <= span.last:
            first, last = max(wanted[probe][0], position), min(wanted[probe][1], span.last)
            if first <= last:
                if first > position:
                    outside.append(replace(span, first=position, last=first - 1))
                inside.append(replace(span, first=first, last=last))
                position = last + 1
            probe += 1
        if position <= span.last:
            outside.append(replace(span, first=position) if position != span.first else span)
    return inside, tuple(outside)


def _sorted(spans: list[Span]) -> tuple[Span, ...]:
    """Sort, and merge neighbours that differ only in their offsets, so the tables stay small."""
    merged: list[Span] = []
    for span in sorted(spans, key=lambda span: span.first):
        if merged and merged[-1].last + 1 == span.first and replace(span, first=0, last=0) == replace(
            merged[-1], first=0, last=0
        ):
            merged[-1] = replace(merged[-1], last=span.last)
        else:
            merged.append(span)
    return tuple(merged)


def _settle(state: CursorState, ranges: OffsetRanges) -> CursorState:
    """Mark ``ranges`` settled, dropping them from the in-flight and redelivery tables."""
    _, in_flight = carve_all(state.in_flight, ranges)
    _, redeliveries = carve_all(state.redeliveries, ranges)
    floor = state.mark_delete_position + 1
    settled = state.settled.with_ranges((max(first, floor), last) for first, last in ranges if last >= floor)
    mark_delete = state.mark_delete_position
    if settled.ranges and settled.ranges[0][0] == mark_delete + 1:
        mark_delete = settled.ranges[0][1]
        settled = settled.at_or_above(mark_delete + 1)
    return replace(state, mark_delete_position=mark_delete, settled=settled, in_flight=in_flight,
                   redeliveries=redeliveries)


def _make_available(state: CursorState, ranges: OffsetRanges, available_at_ms: int, uncount: bool) -> CursorState:
    """Move in-flight ``ranges`` to the redelivery table."""
    released, in_flight = carve_all(state.in_flight, ranges)
    redeliveries = list(state.redeliveries)
    for delivery in released:
        count = delivery.delivery_count - 1 if uncount else delivery.delivery_count
        redeliveries.append(Redelivery(delivery.first, delivery.last, count, available_at_ms, delivery.consumer))
    kept = [span for span in redeliveries if span.delivery_count > 0]
    return replace(state, in_flight=in_flight, redeliveries=_sorted(kept))


@singledispatch
def _evolve(event: Event, state: CursorState | None) -> CursorState | None:
    return state


@_evolve.register
def _(event: SubscriptionCreated, state: CursorState | None) -> CursorState | None:
    return CursorState(event.subscription, event.topic, event.partition_id, event.start_offset - 1)


@_evolve.register
def _(event: SubscriptionDeleted, state: CursorState | None) -> CursorState | None:
    return None


@_evolve.register
def _(event: RecordsAcquired, state: CursorState | None) -> CursorState | None:
    if state is None:
        return None
    previous, redeliveries = carve_all(state.redeliveries, event.ranges)
    deliveries: list[Delivery] = list(state.in_flight)
    for first, last in event.ranges:
        cursor = first
        for span in previous:
            if span.last < first or span.first > last:
                continue
            if span.first > cursor:
                deliveries.append(Delivery(cursor, span.first - 1, event.consumer, event.lock_deadline_ms, 1))
            deliveries.append(Delivery(span.first, span.last, event.consumer, event.lock_deadline_ms,
                                       span.delivery_count + 1))
            cursor = span.last + 1
        if cursor <= last:
            deliveries.append(Delivery(cursor, last, event.consumer, event.lock_deadline_ms, 1))
    return replace(state, in_flight=_sorted(deliveries), redeliveries=redeliveries)


@_evolve.register
def _(event: RecordsAcked, state: CursorState | None) -> CursorState | None:
    return None if state is None else _settle(state, event.ranges)


@_evolve.register
def _(event: RecordsRejected, state: CursorState | None) -> CursorState | None:
    return None if state is None else _settle(state, event.ranges)


@_evolve.register
def _(event: RecordsReleased, state: CursorState | None) -> CursorState | None:
    if state is None:
        return None
    return _make_available(state, event.ranges, event.available_at_ms, event.delivery_uncounted)


@_evolve.register
def _(event: LockExpired, state: CursorState | None) -> CursorState | None:
    return None if state is None else _make_available(state, event.ranges, event.available_at_ms, False)


@_evolve.register
def _(event: DeadLetterDeferred, state: CursorState | None) -> CursorState | None:
    """Kept instead of archived: in-flight or waiting, the records are free again at ``available_at_ms``."""
    if state is None:
        return None
    ranges = tuple((first, last) for first, last, _ in event.deliveries)
    state = _make_available(state, ranges, event.available_at_ms, False)
    waiting, others = carve_all(state.redeliveries, ranges)
    deferred = [replace(span, available_at_ms=event.available_at_ms) for span in waiting]
    return replace(state, redeliveries=_sorted([*others, *deferred]))


@_evolve.register
def _(event: LockRenewed, state: CursorState | None) -> CursorState | None:
    if state is None:
        return None
    renewed, in_flight = carve_all(state.in_flight, event.ranges)
    updated = [replace(delivery, lock_deadline_ms=event.lock_deadline_ms) for delivery in renewed]
    return replace(state, in_flight=_sorted([*in_flight, *updated]))


def evolve(state: CursorState | None, event: Event, key: str) -> CursorState | None:
    return _evolve(event, state)


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, CursorEvent):
        return (cursor_key(event.subscription, event.partition_id),)
    return ()


CURSORS: Projection[CursorState] = Projection("cursors", _keys, evolve, frozenset(CURSOR_EVENT_TYPES))
