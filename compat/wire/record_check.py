"""Every record of a produced batch read once before it is acknowledged, as Kafka's LogValidator does.

A batch whose header and CRC are right can still lie inside: attributes that say gzip over plain records, a
record length past its bytes, more or fewer records than the header counts. Stored as it came, such a batch is
acknowledged and then stops every consumer of the partition at its offset (a hostile-input campaign found both in
session 32). Kafka walks the records of every batch it appends, inflating compressed ones; so does this module,
with Kafka 4.4's answers (tests/integration/test_produce_validation.py, differential): a record that does not
read, or a count that is off, is INVALID_RECORD; a timestamp outside ``message.timestamp.before.max.ms`` /
``after.max.ms`` is INVALID_TIMESTAMP. Two answers differ on purpose, where Kafka's is UNKNOWN_SERVER_ERROR, which
tells a client nothing: compressed records that do not inflate are CORRUPT_MESSAGE, inner offsets of a compressed
batch that do not run 0, 1, 2... INVALID_RECORD.

Why aiokafka's C ``DefaultRecordBatch``: walking records in Python cost 2-3 us each; the Cython reader takes
70-160 ns (bench/results/probes-s32.md). It is a runtime dependency already (the bundled client reads with it,
client/record_reader.py, where what it is not trusted with is written down). Here, as there, it gets exactly the
batch's bytes, a view of a ``bytes`` or ``bytearray`` (their hidden NUL ends a varint read past the end), after
our own header, size and CRC checks; a compressed batch is inflated by `compression.decompress` (bounded) and
handed over behind a copy of its header without codec bits. Its faults become `RecordsRefused`.
"""

from __future__ import annotations

from collections import deque
from operator import attrgetter
from typing import Final

from aiokafka.errors import CorruptRecordException
from logwright.compat.wire.compression import Compression, CompressionError, decompress
from logwright.compat.wire.record_batch import HEADER_SIZE, BatchHeader

try:  # the C reader itself, so AIOKAFKA_NO_EXTENSIONS does not slow the broker down
    from aiokafka.record._crecords import DefaultRecordBatch
except ImportError:  # pragma: no cover - a platform without aiokafka's wheel: its Python reader, same checks
    from aiokafka.record.default_records import _DefaultRecordBatchPy as DefaultRecordBatch

__all__ = ["CORRUPT", "INVALID_RECORD", "INVALID_TIMESTAMP", "RecordsRefused", "TimestampBounds", "check_records"]

CORRUPT: Final = "corrupt"
INVALID_RECORD: Final = "invalid record"
INVALID_TIMESTAMP: Final = "invalid timestamp"

_ATTRIBUTES_AT: Final = 21
_CODEC_BITS: Final = 0x07
_NO_TIMESTAMP: Final = -1
_TIMESTAMP = attrgetter("timestamp")
_FAULTS = (CorruptRecordException, MemoryError, OverflowError, ValueError, IndexError, TypeError)
"""What the reader raises for bytes that do not parse (ValueError covers UnicodeDecodeError)."""


class RecordsRefused(ValueError):
    """A batch's records do not inflate (`CORRUPT`), do not read or break a rule Kafka's LogValidator enforces
    (`INVALID_RECORD`, `INVALID_TIMESTAMP`): ``kind`` says which."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class TimestampBounds:
    """The CreateTime window a record's timestamp must fall in (``None``: the topic uses LogAppendTime)."""

    __slots__ = ("earliest", "latest", "before_max_ms", "after_max_ms")

    def __init__(self, now_ms: int, before_max_ms: int, after_max_ms: int) -> None:
        self.before_max_ms = before_max_ms
        self.after_max_ms = after_max_ms
        self.earliest = now_ms - before_max_ms
        self.latest = now_ms + after_max_ms


def check_records(data: memoryview, header: BatchHeader, timestamps: TimestampBounds | None) -> None:
    """Read every record of the produced batch ``data`` (its header, size and CRC already checked); raise
    `RecordsRefused` if one does not read, if the count is off, or if a rule Kafka enforces per record fails."""
    view = data if isinstance(data.obj, bytes | bytearray) else memoryview(bytes(data))
    view = view[:header.size]
    compressed = header.compression is not Compression.NONE
    if compressed:
        try:
            records = decompress(header.compression, view[HEADER_SIZE:])
        except CompressionError as error:
            raise RecordsRefused(CORRUPT, f"batch of {header.record_count} records: {error}") from error
        head = bytearray(view[:HEADER_SIZE])
        head[_ATTRIBUTES_AT + 1] &= ~_CODEC_BITS & 0xFF
        view = memoryview(bytes(head) + records)
    try:
        batch = DefaultRecordBatch(view)
        if compressed:
            read = [(record.offset, record.timestamp) for record in batch]
        elif timestamps is not None:
            stamps = list(map(_TIMESTAMP, batch))  # map: no bytecode per record
        else:
            deque(batch, maxlen=0)  # the reader refuses bytes left after the last record as it ends
            return
    except _FAULTS as error:
        raise RecordsRefused(INVALID_RECORD, f"a record of the batch does not read: {type(error).__name__}: {error}"
                             ) from error
    if compressed:  # Kafka: "inner record offsets should be continuous" inside a compressed batch
        for position, (offset, _) in enumerate(read):
            if offset != header.base_offset + position:
                raise RecordsRefused(INVALID_RECORD, f"the record at position {position} of a compressed batch has "
                                                     f"offset delta {offset - header.base_offset}, not {position}")
        stamps = [timestamp for _, timestamp in read]
    if timestamps is not None:
        _check_timestamps(stamps, header, timestamps)


def _check_timestamps(stamps: list[int], header: BatchHeader, bounds: TimestampBounds) -> None:
    """Kafka's per-record check of CreateTime timestamps (a record without one, -1, is not checked)."""
    low, high = min(stamps, default=_NO_TIMESTAMP), max(stamps, default=_NO_TIMESTAMP)
    if low == _NO_TIMESTAMP:
        low = min((stamp for stamp in stamps if stamp != _NO_TIMESTAMP), default=bounds.earliest)
    if low >= bounds.earliest and (high == _NO_TIMESTAMP or high <= bounds.latest):
        return
    wrong = low if low < bounds.earliest else high
    position = stamps.index(wrong)
    raise RecordsRefused(INVALID_TIMESTAMP, (
        f"Timestamp {wrong} of message with offset {header.base_offset + position} is out of range. The timestamp "
        f"should be within [{bounds.earliest}, {bounds.latest}]"))
