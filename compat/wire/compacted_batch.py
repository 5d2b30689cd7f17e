"""A stored batch rebuilt with fewer records, as Kafka's cleaner rebuilds one (`MemoryRecords.filterTo`).

The rebuilt batch keeps the original's base offset and last offset delta (so the log's offsets, a producer's
last sequence and the batch's place in the ``records`` column family never change), its producer id, epoch and
base sequence, its codec, timestamp type and transactional and control flags, and its partition leader epoch;
each kept record keeps its own offset and timestamp, so consumers see gaps where records went. A delete horizon
is written as Kafka writes it: attribute bit 6 set and the horizon as the batch's base timestamp, the records'
timestamp deltas taken from it (consumers still read each record's own timestamp).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

from crc32c import crc32c
from logwright.compat.wire.compression import compress, inflate
from logwright.compat.wire.record_batch import HEADER_SIZE, BatchHeader, parse_header
from logwright.compat.wire.records import Record, encode_records
from logwright.core.log.record_keys import record_keys

DELETE_HORIZON_FLAG: Final = 0x40
_LOG_APPEND_TIME_FLAG: Final = 0x08
_TAIL = struct.Struct(">hiqqqhii")
_PREFIX = struct.Struct(">qiibI")
_LENGTH_END: Final = 12
_MIN_BATCH_LENGTH: Final = HEADER_SIZE - _LENGTH_END


def delete_horizon_ms(header: BatchHeader) -> int | None:
    """The delete horizon a cleaner stored in the batch, ``None`` if it has none."""
    return header.base_timestamp if header.attributes & DELETE_HORIZON_FLAG else None


def rebuild(original: bytes | memoryview, kept: Sequence[Record], horizon_ms: int | None) -> bytes:
    """``original`` holding only ``kept`` (its own records, in offset order), with ``horizon_ms`` if given."""
    if not kept:
        raise ValueError("a rebuilt batch keeps at least one record: delete the batch instead")
    header = parse_header(original)
    attributes = header.attributes & ~DELETE_HORIZON_FLAG
    base_timestamp = kept[0].timestamp
    if horizon_ms is not None:
        attributes |= DELETE_HORIZON_FLAG
        base_timestamp = horizon_ms
    if header.attributes & _LOG_APPEND_TIME_FLAG:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = max(record.timestamp for record in kept)
    payload = compress(header.compression, encode_records(kept, base_timestamp, header.base_offset))
    tail = _TAIL.pack(attributes, header.last_offset_delta, base_timestamp, max_timestamp, header.producer_id,
                      header.producer_epoch, header.base_sequence, len(kept))
    crc = crc32c(payload, crc32c(tail))
    prefix = _PREFIX.pack(header.base_offset, _MIN_BATCH_LENGTH + len(payload), header.partition_leader_epoch,
                          header.magic, crc)
    return b"".join((prefix, tail, payload))


def keyless_record(batch: bytes | memoryview) -> int | None:
    """The index of the batch's first record without a key (a compacted topic refuses it), ``None`` if all have
    one; raises `UnreadableRecords` when the records do not parse."""
    keys = record_keys(batch, inflate)
    return keys.index(None) if None in keys else None
