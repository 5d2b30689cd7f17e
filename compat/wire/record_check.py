"""Every record of a produced batch read once before it is acknowledged, as Kafka's LogValidator does.

A batch whose header and CRC are right can still lie inside: attributes that say gzip over plain records, a
record length past its bytes, more or fewer records than the header counts. Stored as it came, such a batch is
acknowledged and then stops every consumer of the partition at its offset (a hostile-input campaign found both in
session 32). Kafka walks the records of every batch it appends, inflating compressed ones; so does this module,
with Kafka 4.4's answers (tests/integration/test_produce_validation.py, differential): a record that does not
read, a count that is off, or a record of a compressed batch whose body is longer than the topic's
``max.decompressed.message.bytes``, is INVALID_RECORD; a timestamp outside ``message.timestamp.before.max.ms`` /
``after.max.ms`` is INVALID_TIMESTAMP. Two answers differ on purpose, where Kafka's is UNKNOWN_SERVER_ERROR, which
tells a client nothing: compressed records that do not inflate are CORRUPT_MESSAGE, inner offsets of a compressed
batch that do not run 0, 1, 2... INVALID_RECORD.

Each record is walked, not built (`record_walk`: in C where a compiler built it, 9-11 ns a record against the
95-135 ns of aiokafka's reader that did this before), over exactly the batch's records after our own header, size
and CRC checks; a compressed batch's records are inflated first by `compression.inflate` (bounded).
"""

from __future__ import annotations

from typing import Final, NamedTuple

from logwright.compat.wire.compression import MAX_DECOMPRESSED_BYTES, Compression, CompressionError, inflate
from logwright.compat.wire.record_batch import HEADER_SIZE, BatchHeader, decode_records
from logwright.compat.wire.record_walk import walk

inflated_bytes = 0
"""Bytes of compressed records inflated by `check_records` since the process started: Produce gives way by it
(`produce.INFLATED_PER_TURN`), since what a batch inflates to is known only once inflated."""

__all__ = ["CORRUPT", "INVALID_RECORD", "INVALID_TIMESTAMP", "MOST_RECORD_BODY", "RecordError", "RecordsRefused",
           "TimestampBounds", "check_records", "keyless_message", "record_errors"]

CORRUPT: Final = "corrupt"
INVALID_RECORD: Final = "invalid record"
INVALID_TIMESTAMP: Final = "invalid timestamp"

_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1


class RecordsRefused(ValueError):
    """A batch's records do not inflate (`CORRUPT`), do not read or break a rule Kafka's LogValidator enforces
    (`INVALID_RECORD`, `INVALID_TIMESTAMP`): ``kind`` says which."""

    def __init__(self, kind: str, message: str, position: int = -1) -> None:
        super().__init__(message)
        self.kind = kind
        self.position = position
        """The index in the batch of the record refused (a timestamp), -1 when none is."""


class TimestampBounds:
    """The CreateTime window a record's timestamp must fall in (``None``: the topic uses LogAppendTime)."""

    __slots__ = ("earliest", "latest", "before_max_ms", "after_max_ms")

    def __init__(self, now_ms: int, before_max_ms: int, after_max_ms: int) -> None:
        self.before_max_ms = before_max_ms
        self.after_max_ms = after_max_ms
        self.earliest = max(now_ms - before_max_ms, _LONG_MIN)  # a record's timestamp is a long: the window
        self.latest = min(now_ms + after_max_ms, _LONG_MAX)  # past a long's range is the same window


MOST_RECORD_BODY: Final = 2147483639
"""``max.decompressed.message.bytes``'s default and largest value: no record is refused for its size."""


