"""``consumer_backlog_eviction``: how far a subscription's position moves, and the events that move it.

Pulsar skips a share of the slowest cursor's *entries* per pass and stops when the same cursor stays
slowest (seed 001, F18), so it may stop above its target. Here the move is computed exactly: the lowest
offset from which the backlog, with the incoming append added, is within `EVICTION_TARGET` of every
limit once it is over one, found by bisection over offsets (backlog records and bytes only fall as the
position rises). Every subscription over the quota moves, each with a `BacklogEvicted` event beside
the events that move it, all staged with the append: one WriteBatch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from logwright.core.events import Event, OffsetCommitted, RecordsAcked
from logwright.core.events.backlog import BacklogEvicted

from .backlog import Backlog, Position, after_append, backlog_of
from .batch_index import BatchIndex
from .quota import AGE_KEY, BYTES_KEY, EVICTION_TARGET, RECORDS_KEY, Quota

EVICTION_CONSUMER = "logwright.backlog.eviction"
"""The consumer named on the acknowledgements an eviction writes to a cursor."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """The append under admission: counted in the backlog it would leave."""

    records: int = 0
    bytes: int = 0
    timestamp: int = -1


@dataclass(frozen=True, slots=True)
class Eviction:
    """``position`` moves from ``from_offset`` to ``to_offset``, leaving ``before - after`` of its backlog."""

    position: Position
    from_offset: int
    to_offset: int
    before: Backlog
    after: Backlog
    reason: str


def _within_size(backlog: Backlog, quota: Quota, incoming: Incoming) -> bool:
    total = after_append(backlog, incoming.records, incoming.bytes, incoming.timestamp)
    if quota.bytes > 0 and total.bytes > int(quota.bytes * EVICTION_TARGET):
        return False
    return not (quota.records > 0 and total.records > int(quota.records * EVICTION_TARGET))


def _within_age(backlog: Backlog, quota: Quota, now_ms: int) -> bool:
    return quota.age_ms <= 0 or backlog.age_ms(now_ms) <= int(quota.age_ms * EVICTION_TARGET)


def _reasons(quota: Quota) -> str:
    limits = [f"{key}={value}" for key, value in ((BYTES_KEY, quota.bytes), (RECORDS_KEY, quota.records),
                                                  (AGE_KEY, quota.age_ms)) if value > 0]
    return f"backlog quota {', '.join(limits)} exceeded; evicted to {int(EVICTION_TARGET * 100)}%"


EVICTABLE_KINDS = ("group", "cursor", "pop")
"""Kinds of position an eviction can move (a pop group's through the ``pop`` plugin, below)."""


def plan(index: BatchIndex, position: Position, quota: Quota, now_ms: int, log_start_offset: int = 0,
         incoming: Incoming = Incoming()) -> Eviction | None:
    """The move bringing ``position``'s backlog (with ``incoming``) down to the eviction target once it is over
the quota; ``None`` while it is within the quota."""
    if position.kind not in EVICTABLE_KINDS:
        return None
    start = max(position.first_unsettled, log_start_offset, index.start_offset)
    moved = replace(position, first_unsettled=start)
    before = backlog_of(index, moved, log_start_offset)
    if quota.exceeded_by(after_append(before, incoming.records, incoming.bytes, incoming.timestamp), now_ms) is None:
        return None
    low, high = start, index.end_offset
    while low < high:
        middle = (low + high) // 2
        if _within_size(backlog_of(index, replace(moved, first_unsettled=middle), log_start_offset), quota, incoming):
            high = middle
        else:
            low = middle + 1
    if not _within_age(before, quota, now_ms):
        low = max(low, index.first_newer_than(start, now_ms - int(quota.age_ms * EVICTION_TARGET) - 1))
    after = backlog_of(index, replace(moved, first_unsettled=low), log_start_offset)
    if low <= start or after == before:
        return None
    return Eviction(position, start, low, before, after, _reasons(quota))


def events(eviction: Eviction, topic: str, partition_index: int, now_ms: int) -> list[Event]:
    """The events that move the position, then the `BacklogEvicted` that explains them. A pop group's move is
    derived from the `BacklogEvicted` by the ``pop`` plugin (``logwright_derive_events``: its in-flight entries
    below ``to_offset`` dropped, its pop position moved), in the same WriteBatch."""
    position = eviction.position
    moving: Event | None = None
    if position.kind == "group":
        moving = OffsetCommitted(position.subscription, topic, partition_index, eviction.to_offset,
                                 commit_time_ms=now_ms)
    elif position.kind == "cursor":
        moving = RecordsAcked(position.subscription, position.partition_id, EVICTION_CONSUMER,
                              ((eviction.from_offset, eviction.to_offset - 1),), True)
    evicted = BacklogEvicted(position.subscription, position.kind, topic, position.partition_id,
                             eviction.from_offset, eviction.to_offset, eviction.before.records - eviction.after.records,
                             eviction.before.bytes - eviction.after.bytes, eviction.reason)
    return [moving, evicted] if moving is not None else [evicted]
