"""The records inside a RecordBatch v2, once decompressed: zigzag varints and length-prefixed fields.

Record (all lengths and deltas zigzag varints): length, attributes i8 (unused), timestampDelta,
offsetDelta, keyLength + key (-1 for null), valueLength + value, headerCount, then per header
keyLength + UTF-8 key, valueLength + value. Only the slow path comes here; `record_batch` holds the
batch around the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from logwright.compat.wire.varints import VarintTooLong, read_varint, varint


class CorruptRecords(ValueError):
    """The record bytes do not parse: truncated, over-long varints, lengths that do not add up."""


@dataclass(frozen=True, slots=True)
class Record:
    """One record as a consumer sees it: absolute offset, timestamp in ms, key, value, headers."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def parse_records(
    data: bytes, base_offset: int, base_timestamp: int, append_time: int | None, count: int
) -> list[Record]:
    """The ``count`` records in ``data``; with ``append_time`` (LogAppendTime) every record gets it."""
    try:
        records, position = _parse(data, base_offset, base_timestamp, append_time, count)
    except IndexError as error:
        raise CorruptRecords(f"the records end early ({len(data)} bytes for {count} records)") from error
    except VarintTooLong as error:
        raise CorruptRecords(str(error)) from error
    except UnicodeDecodeError as error:
        raise CorruptRecords(f"a record header key is not UTF-8: {error}") from error
    if position != len(data):
        raise CorruptRecords(f"{len(data) - position} bytes follow the last of the {count} records")
    return records


def _parse(
    data: bytes, base_offset: int, base_timestamp: int, append_time: int | None, count: int
) -> tuple[list[Record], int]:
    records: list[Record] = []
    position = 0
    for _ in range(count):
        length, position = read_varint(data, position)
        end = position + length
        timestamp_delta, position = read_varint(data, position + 1)
        offset_delta, position = read_varint(data, position)
        key, position = _read_bytes(data, position)
        value, position = _read_bytes(data, position)
        header_count, position = read_varint(data, position)
        headers = []
        for _ in range(header_count):
            name, position = _read_bytes(data, position)
            if name is None:
                raise CorruptRecords(f"record {len(records)} has a header with a null key")
            header_value, position = _read_bytes(data, position)
            headers.append((name.decode("utf-8"), header_value))
        if position != end:
            raise CorruptRecords(f"record {len(records)} announces {length} bytes but holds {position - end + length}")
        timestamp = append_time if append_time is not None else base_timestamp + timestamp_delta
        records.append(Record(base_offset + offset_delta, timestamp, key, value, tuple(headers)))
    return records, position


def _read_bytes(data: bytes, position: int) -> tuple[bytes | None, int]:
    length, position = read_varint(data, position)
    if length < 0:
        return None, position
    end = position + length
    if end > len(data):
        raise IndexError(end)
    return data[position:end], end


def _sized(data: bytes | None) -> bytes:
    return b"\x01" if data is None else varint(len(data)) + data


def encode_records(records: Sequence[Record], base_timestamp: int, base_offset: int | None = None) -> bytes:
    """``records`` numbered 0, 1, ... from the batch's base offset, timestamps relative to ``base_timestamp``.

    With ``base_offset``, each record keeps its own offset instead (as ``offset - base_offset``): a compacted
    batch leaves gaps where records were removed.
    """
    parts = []
    for index, record in enumerate(records):
        offset_delta = index if base_offset is None else record.offset - base_offset
        body = b"".join((
            b"\x00", varint(record.timestamp - base_timestamp), varint(offset_delta), _sized(record.key),
            _sized(record.value), varint(len(record.headers)),
            *(_sized(name.encode("utf-8")) + _sized(value) for name, value in record.headers),
        ))
        parts += [varint(len(body)), body]
    return b"".join(parts)
