"""KIP-932 acknowledgement batches of one partition, decided against its cursor.

A batch is ``(first_offset, last_offset, types)``: one type for the whole range, or one type per
offset. Types: 0 GAP (no record at that offset: settled like ACCEPT), 1 ACCEPT, 2 RELEASE, 3 REJECT,
4 RENEW (ShareFetch/ShareAcknowledge v2). A partition's batches are decided together: if any offset is
not held by the member, nothing of that partition changes and it gets INVALID_RECORD_STATE, while the
other partitions of the request go ahead (Kafka's per-partition acknowledgement error).

A batch reaching past the last offset the partition has handed out names records never acquired: the Kafka
protocol answers INVALID_REQUEST there, as Kafka 4.4 does (`AckLimits.kafka_offsets`;
tests/integration/test_share_ack_offsets.py). Offsets below the start offset stay INVALID_RECORD_STATE on purpose,
where Kafka skips them and answers NONE: an acknowledgement of records already settled, perhaps by another
consumer after this one's lock ran out, is not allowed to succeed silently (RocketMQ's stale receipt handle).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from logwright.core.cursors import cursor_commands
from logwright.core.cursors.cursor import CursorState
from logwright.core.cursors.plugin_decisions import ReleaseContext
from logwright.core.errors import InvalidRecordState, InvalidRequest
from logwright.core.events import Event
from logwright.core.rangeset import RangeSet

GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
TYPE_NAMES = {GAP: "GAP", ACCEPT: "ACCEPT", RELEASE: "RELEASE", REJECT: "REJECT", RENEW: "RENEW"}


@dataclass(frozen=True, slots=True)
class AckBatch:
    first_offset: int
    last_offset: int
    types: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AckLimits:
    """The group's settings that acknowledgements need."""

    delivery_count_limit: int
    lock_duration_ms: int
    renew_allowed: bool
    release_context: ReleaseContext | None = None
    """Set when a plugin decides the fate of released records (`cursor_commands.release`)."""
    kafka_offsets: bool = False
    """Kafka's answer to offsets past the last one handed out (INVALID_REQUEST, the module's docstring): for the
    Kafka protocol; logwright's own keys answer INVALID_RECORD_STATE there, as before."""
    renew_enabled: bool = True
    """The group's ``share.renew.acknowledge.enable``: false refuses a RENEW with INVALID_RECORD_STATE (Kafka 4.4),
    where a request version without RENEW (``renew_allowed``) refuses it with INVALID_REQUEST."""


def by_type(batches: Sequence[AckBatch], renew_allowed: bool) -> dict[int, list[tuple[int, int]]]:
    """Offset ranges per acknowledge type; raises `InvalidRequest` for malformed or overlapping batches."""
    ranges: dict[int, list[tuple[int, int]]] = {}
    seen: list[tuple[int, int]] = []
    for batch in batches:
        first, last, types = batch.first_offset, batch.last_offset, batch.types
        if first < 0 or last < first:
            raise InvalidRequest(f"acknowledgement batch ({first}, {last}) is not a valid offset range")
        if len(types) not in (1, last - first + 1):
            raise InvalidRequest(f"acknowledgement batch ({first}, {last}) has {len(types)} types; it needs 1 or "
                                 f"{last - first + 1}")
        for kind in types:
            if kind not in TYPE_NAMES or (kind == RENEW and not renew_allowed):
                raise InvalidRequest(f"acknowledge type {kind} is not valid in this request version")
        seen.append((first, last))
        if len(types) == 1:
            ranges.setdefault(types[0], []).append((first, last))
            continue
        for index, kind in enumerate(types):
            ranges.setdefault(kind, []).append((first + index, first + index))
    ordered = sorted(seen)  # compared pairwise: a count of offsets may not fit an index (a batch [0, 2**63-1])
    if any(later_first <= last for (_, last), (later_first, _) in zip(ordered, ordered[1:], strict=False)):
        raise InvalidRequest("acknowledgement batches of one partition overlap")
    return {kind: list(RangeSet.from_ranges(found).ranges) for kind, found in ranges.items()}


def decide(state: CursorState, member_id: str, batches: Sequence[AckBatch], now_ms: int,
           limits: AckLimits) -> list[Event]:
    """The cursor events for one partition's acknowledgements, all or nothing.

    Raises `InvalidRecordState` (an offset not held by ``member_id``) or `InvalidRequest`.
    """
    events: list[Event] = []
    typed = by_type(batches, limits.renew_allowed)
    if limits.kafka_offsets:
        end = last_handed_out(state)
        past = [(batch.first_offset, batch.last_offset) for batch in batches if batch.last_offset > end]
        if past:
            raise InvalidRequest(f"acknowledgement batch {past[0]} of {state.topic} reaches past offset {end}, the "
                                 "last one handed out: those records were never acquired")
    if RENEW in typed and not limits.renew_enabled:
        raise InvalidRecordState("Renewing acquisition locks is not enabled for the group.")
    for kind, ranges in sorted(typed.items()):
        spans = tuple(ranges)
        if kind in (GAP, ACCEPT):
            events.append(cursor_commands.acknowledge(state, member_id, spans))
        elif kind == RELEASE:
            events.extend(cursor_commands.release(state, member_id, spans, now_ms, 0, limits.delivery_count_limit,
                                                  limits.release_context))
        elif kind == REJECT:
            events.append(cursor_commands.reject(state, member_id, spans))
        else:
            events.append(cursor_commands.renew(state, member_id, spans, now_ms, limits.lock_duration_ms))
    return events


def last_handed_out(state: CursorState) -> int:
    """The highest offset the cursor ever handed out (or moved its start past): every offset above it was never
    acquired. The tables are sorted and disjoint, so each one's last entry ends highest."""
    found = state.mark_delete_position
    if state.settled.ranges:
        found = max(found, state.settled.ranges[-1][1])
    if state.in_flight:
        found = max(found, state.in_flight[-1].last)
    if state.redeliveries:
        found = max(found, state.redeliveries[-1].last)
    return found