def check_records(data: memoryview, header: BatchHeader, timestamps: TimestampBounds | None,
                  most_record_body: int = MOST_RECORD_BODY) -> bytes | bytearray | memoryview:
    """Read every record of the produced batch ``data`` (its header, size and CRC already checked); raise
    `RecordsRefused` if one does not read, if the count is off, or if a rule Kafka enforces per record fails,
    among them ``max.decompressed.message.bytes`` (``most_record_body``), which bounds each record's body in a
    compressed batch and is checked before timestamps, as Kafka refuses the record while reading it. Returns the
    records walked (inflated when the batch is compressed), which a rebuild in another codec need not inflate again."""
    global inflated_bytes  # noqa: PLW0603 - a process-wide count, read by Produce to give way
    records: bytes | bytearray | memoryview = data[HEADER_SIZE:header.size]
    compressed = header.compression is not Compression.NONE
    if compressed:
        try:
            records = inflate(header.compression, data[HEADER_SIZE:header.size])
        except CompressionError as error:
            inflated_bytes += MAX_DECOMPRESSED_BYTES  # refused at the bound, or corrupt: counted as the most
            raise RecordsRefused(CORRUPT, f"batch of {header.record_count} records: {error}") from error
        inflated_bytes += len(records)
    earliest, latest = (timestamps.earliest, timestamps.latest) if timestamps is not None else (0, 0)
    try:
        walked = walk(records, header.record_count, header.base_timestamp, earliest, latest, timestamps is not None,
                      compressed)
    except ValueError as error:
        raise RecordsRefused(INVALID_RECORD, f"a record of the batch does not read: {error}") from error
    if compressed and walked.longest > most_record_body:  # Kafka 4.4's DefaultRecord.readFrom, its message
        raise RecordsRefused(INVALID_RECORD, f"Invalid record size: {walked.longest} exceeds the configured maximum "
                                             f"record size of {most_record_body}.")
    if walked.offset_at >= 0:  # Kafka: "inner record offsets should be continuous" inside a compressed batch
        raise RecordsRefused(INVALID_RECORD, f"the record at position {walked.offset_at} of a compressed batch has "
                                             f"offset delta {walked.offset_delta}, not {walked.offset_at}")
    if walked.timestamp_at >= 0 and timestamps is not None:
        raise RecordsRefused(INVALID_TIMESTAMP, timestamp_message(
            walked.timestamp, header.base_offset + walked.timestamp_at, timestamps), walked.timestamp_at)
    return records


class RecordError(NamedTuple):
    """A refused record as Kafka's LogValidator names it: its position in the batch, why, and which check refused it
    (INVALID_TIMESTAMP for a timestamp out of bounds, INVALID_RECORD for a record without a key on a compacted
    topic), which decides the partition's error."""

    position: int
    message: str
    kind: str


def record_errors(batch: memoryview | bytes, timestamps: TimestampBounds | None, compacted_partition: str | None
                  ) -> list[RecordError]:
    """Every record of a refused batch that Kafka's LogValidator lists in the answer's ``record_errors``: on a
    compacted partition (``compacted_partition``, "topic-index") a record without a key, else one whose timestamp is
    outside ``timestamps``, each record's first fault as Kafka checks them. Read on the refusal path only
    (`check_records` stops at the first fault); the batch's records inflate within the bound its check already
    met."""
    errors = []
    for position, record in enumerate(decode_records(batch)):
        if compacted_partition is not None and record.key is None:
            errors.append(RecordError(position, keyless_message(compacted_partition), INVALID_RECORD))
        elif timestamps is not None and not timestamps.earliest <= record.timestamp <= timestamps.latest:
            errors.append(RecordError(position, timestamp_message(record.timestamp, record.offset, timestamps),
                                      INVALID_TIMESTAMP))
    return errors


def timestamp_message(timestamp: int, offset: int, bounds: TimestampBounds) -> str:
    """Kafka's record error for a timestamp outside ``message.timestamp.before/after.max.ms``."""
    return (f"Timestamp {timestamp} of message with offset {offset} is out of range. The timestamp should be within "
            f"[{bounds.earliest}, {bounds.latest}]")


def keyless_message(partition: str) -> str:
    """Kafka's record error for a record without a key on a compacted topic (``partition``: "topic-index")."""
    return f"Compacted topic cannot accept message without key in topic partition {partition}"
