"""Delayed delivery (Pulsar's ``deliverAfter``/``deliverAt``): which records share consumers may not take yet.

A producer asks for a delay with a record header, ``logwright.deliver.at.ms`` (absolute broker-clock ms)
or ``logwright.deliver.after.ms`` (from the append time), in decimal ASCII. The record is stored once, like
any other; the broker keeps only an index entry ``(offset, deliver_at_ms)`` per delayed record. The built-in
``delayed_delivery`` plugin writes them (`DelayedRecordsIndexed`) and registers this module's projection.

The index is one row per append (`row_key`: partition and first delayed offset), written once, so an append
costs what it adds; a row goes (`DelayedRecordsDropped`) once every entry in it is due, truncated or its
topic deleted. Stores written before rows existed keep one legacy row per partition (key: the partition id),
folded as it always was, until it is dropped in turn.

A header value that is not a plain non-negative decimal number, or a time already passed, means no
delay: the record is delivered at once, as Pulsar does with a past ``deliverAt`` (refusing the whole
produce for one bad header would lose the batch's other records).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from logwright.core.events import Event, LogTruncated, TopicDeleted
from logwright.core.events.log import DelayedRecordsDropped, DelayedRecordsIndexed
from logwright.core.log.partition_log import partition_key
from logwright.core.projection import Projection

DELIVER_AT_HEADER = "logwright.deliver.at.ms"
DELIVER_AFTER_HEADER = "logwright.deliver.after.ms"
HEADER_PREFIX = b"logwright.deliver."
"""What every delivery header key starts with: a batch whose bytes lack it is never decoded."""
COMPRESSED_KEY = "logwright.delayed.delivery.compressed.enable"
"""Topic config: open compressed batches at produce to find their delivery headers (off by default)."""
LEGACY_ROW = -1
"""The row id of a partition's one pre-row index (stores written before per-append rows)."""
MAX_ENTRIES_PER_EVENT = 50_000
"""Entries one `DelayedRecordsIndexed` carries (about 0.5 MB encoded); a batch with more delayed records
gets several events, all staged with the batch, so it is indexed whole or not at all."""

_MAX_MS = 2**63 - 1


@dataclass(frozen=True, slots=True)
class DelayedIndex:
    """One row of the index: ``(offset, deliver_at_ms)`` of one append's delayed records, in offset order."""

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


def index_events(partition_id: int, appended_at_ms: int, entries: Sequence[tuple[int, int]],
                 limit: int | None = None) -> tuple[DelayedRecordsIndexed, ...]:
    """The events indexing one append's delayed ``entries`` (offset order): one row each, at most ``limit``
    (`MAX_ENTRIES_PER_EVENT`) entries per event, all staged together, so no batch is ever indexed in part."""
    limit = MAX_ENTRIES_PER_EVENT if limit is None else limit
    if limit < 1:
        raise ValueError(f"limit must be at least 1, not {limit}")
    return tuple(DelayedRecordsIndexed(partition_id, appended_at_ms, tuple(entries[start:start + limit]), True)
                 for start in range(0, len(entries), limit))


def row_key(partition_id: int, row: int) -> str:
    """The state key of a row: ``<partition>/<first offset>``; the legacy row is keyed by the partition alone."""
    return partition_key(partition_id) if row == LEGACY_ROW else f"{partition_id}/{row}"


def parse_row_key(key: str) -> tuple[int, int]:
    """``(partition id, row)`` of a state key written by `row_key`."""
    partition, _, row = key.partition("/")
    return int(partition), int(row) if row else LEGACY_ROW


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, DelayedRecordsIndexed):
        if not event.entries:
            return ()
        return (row_key(event.partition_id, event.entries[0][0] if event.own_row else LEGACY_ROW),)
    if isinstance(event, DelayedRecordsDropped):
        return tuple(row_key(event.partition_id, row) for row in event.rows)
    if isinstance(event, LogTruncated):
        return (partition_key(event.partition_id),)
    if isinstance(event, TopicDeleted):
        return tuple(partition_key(pid) for pid in event.partition_ids)
    return ()


def _unchanged(event: Event, state: DelayedIndex | None) -> DelayedIndex | None:
    return state


def _on_delayed_records_indexed(event: DelayedRecordsIndexed, state: DelayedIndex | None) -> DelayedIndex | None:
    if event.own_row:
        return DelayedIndex(event.partition_id, event.entries)
    # The legacy row: entries due by this append are dropped, the rest merged (the first index's fold).
    kept = [(offset, at) for offset, at in (state.entries if state else ()) if at > event.appended_at_ms]
    kept.extend(event.entries)
    return DelayedIndex(event.partition_id, tuple(sorted(kept))) if kept else None


def _on_delayed_records_dropped(event: DelayedRecordsDropped, state: DelayedIndex | None) -> DelayedIndex | None:
    return None


def _on_log_truncated(event: LogTruncated, state: DelayedIndex | None) -> DelayedIndex | None:
    if state is None:
        return None
    kept = tuple(entry for entry in state.entries if entry[0] >= event.log_start_offset)
    return DelayedIndex(state.partition_id, kept) if kept else None


def _on_topic_deleted(event: TopicDeleted, state: DelayedIndex | None) -> DelayedIndex | None:
    return None


_EVOLVE: dict[type[Event], Callable[[Any, DelayedIndex | None], DelayedIndex | None]] = {
    DelayedRecordsIndexed: _on_delayed_records_indexed,
    DelayedRecordsDropped: _on_delayed_records_dropped,
    LogTruncated: _on_log_truncated,
    TopicDeleted: _on_topic_deleted,
}
"""By the event's exact type (`partition_log._EVOLVE` says why not singledispatch)."""


DELAYED_RECORDS: Projection[DelayedIndex] = Projection(
    name="delayed_records", entity_keys=_keys,
    evolve=lambda state, event, key: _EVOLVE.get(type(event), _unchanged)(event, state),
    handles=frozenset({DelayedRecordsIndexed, DelayedRecordsDropped, LogTruncated, TopicDeleted}),
    removed_by=frozenset({TopicDeleted}),
)
"""Registered by the ``delayed_delivery`` plugin. Truncation and topic deletion fold only the legacy row
here (a per-append row's key is not in those events): the plugin drops the rows they make unneeded with a
`DelayedRecordsDropped` staged beside them."""
