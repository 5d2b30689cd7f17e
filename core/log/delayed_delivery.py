"""Delayed delivery (Pulsar's ``deliverAfter``/``deliverAt``): which records share consumers may not take yet.

A producer asks for a delay with a record header, ``logwright.deliver.at.ms`` (absolute broker-clock ms)
or ``logwright.deliver.after.ms`` (from the append time), in decimal ASCII. The record is stored once, like
any other; the broker keeps only an index entry ``(offset, deliver_at_ms)`` per delayed record, folded
here per partition from `DelayedRecordsIndexed`. Share groups and shared subscriptions skip an offset
while its time is in the future; classic groups and plain Fetch never look at the index.

A header value that is not a plain non-negative decimal number, or a time already passed, means no
delay: the record is delivered at once, as Pulsar does with a past ``deliverAt`` (refusing the whole
produce for one bad header would lose the batch's other records).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import singledispatch

from logwright.core.events import Event, LogTruncated, TopicDeleted
from logwright.core.events.log import DelayedRecordsIndexed
from logwright.core.log.partition_log import partition_key
from logwright.core.projection import Projection
from logwright.core.rangeset import RangeSet

DELIVER_AT_HEADER = "logwright.deliver.at.ms"
DELIVER_AFTER_HEADER = "logwright.deliver.after.ms"
HEADER_PREFIX = b"logwright.deliver."
"""What every delivery header key starts with: a batch whose bytes lack it is never decoded."""

_MAX_MS = 2**63 - 1


@dataclass(frozen=True, slots=True)
class DelayedIndex:
    """A partition's delayed records not yet known to be due: ``(offset, deliver_at_ms)`` in offset order."""

    partition_id: int
    entries: tuple[tuple[int, int], ...] = ()


def _millis(value: bytes | None) -> int | None:
    """A plain non-negative decimal ASCII number, else ``None`` (no sign, no spaces, at most 63 bits)."""
    if not value or len(value) > 19 or not value.isdigit():
        return None
    number = int(value)
    return number if number <= _MAX_MS else None


def deliver_at(headers: Iterable[tuple[str, bytes | None]], appended_at_ms: int) -> int | None:
    """When a record with ``headers`` appended at ``appended_at_ms`` may go to share consumers; ``None``: at once.

    ``deliver.at`` wins over ``deliver.after`` when a record carries both (the absolute time is the
    more explicit wish); an invalid value counts as absent.
    """
    at: int | None = None
    after: int | None = None
    for key, value in headers:
        if key == DELIVER_AT_HEADER:
            at = _millis(value)
        elif key == DELIVER_AFTER_HEADER:
            after = _millis(value)
    if at is None and after is not None:
        at = min(appended_at_ms + after, _MAX_MS)
    return at if at is not None and at > appended_at_ms else None


def pending(index: DelayedIndex | None, now_ms: int, first: int = 0) -> RangeSet:
    """Offsets at or above ``first`` whose time has not come at ``now_ms``."""
    if index is None:
        return RangeSet()
    return RangeSet.from_ranges((offset, offset) for offset, at in index.entries if at > now_ms and offset >= first)


def next_due(index: DelayedIndex | None, now_ms: int) -> int | None:
    """The earliest time after ``now_ms`` a delayed record of the partition comes due."""
    if index is None:
        return None
    return min((at for _, at in index.entries if at > now_ms), default=None)


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, DelayedRecordsIndexed | LogTruncated):
        return (partition_key(event.partition_id),)
    if isinstance(event, TopicDeleted):
        return tuple(partition_key(pid) for pid in event.partition_ids)
    return ()


@singledispatch
def _evolve(event: Event, state: DelayedIndex | None) -> DelayedIndex | None:
    return state


@_evolve.register
def _(event: DelayedRecordsIndexed, state: DelayedIndex | None) -> DelayedIndex | None:
    # Entries due by this append are dropped: the index holds only what may still be waiting.
    kept = [(offset, at) for offset, at in (state.entries if state else ()) if at > event.appended_at_ms]
    kept.extend(event.entries)
    return DelayedIndex(event.partition_id, tuple(sorted(kept))) if kept else None


@_evolve.register
def _(event: LogTruncated, state: DelayedIndex | None) -> DelayedIndex | None:
    if state is None:
        return None
    kept = tuple(entry for entry in state.entries if entry[0] >= event.log_start_offset)
    return DelayedIndex(state.partition_id, kept) if kept else None


@_evolve.register
def _(event: TopicDeleted, state: DelayedIndex | None) -> DelayedIndex | None:
    return None


DELAYED_RECORDS: Projection[DelayedIndex] = Projection(
    name="delayed_records", entity_keys=_keys, evolve=lambda state, event, key: _evolve(event, state),
    handles=frozenset({DelayedRecordsIndexed, LogTruncated, TopicDeleted}),
)


def delayed_index(state: object) -> DelayedIndex | None:
    """A stored state as a `DelayedIndex` (``None`` for anything else: the partition has no delayed records)."""
    return state if isinstance(state, DelayedIndex) else None
