"""Events and records as Spark rows: the schemas and the conversions, with no Spark import.

An event becomes the columns every analysis filters on (sequence, time, type, topic, partition,
group, subscription, offsets) plus all of its fields in a string map, so one schema covers every
event type, including types that plugins add later. Map values are the field as a string, or JSON
for numbers, tuples and bytes (hex), as `logwright events --json` prints them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from logwright.compat.wire.record_batch import decode_records, parse_header
from logwright.eventstore.codec import event_to_json
from logwright.eventstore.interface import LoggedEvent

EVENT_SCHEMA = (
    "sequence long, time timestamp, time_ms long, type string, topic string, partition_id long, "
    "partition int, group string, subscription string, first_offset long, last_offset long, "
    "fields map<string,string>"
)
RECORD_SCHEMA = (
    "topic string, partition int, partition_id long, offset long, timestamp timestamp, timestamp_ms long, "
    "key binary, value binary, headers array<struct<key:string,value:binary>>"
)


_JSON = json.JSONEncoder(separators=(",", ":")).encode  # one encoder: json.dumps builds one per call


def _text(value: Any) -> str | None:
    """A field as the map holds it: strings as they are, integers as digits, everything else as JSON."""
    kind = type(value)
    if kind is str or value is None:
        return value  # type: ignore[no-any-return]
    if kind is int:  # not bool, which JSON writes as true/false
        return str(value)
    return _JSON(value)


def _time(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _offsets(fields: dict[str, Any]) -> tuple[int | None, int | None]:
    """The offsets an event is about: a batch, a commit, a new log start, cursor ranges, dead-lettered spans or
    delayed records."""
    if "base_offset" in fields and "record_count" in fields:
        return fields["base_offset"], fields["base_offset"] + fields["record_count"] - 1
    if isinstance(fields.get("from_offset"), int) and isinstance(fields.get("to_offset"), int):
        return fields["from_offset"], fields["to_offset"] - 1  # an eviction's skipped range, end exclusive
    for name in ("offset", "log_start_offset", "start_offset", "evicted_to"):  # evicted_to: an eviction point
        if isinstance(fields.get(name), int):
            return fields[name], fields[name]
    ranges = fields.get("ranges")
    if isinstance(ranges, list) and ranges:
        return min(first for first, _ in ranges), max(last for _, last in ranges)
    spans = fields.get("deliveries")  # dead-lettered or deferred: (first, last, delivery count)
    if isinstance(spans, list) and spans:
        return min(span[0] for span in spans), max(span[1] for span in spans)
    entries = fields.get("entries")  # delayed records: (offset, deliver at)
    if isinstance(entries, list) and entries:
        return min(entry[0] for entry in entries), max(entry[0] for entry in entries)
    return None, None


def event_row(logged: LoggedEvent) -> tuple[Any, ...]:
    fields = event_to_json(logged.event)
    first, last = _offsets(fields)
    partition = fields.get("partition")
    return (
        logged.sequence,
        _time(logged.time_ms),
        logged.time_ms,
        type(logged.event).__name__,
        fields.get("topic"),
        fields.get("partition_id"),
        partition if isinstance(partition, int) else None,
        fields.get("group"),
        fields.get("subscription"),
        first,
        last,
        {name: _text(value) for name, value in fields.items()},
    )


def event_rows(events: Iterable[LoggedEvent]) -> Iterator[tuple[Any, ...]]:
    return (event_row(logged) for logged in events)


def record_rows(
    topic: str, partition: int, partition_id: int, batches: Iterable[bytes], start: int, end: int
) -> Iterator[tuple[Any, ...]]:
    """The records with offsets in ``[start, end)`` of stored batches; transaction markers are skipped."""
    for batch in batches:
        if parse_header(batch).is_control:
            continue
        for record in decode_records(batch):
            if start <= record.offset < end:
                yield (topic, partition, partition_id, record.offset, _time(record.timestamp), record.timestamp,
                       record.key, record.value, [(name, value) for name, value in record.headers])
