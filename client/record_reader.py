"""The bundled client's record reader: aiokafka's C `DefaultRecordBatch`, fed only what it reads safely.

Why aiokafka: parsing each record's varints and slices in Python cost a popping client 1.8-3.5 us per record
(73% of its time, bench/results/pop.md); aiokafka 0.14's Cython reader decodes offset, timestamp, key, value and
headers of a 100-byte record in 0.1-0.2 us (0.3 with two headers), from the batch bytes without copying them.
It is a maintained Kafka client the test suite already ran against, so it is a runtime dependency rather than C
of our own.

What it is not trusted with (read in its ``default_records.pyx`` and tried with truncated and bit-flipped
batches, tests/client/test_record_reader.py):

- fewer bytes than a batch header: its constructor reads the 61 header bytes unchecked. `parse_header` and the
  size check here come first, and it gets exactly the batch's bytes, a view of a ``bytes`` or ``bytearray``
  (copied into one otherwise): it checks one byte is there before each varint, the rest of a varint may be
  read past the slice, which is then the parent's memory, or the NUL these two keep after their last byte.
- decompression: its own inflates without a bound. A compressed batch is inflated by
  `compat.wire.compression.decompress` (at most 64 MiB) and handed over as a batch without codec bits.
- the CRC: it reads whatever it is given; the CRC-32C of the bytes as they came is checked here first (the
  ``crc32c`` package, hardware CRC), before anything is decompressed.
- its faults: `CorruptRecordException`, and for a length near 2**63 a `MemoryError` or `OverflowError`, a header
  name that is not UTF-8 a `UnicodeDecodeError`; all become `CorruptRecordBatch`.

The C class is imported from ``aiokafka.record._crecords`` itself, so ``AIOKAFKA_NO_EXTENSIONS`` (which swaps in
the pure Python reader behind ``aiokafka.record``) does not slow this client down; a platform without a wheel
gets aiokafka's Python reader, same interface, same checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Protocol

from crc32c import crc32c
from logwright.client.connection import ClientError
from logwright.compat.wire.batch_slices import record_offset_delta
from logwright.compat.wire.compression import CompressionError, decompress
from logwright.compat.wire.record_batch import HEADER_SIZE, BatchHeader, Compression, RecordBatchError, parse_header
from logwright.compat.wire.records import CorruptRecords
from logwright.compat.wire.varints import VarintTooLong

try:
    from aiokafka.record._crecords import DefaultRecordBatch
    NATIVE = True
except ImportError:  # pragma: no cover - aiokafka publishes wheels with the extension for our platforms
    from aiokafka.record.default_records import _DefaultRecordBatchPy as DefaultRecordBatch
    NATIVE = False
from aiokafka.errors import CorruptRecordException

_ATTRIBUTES_AT = 21
_CODEC_BITS = 0x07
_FAULTS = (CorruptRecordException, MemoryError, OverflowError, ValueError, IndexError)
"""What the reader raises for bytes that do not parse (ValueError covers UnicodeDecodeError)."""


class CorruptRecordBatch(ClientError, CorruptRecords):
    """A batch the broker sent does not read: its CRC, its lengths or its records do not add up."""


class StoredRecord(Protocol):
    """One record as the reader returns it (aiokafka's ``DefaultRecord``)."""

    @property
    def offset(self) -> int: ...

    @property
    def timestamp(self) -> int: ...

    @property
    def key(self) -> bytes | None: ...

    @property
    def value(self) -> bytes | None: ...

    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...


def readable(raw: bytes | memoryview, header: BatchHeader | None = None) -> bytes | memoryview:
    """The stored batch ``raw`` as the reader takes it: exactly the batch's bytes, its CRC checked, a compressed
    one inflated (bounded) behind a copy of its header without codec bits."""
    header = header or _parsed(raw)
    size = header.size
    if len(raw) < size:
        raise CorruptRecordBatch(f"batch {header.base_offset} announces {size} bytes, only {len(raw)} came")
    view = memoryview(raw)
    if not isinstance(view.obj, bytes | bytearray):  # their hidden NUL ends a varint read one byte past the end
        view = memoryview(bytes(view))
    view = view[:size]
    if crc32c(view[_ATTRIBUTES_AT:]) != header.crc:
        raise CorruptRecordBatch(f"batch {header.base_offset}: its CRC does not match its bytes")
    if header.compression is Compression.NONE:
        return view
    try:
        records = decompress(header.compression, view[HEADER_SIZE:])
    except CompressionError as error:
        raise CorruptRecordBatch(f"batch {header.base_offset}: {error}") from error
    head = bytearray(view[:HEADER_SIZE])
    head[_ATTRIBUTES_AT + 1] &= ~_CODEC_BITS & 0xFF
    return bytes(head) + records


def read_all(raw: bytes | memoryview) -> list[StoredRecord]:
    """Every record of one stored batch (the Fetch readers' path)."""
    cursor = RecordCursor(raw)
    records = cursor.take(cursor.total)
    cursor.check()
    return records


class RecordCursor:
    """One batch's records, decoded in C in order, a chunk at a time (`take`).

    It keeps none of them: the reader's record objects are tracked by the garbage collector, and a process
    holding hundreds of thousands of them (16 kept batches of 5,000 records) paid ~0.7 us a record in full
    collections; the caller keeps the fields it needs (plain lists of bytes and ints, which the collector skips).
    """

    __slots__ = ("header", "total", "taken", "first_delta", "_reader", "_fault", "_cause")

    def __init__(self, raw: bytes | memoryview, header: BatchHeader | None = None) -> None:
        header = header or _parsed(raw)
        if header.record_count < 0:
            raise CorruptRecordBatch(f"batch {header.base_offset} announces {header.record_count} records")
        data = readable(raw, header)
        self.header = header
        self.total = header.record_count
        """Records the header announces (the reader refuses a batch holding more or fewer)."""
        self.taken = 0
        """Records handed out so far."""
        self.first_delta = _first_delta(data) if header.record_count else 0
        """The offset delta of the first record: 0 unless the batch lost its first records (a pop's slice of a
        stored batch, a compacted batch); 0 too for bytes that do not read, which the reader then refuses."""
        self._fault = ""
        self._cause: BaseException | None = None
        try:
            batch = DefaultRecordBatch(data)
            iter(batch)  # once only: a second iter() of a batch begun is an AssertionError
            # what `islice` may take from again and again (``iter()`` of it is itself)
            self._reader: Iterator[StoredRecord] | None = iter(batch.__next__, None)
        except _FAULTS as error:
            raise CorruptRecordBatch(f"batch {header.base_offset} does not read: {error}") from error

    def take(self, count: int) -> list[StoredRecord]:
        """The next ``count`` records (fewer at the end of the batch), decoded in C. At a fault: the records
        before it, then `CorruptRecordBatch` from this call on (at once if none came before it)."""
        self.check()
        reader = self._reader
        chunk: list[StoredRecord] = []
        if reader is None:
            return chunk
        try:
            chunk.extend(islice(reader, min(count, self.total - self.taken)))  # extend keeps what came before a fault
            if self.taken + len(chunk) == self.total:
                next(reader, None)  # past the last record: the reader refuses bytes left over
                self._reader = None
        except _FAULTS as error:
            self._fault = (f"batch {self.header.base_offset}, record {self.taken + len(chunk)} does not read: "
                           f"{type(error).__name__} {error}")
            self._cause, self._reader = error, None
            if not chunk:
                self.check()
        self.taken += len(chunk)
        return chunk

    def check(self) -> None:
        """Raise the fault met so far, if any (the same on every call)."""
        if self._fault:
            raise CorruptRecordBatch(self._fault) from self._cause


def _first_delta(data: bytes | memoryview) -> int:
    """The offset delta of the batch's first record (after its length, attributes and timestamp delta)."""
    try:
        return record_offset_delta(data, HEADER_SIZE)
    except (IndexError, VarintTooLong):
        return 0


def _parsed(raw: bytes | memoryview) -> BatchHeader:
    try:
        return parse_header(raw)
    except RecordBatchError as error:
        raise CorruptRecordBatch(f"a batch does not read: {error}") from error
