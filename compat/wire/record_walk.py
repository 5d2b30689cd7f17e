"""The records of a RecordBatch v2 walked without building them: does each read, what are its offset delta and
timestamp.

Produce checks every record of every batch before it acknowledges it (`record_check`). The walk is written twice:
in C (``_record_walk.c``, built at install when a compiler is there: 95-135 ns a record with aiokafka's reader
became a few ns) and here, in Python, where it is the reference the C walk is compared with
(tests/compat/test_record_walk.py) and the fallback without a compiler. The rules are Kafka 4.4's
``DefaultRecord.readFrom``: a length varint (5 bytes at most), one attributes byte, a timestamp delta varlong (10
at most), an offset delta, key and value (a negative size is null), a header count that is not negative, header
keys that are not negative in size (and, here as in aiokafka's reader, decode as UTF-8: the broker's own readers
decode them), and fields that add up to the record's length; no bytes may follow the last record. Timestamps
add as Java's long does (wrapping).
"""

from __future__ import annotations

from typing import Final, NamedTuple

__all__ = ["NATIVE", "Walked", "walk", "walk_in_python"]

_INT32_BITS: Final = 0xFFFF_FFFF
_INT64_BITS: Final = 0xFFFF_FFFF_FFFF_FFFF
_NO_TIMESTAMP: Final = -1


class Walked(NamedTuple):
    """What a walk found besides records that do not read (those raise ValueError)."""

    offset_at: int
    """Position of the first record whose offset delta is not its position (when asked), else -1."""
    offset_delta: int
    timestamp_at: int
    """Position of the first timestamp outside the window (when asked; -1 timestamps are not checked), else -1."""
    timestamp: int
    longest: int = 0
    """The longest record's length (its body, after the length varint): what ``max.decompressed.message.bytes``
    bounds in a compressed batch (Kafka 4.4's DefaultRecord.readFrom)."""


class _Ended(ValueError):
    pass


def _varint(data: memoryview, at: int, end: int, most: int) -> tuple[int, int]:
    """Kafka's zigzag varint (``most`` 5 bytes) or varlong (10), bits past the width dropped as Java does."""
    value = 0
    for shift in range(0, 7 * most, 7):
        if at >= end:
            raise _Ended
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            value &= _INT32_BITS if most == 5 else _INT64_BITS
            return (value >> 1) ^ -(value & 1), at
    raise _Ended


def _signed64(value: int) -> int:
    value &= _INT64_BITS
    return value - (1 << 64) if value >> 63 else value


def _skipped(data: memoryview, at: int, end: int) -> int:
    """Past a nullable bytes field: its size, then its bytes (a negative size is null); `_Ended` if it runs past."""
    size, at = _varint(data, at, end, 5)
    if size > end - at:
        raise _Ended
    return at + max(size, 0)


def _record(data: memoryview, at: int, end: int) -> tuple[int, int] | str:
    """One record's body: its (timestamp delta, offset delta), or why it does not read."""
    if at >= end:
        return "a record ends before its attributes"
    at += 1
    try:
        timestamp_delta, at = _varint(data, at, end, 10)
        offset_delta, at = _varint(data, at, end, 5)
    except _Ended:
        return "a record's timestamp or offset delta does not read"
    for field in ("key", "value"):
        try:
            at = _skipped(data, at, end)
        except _Ended:
            return f"a record's {field} runs past the record"
    try:
        header_count, at = _varint(data, at, end, 5)
    except _Ended:
        return "a record's header count does not read"
    if header_count < 0:
        return "a record has a negative number of headers"
    for _ in range(header_count):
        try:
            key_size, at = _varint(data, at, end, 5)
        except _Ended:
            return "a header key's size does not read"
        if key_size < 0:
            return "a header key has a negative size"
        if key_size > end - at:
            return "a header key runs past the record"
        try:
            bytes(data[at:at + key_size]).decode("utf-8")
        except UnicodeDecodeError:
            return "a header key is not UTF-8"
        try:
            at = _skipped(data, at + key_size, end)
        except _Ended:
            return "a header value runs past the record"
    if at != end:
        return "a record's fields do not add up to its length"
    return timestamp_delta, offset_delta


def walk_in_python(records: bytes | bytearray | memoryview, count: int, first_timestamp: int, earliest: int,
                   latest: int, check_timestamps: bool, offsets_from_zero: bool) -> Walked:
    """Read ``count`` records (the bytes after a batch header); raise ValueError naming the first that does not
    read, or bytes left after them."""
    data = memoryview(records).cast("B")
    at, end = 0, len(data)
    offset_at = timestamp_at = -1
    offset_found = timestamp_found = longest = 0
    position = 0
    problem = None
    while position < count:
        if at >= end:
            problem = "the batch's bytes end before its record count does"
            break
        try:
            length, at = _varint(data, at, end, 5)
        except _Ended:
            problem = "a record's length does not read"
            break
        if length < 0 or length > end - at:
            problem = "a record's length runs past the batch"
            break
        longest = max(longest, length)
        read = _record(data, at, at + length)
        if isinstance(read, str):
            problem = read
            break
        at += length
        timestamp_delta, offset_delta = read
        if offsets_from_zero and offset_at < 0 and offset_delta != position:
            offset_at, offset_found = position, offset_delta
        if check_timestamps and timestamp_at < 0:
            timestamp = _signed64(first_timestamp + timestamp_delta)
            if timestamp != _NO_TIMESTAMP and not earliest <= timestamp <= latest:
                timestamp_at, timestamp_found = position, timestamp
        position += 1
    if problem is None and at != end:
        problem = "bytes are left after the batch's last record"
    if problem is not None:
        raise ValueError(f"record {position}: {problem}")
    return Walked(offset_at, offset_found, timestamp_at, timestamp_found, longest)


try:
    from logwright.compat.wire._record_walk import walk as _native_walk
except ImportError:  # pragma: no cover - installed without a C compiler: the reference walk, 20-30x slower
    NATIVE = False

    walk = walk_in_python
else:
    NATIVE = True

    def walk(records: bytes | bytearray | memoryview, count: int, first_timestamp: int, earliest: int, latest: int,
             check_timestamps: bool, offsets_from_zero: bool) -> Walked:
        """The C walk (same arguments and answers as `walk_in_python`)."""
        return Walked(*_native_walk(records, count, first_timestamp, earliest, latest, check_timestamps,
                                    offsets_from_zero))
