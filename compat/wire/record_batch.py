"""Kafka RecordBatch v2 (magic 2): the 61-byte header on the hot path, records only on the slow path.

Produce and Fetch never look past the header: a batch is split out of the request, its CRC checked,
its base offset patched and the bytes stored as they came (DESIGN.md §2). `decode_records` and
`build_batch` are for the features that need keys, timestamps or the broker's own writes (retry and
dead-letter moves, transaction markers), and for Spark.

Layout (big-endian): baseOffset i64, batchLength i32, partitionLeaderEpoch i32, magic i8, crc u32,
attributes i16, lastOffsetDelta i32, baseTimestamp i64, maxTimestamp i64, producerId i64,
producerEpoch i16, baseSequence i32, recordCount i32, then the records. The CRC-32C covers the bytes
from attributes to the end, so the base offset and leader epoch can be patched without recomputing it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from enum import IntEnum
from typing import Final, NamedTuple

from crc32c import crc32c
from logwright.compat.wire.compression import Compression, CompressionError, compress, compress_within, decompress
from logwright.compat.wire.records import CorruptRecords, Record, encode_records, parse_records

__all__ = [
    "HEADER_SIZE", "BatchHeader", "Compression", "CorruptBatch", "Record", "RecordBatchError", "TimestampType",
    "UnsupportedMessageFormat", "build_batch", "decode_records", "iter_batches", "parse_header", "verify_crc",
    "numbered", "Rebuilt", "recompressed", "with_base_offset", "with_log_append_time",
]

HEADER_SIZE: Final = 61
_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qiibI")
_TAIL = struct.Struct(">hiqqqhii")
_LENGTH_END: Final = 12
_MAGIC_AT: Final = 16
_CRC_AT: Final = 17
_ATTRIBUTES_AT: Final = 21
_MIN_BATCH_LENGTH: Final = HEADER_SIZE - _LENGTH_END
_CODEC_MASK: Final = 0x07
_CODECS: Final = tuple(sorted(Compression, key=int))
"""The codecs Kafka defines, by their number (0-4); 5-7 are none (`Compression` refuses them)."""
_TIMESTAMP_TYPE_FLAG: Final = 0x08
_TRANSACTIONAL_FLAG: Final = 0x10
_CONTROL_FLAG: Final = 0x20


class RecordBatchError(ValueError):
    """The records field of a request cannot be accepted; the message says which batch and why."""


class CorruptBatch(RecordBatchError):
    """Lengths, magic, codec or record encoding do not add up (Kafka's ``CORRUPT_MESSAGE``)."""


class UnsupportedMessageFormat(RecordBatchError):
    """A message set of magic 0 or 1: older than RecordBatch v2, which is all logwright stores."""


class TimestampType(IntEnum):
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class BatchHeader(NamedTuple):
    """The fixed fields in front of every batch's records.

    A named tuple, not a frozen dataclass: every produced batch and every batch a retention or compaction scan
    reads parses one, and a 13-field frozen dataclass took 1.3 us to build against 0.2 us (3% of the broker's
    time on a produce request of 1,000 one-record partitions).
    """

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def compression(self) -> Compression:
        codec = self.attributes & _CODEC_MASK
        # looked up, not called through the enum: 0.17 us against 0.39, once or twice for every batch produced
        return _CODECS[codec] if codec < len(_CODECS) else Compression(codec)

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.attributes & _TIMESTAMP_TYPE_FLAG else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        """A transaction marker written by the broker, not by a producer."""
        return bool(self.attributes & _CONTROL_FLAG)

    @property
    def size(self) -> int:
        """The whole batch in bytes, header included."""
        return self.batch_length + _LENGTH_END

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1


def parse_header(batch: bytes | bytearray | memoryview) -> BatchHeader:
    """The header of the batch at the start of ``batch`` (the records need not follow)."""
    if len(batch) < HEADER_SIZE:
        if len(batch) > _MAGIC_AT:
            _check_magic(batch[_MAGIC_AT])
        raise CorruptBatch(f"a record batch needs {HEADER_SIZE} header bytes, got {len(batch)}")
    header = BatchHeader(*_HEADER.unpack_from(batch, 0))
    _check_magic(header.magic)
    if header.batch_length < _MIN_BATCH_LENGTH:
        raise CorruptBatch(f"batch length {header.batch_length} is shorter than the batch header")
    if header.attributes & _CODEC_MASK > Compression.ZSTD:
        raise CorruptBatch(f"compression codec {header.attributes & _CODEC_MASK} is not one Kafka defines (0-4)")
    return header


def _check_magic(magic: int) -> None:
    if magic in (0, 1):
        raise UnsupportedMessageFormat(
            f"message format v{magic} is not supported: only RecordBatch v2 (Kafka 0.11+ clients) is")
    if magic != 2:
        raise CorruptBatch(f"magic byte {magic} is not a Kafka message format")


def iter_batches(records: bytes | bytearray | memoryview, allow_partial_tail: bool = False) -> Iterator[memoryview]:
    """The batches one after the other in a Produce (or Fetch) records field, as views, not copies.

    Raises `UnsupportedMessageFormat` for magic 0/1 and `CorruptBatch` for bad lengths. Fetch
    responses may end in a cut-off batch: pass ``allow_partial_tail`` to stop there silently.
    """
    view = memoryview(records)
    position = 0
    total = len(view)
    while position < total:
        remaining = total - position
        if remaining > _MAGIC_AT:
            _check_magic(view[position + _MAGIC_AT])
        if remaining < HEADER_SIZE:
            if allow_partial_tail:
                return
            raise CorruptBatch(f"{remaining} bytes after the last batch are too few for a batch header")
        (batch_length,) = struct.unpack_from(">i", view, position + 8)
        if batch_length < _MIN_BATCH_LENGTH:
            raise CorruptBatch(f"batch length {batch_length} at byte {position} is shorter than the batch header")
        end = position + _LENGTH_END + batch_length
        if end > total:
            if allow_partial_tail:
                return
            raise CorruptBatch(
                f"the batch at byte {position} announces {end - position} bytes, only {remaining} follow")
        yield view[position:end]
        position = end


MIN_RECORD_SIZE: Final = 14
"""The smallest size field Kafka's batch reader takes (``LegacyRecord.RECORD_OVERHEAD_V0``); below it the bytes are
corrupt whatever their magic."""
_UP_TO_MAGIC: Final = _MAGIC_AT + 1


def produced_batches(records: bytes | bytearray | memoryview, limit: int) -> list[memoryview]:
    """The complete batches at the start of a Produce partition's records, at most ``limit``, read as Kafka's
    ``ByteBufferLogInputStream`` reads them there: a size field under `MIN_RECORD_SIZE` or a magic byte Kafka does
    not know (above 2) is `CorruptBatch`; an incomplete batch ends the reading without an error, so the complete
    ones before it are taken and the rest is dropped, as Kafka trims a request's bytes past its last whole batch.
    An old magic (0, 1) is read as a batch: its caller refuses it."""
    view = memoryview(records)
    total, position = len(view), 0
    found: list[memoryview] = []
    while total - position >= _LENGTH_END and len(found) < limit:
        (size,) = struct.unpack_from(">i", view, position + 8)
        if size < MIN_RECORD_SIZE:
            raise CorruptBatch(f"Record size {size} is less than the minimum record overhead ({MIN_RECORD_SIZE})")
        if total - position < _UP_TO_MAGIC:
            break
        if view[position + _MAGIC_AT] > 2:  # Java's signed byte: 128-255 are negative, as invalid
            raise CorruptBatch(f"Invalid magic found in record: {view[position + _MAGIC_AT]}")
        end = position + _LENGTH_END + size
        if end > total:
            break
        found.append(view[position:end])
        position = end
    return found


def batch_magic(batch: bytes | bytearray | memoryview) -> int:
    """The magic byte of a batch `produced_batches` returned (it holds at least that many bytes)."""
    return int(batch[_MAGIC_AT])


def verify_crc(batch: bytes | bytearray | memoryview) -> bool:
    """Whether the stored CRC-32C matches the bytes from attributes to the end of the batch."""
    if len(batch) < HEADER_SIZE:
        return False
    (stored,) = struct.unpack_from(">I", batch, _CRC_AT)
    return bool(crc32c(memoryview(batch)[_ATTRIBUTES_AT:]) == stored)


def with_base_offset(
    batch: bytes | bytearray | memoryview, base_offset: int, partition_leader_epoch: int | None = None
) -> bytes:
    """A copy of ``batch`` numbered from ``base_offset`` (and stamped with the leader epoch, if given).

    Neither field is covered by the CRC, so the batch stays valid.
    """
    view = memoryview(batch)
    if partition_leader_epoch is None:
        return b"".join((struct.pack(">q", base_offset), view[8:]))
    return b"".join((struct.pack(">q", base_offset), view[8:12], struct.pack(">i", partition_leader_epoch), view[16:]))


IN_PLACE_SHARE: Final = 2
"""`numbered` patches a batch in its request's frame only when the batch is at least 1/IN_PLACE_SHARE of it."""
_BASE_OFFSET = struct.Struct(">q")
_LEADER_EPOCH = struct.Struct(">i")
_LEADER_EPOCH_AT: Final = 12


def numbered(batch: bytes | bytearray | memoryview, base_offset: int, partition_leader_epoch: int
             ) -> bytes | memoryview:
    """``batch`` numbered from ``base_offset`` and stamped with the leader epoch, patched where it lies when it is a
    view into a bytearray it fills at least half of, else a copy (`with_base_offset`).

    Only for a client's Produce, whose frame, when large, is a bytearray the server read it into and hands to no
    one else (`framing.FrameDecoder`); Kafka's broker assigns offsets in the request's buffer too. The copy was
    46 us of the ~490 a 1 MB Produce costs in process (session 76). The stored batch then holds the whole frame
    while the tail cache keeps it, which counts only the batch's bytes: the half bounds what is held beyond the
    count to as much again.
    """
    if (isinstance(batch, memoryview) and isinstance(batch.obj, bytearray) and not batch.readonly
            and batch.c_contiguous and batch.itemsize == 1 and IN_PLACE_SHARE * len(batch) >= len(batch.obj)):
        _BASE_OFFSET.pack_into(batch, 0, base_offset)
        _LEADER_EPOCH.pack_into(batch, _LEADER_EPOCH_AT, partition_leader_epoch)
        return batch
    return with_base_offset(batch, base_offset, partition_leader_epoch)


class Rebuilt(NamedTuple):
    """A batch `recompressed`, and how many bytes its records inflated to on the way."""

    batch: memoryview | None
    """``None`` when over the bound it was given."""
    records_bytes: int


def recompressed(batch: bytes | bytearray | memoryview, header: BatchHeader, codec: Compression,
                 level: int | None = None, max_size: int = 2**31 - 1,
                 records: bytes | bytearray | memoryview | None = None) -> Rebuilt:
    """``batch`` with its records compressed with ``codec`` (at ``level``) instead of the producer's codec: what
    Kafka's LogValidator does for a topic whose ``compression.type`` names a codec. The records' bytes are the same
    whatever the codec, so they are inflated and compressed again, not parsed; every other header field is kept and
    the CRC redone. No batch when the rebuilt one would be over ``max_size`` bytes (found as soon as the output
    passes it: `compress_within`). The caller checked the records first (Produce's record check inflated them within
    `MAX_DECOMPRESSED_BYTES`, which bounds this inflation too; ``records``: the records it inflated, so they are
    not inflated twice). A view of a bytearray of its own, so `numbered` patches its offset in place."""
    view = memoryview(batch)
    if records is None:
        records = decompress(header.compression, view[HEADER_SIZE : header.size])
    payload = compress_within(codec, records, max_size - HEADER_SIZE, level)
    if payload is None:
        return Rebuilt(None, len(records))
    fields = list(_TAIL.unpack_from(view, _ATTRIBUTES_AT))
    fields[0] = (fields[0] & ~_CODEC_MASK) | int(codec)
    tail = _TAIL.pack(*fields)
    crc = crc32c(payload, crc32c(tail))
    rebuilt = bytearray(_PREFIX.pack(header.base_offset, _MIN_BATCH_LENGTH + len(payload),
                                     header.partition_leader_epoch, header.magic, crc))
    rebuilt += tail
    rebuilt += payload
    return Rebuilt(memoryview(rebuilt), len(records))


def with_log_append_time(batch: bytes | bytearray | memoryview, append_time: int) -> bytes:
    """A copy of ``batch`` marked LogAppendTime with ``append_time`` as its max timestamp, CRC redone.

    This is what a Kafka broker does for topics with ``message.timestamp.type=LogAppendTime``:
    consumers then read ``append_time`` as every record's timestamp.
    """
    view = memoryview(batch)
    fields = list(_TAIL.unpack_from(view, _ATTRIBUTES_AT))
    fields[0] |= _TIMESTAMP_TYPE_FLAG
    fields[3] = append_time
    tail = _TAIL.pack(*fields)
    crc = crc32c(view[HEADER_SIZE:], crc32c(tail))
    return b"".join((view[:_CRC_AT], struct.pack(">I", crc), tail, view[HEADER_SIZE:]))


def decode_records(batch: bytes | bytearray | memoryview) -> list[Record]:
    """Every record of one batch, decompressed (slow path: features that need keys, and Spark)."""
    header = parse_header(batch)
    if len(batch) < header.size:
        raise CorruptBatch(f"the batch announces {header.size} bytes, only {len(batch)} are here")
    try:
        data = decompress(header.compression, memoryview(batch)[HEADER_SIZE : header.size])
        append_time = header.max_timestamp if header.attributes & _TIMESTAMP_TYPE_FLAG else None
        return parse_records(data, header.base_offset, header.base_timestamp, append_time, header.record_count)
    except (CompressionError, CorruptRecords) as error:
        raise CorruptBatch(f"batch at offset {header.base_offset}: {error}") from error


def build_batch(
    records: Sequence[Record],
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    log_append_time: int | None = None,
) -> bytes:
    """A RecordBatch v2 holding ``records`` at ``base_offset``, ``base_offset + 1``, ...

    The records' own offsets are ignored; their timestamps are kept (the first is the batch's base
    timestamp). Unlike client builders, the codec is used even when it does not shrink the data.
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    base_timestamp = records[0].timestamp
    payload = compress(compression, encode_records(records, base_timestamp))
    attributes = int(compression)
    attributes |= _TRANSACTIONAL_FLAG if is_transactional else 0
    attributes |= _CONTROL_FLAG if is_control else 0
    if log_append_time is not None:
        attributes |= _TIMESTAMP_TYPE_FLAG
        max_timestamp = log_append_time
    else:
        max_timestamp = max(record.timestamp for record in records)
    tail = _TAIL.pack(attributes, len(records) - 1, base_timestamp, max_timestamp, producer_id, producer_epoch,
                      base_sequence, len(records))
    crc = crc32c(payload, crc32c(tail))
    prefix = _PREFIX.pack(base_offset, _MIN_BATCH_LENGTH + len(payload), partition_leader_epoch, 2, crc)
    return b"".join((prefix, tail, payload))
