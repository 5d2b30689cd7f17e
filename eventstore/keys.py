"""Key layout of the RocksDB column families: big-endian, fixed width, so bytes sort as numbers.

| family  | key                                   | value                                   |
|---------|---------------------------------------|-----------------------------------------|
| records | partition id u32, base offset u64     | RecordBatch v2 bytes, base offset patched (or a pointer) |
| events  | global sequence u64                   | encoded (time, event)                   |
| state   | projection name, NUL, entity key      | sequence u64 + encoded entity state     |
| index   | kind byte, partition id u32, ...      | small values (``T``: the time index)    |
|         | ``A``, partition u32, marker u64      | an aborted transaction: producer id, first offset, LSO |
|         | ``S``, shared file u64, partition u32 | first and last base offset it holds there (`shared_refs`) |
| meta    | ascii name                            | small values                            |

A batch of 4 KiB or more is a pointer into `batch_files` instead of its bytes: 20 bytes into its partition's own
file, 24 into a shared one.
"""

from __future__ import annotations

import struct

COLUMN_FAMILIES = ("records", "events", "state", "index", "meta")

_RECORD_KEY = struct.Struct(">IQ")
_SEQUENCE = struct.Struct(">Q")
_TIME_INDEX_KEY = struct.Struct(">cIQ")

TIME_INDEX_KIND = b"T"
ABORTED_KIND = b"A"
ABORTED_KIND_END = b"B"
_ABORTED = struct.Struct(">qqq")

META_FORMAT_VERSION = b"format.version"
META_STATE_SEQUENCE = b"state.sequence"
META_CLUSTER_ID = b"cluster.id"

FORMAT_VERSION = 2
"""2: batches in shared files (24-byte pointers, `shared_refs` rows in the index); 1 wrote none."""


def record_key(partition_id: int, base_offset: int) -> bytes:
    return _RECORD_KEY.pack(partition_id, base_offset)


def parse_record_key(key: bytes) -> tuple[int, int]:
    partition_id, base_offset = _RECORD_KEY.unpack(key)
    return partition_id, base_offset


def event_key(sequence: int) -> bytes:
    return _SEQUENCE.pack(sequence)


def parse_event_key(key: bytes) -> int:
    (sequence,) = _SEQUENCE.unpack(key)
    return int(sequence)


def encode_sequence(sequence: int) -> bytes:
    return _SEQUENCE.pack(sequence)


def decode_sequence(value: bytes) -> int:
    (sequence,) = _SEQUENCE.unpack_from(value)
    return int(sequence)


def state_key(projection: str, entity: str) -> bytes:
    return projection.encode() + b"\x00" + entity.encode()


def parse_state_key(key: bytes) -> tuple[str, str]:
    projection, _, entity = key.partition(b"\x00")
    return projection.decode(), entity.decode()


def time_index_key(partition_id: int, max_timestamp: int) -> bytes:
    """Keyed by the running maximum timestamp, so a seek finds the first batch at or after a time."""
    return _TIME_INDEX_KEY.pack(TIME_INDEX_KIND, partition_id, max(max_timestamp, 0))


def aborted_key(partition_id: int, marker_offset: int) -> bytes:
    """An aborted transaction of the partition, by its ABORT marker's offset (Kafka's transaction index)."""
    return _TIME_INDEX_KEY.pack(ABORTED_KIND, partition_id, marker_offset)


def aborted_value(producer_id: int, first_offset: int, last_stable_offset: int) -> bytes:
    return _ABORTED.pack(producer_id, first_offset, last_stable_offset)


def parse_aborted(key: bytes, value: bytes) -> tuple[int, int, int, int]:
    """(producer id, first offset, marker offset, last stable offset) of an aborted-transaction row."""
    _, _, marker_offset = _TIME_INDEX_KEY.unpack(key)
    producer_id, first_offset, last_stable_offset = _ABORTED.unpack(value)
    return producer_id, first_offset, marker_offset, last_stable_offset


def parse_aborted_partition(key: bytes) -> int:
    """The partition of an aborted-transaction row's key."""
    _, partition_id, _ = _TIME_INDEX_KEY.unpack(key)
    return int(partition_id)


def parse_time_index_key(key: bytes) -> tuple[int, int]:
    _, partition_id, timestamp = _TIME_INDEX_KEY.unpack(key)
    return partition_id, timestamp
