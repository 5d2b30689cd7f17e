"""Produce reads every record of a batch before acknowledging it (`compat/wire/record_check.py`): what Kafka's
LogValidator refuses is refused, with its error kind, and everything a client writes passes."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.compat.wire.compression import Compression, compress
from logwright.compat.wire.record_batch import HEADER_SIZE, Record, build_batch, parse_header
from logwright.compat.wire.record_check import (
    CORRUPT,
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    RecordsRefused,
    TimestampBounds,
    check_records,
)
from logwright.compat.wire.records import encode_records

NOW = 1_800_000_000_000
HOUR = 3_600_000
BOUNDS = TimestampBounds(NOW, 2**63 - 1, HOUR)


def records(count: int, timestamp: int = NOW, size: int = 10) -> list[Record]:
    return [Record(offset=i, timestamp=timestamp + i, key=b"k%d" % i, value=bytes(size), headers=(("h", b"v"),))
            for i in range(count)]


def recrc(batch: bytearray) -> bytes:
    batch[17:21] = struct.pack(">I", crc32c(bytes(batch[21:])))
    return bytes(batch)


def check(batch: bytes, bounds: TimestampBounds | None = BOUNDS) -> None:
    check_records(memoryview(batch), parse_header(batch), bounds)


def refused(batch: bytes, bounds: TimestampBounds | None = BOUNDS) -> str:
    with pytest.raises(RecordsRefused) as caught:
        check(batch, bounds)
    return caught.value.kind


@pytest.mark.parametrize("codec", list(Compression))
def test_what_clients_write_passes(codec: Compression) -> None:
    check(build_batch(records(50), compression=codec))
    check(build_batch(records(1, size=100_000), compression=codec))


def test_a_codec_the_records_are_not_in_is_corrupt() -> None:
    batch = bytearray(build_batch(records(3)))
    batch[21:23] = struct.pack(">h", int(Compression.GZIP))
    assert refused(recrc(batch)) == CORRUPT


def test_a_record_length_past_its_bytes_is_an_invalid_record() -> None:
    batch = bytearray(build_batch(records(3)))
    batch[HEADER_SIZE] = 0x7E  # the first record's length varint: 63
    assert refused(recrc(batch)) == INVALID_RECORD


def test_more_or_fewer_records_than_the_header_counts_is_an_invalid_record() -> None:
    three = build_batch(records(3))
    body = three[HEADER_SIZE:]
    for count in (2, 4):  # the header counts ``count`` records, the body holds three
        batch = bytearray(three)
        batch[57:61] = struct.pack(">i", count)
        batch[23:27] = struct.pack(">i", count - 1)
        assert refused(recrc(batch)) == INVALID_RECORD
    trailing = bytearray(three + b"\x00\x00")
    trailing[8:12] = struct.pack(">i", len(trailing) - 12)
    assert refused(recrc(trailing)) == INVALID_RECORD
    assert body  # the three records themselves read


def test_a_compressed_batch_whose_inner_offsets_skip_is_an_invalid_record() -> None:
    items = [Record(offset=offset, timestamp=NOW, key=None, value=b"v", headers=()) for offset in (0, 1, 5)]
    good = bytearray(build_batch(items, compression=Compression.ZSTD))
    payload = compress(Compression.ZSTD, encode_records(items, NOW, base_offset=0))
    batch = bytearray(good[:HEADER_SIZE]) + payload
    batch[8:12] = struct.pack(">i", len(batch) - 12)
    assert refused(recrc(batch)) == INVALID_RECORD
    uncompressed = bytearray(build_batch(items))  # Kafka checks inner offsets of compressed batches only
    plain = bytearray(uncompressed[:HEADER_SIZE]) + encode_records(items, NOW, base_offset=0)
    plain[8:12] = struct.pack(">i", len(plain) - 12)
    check(recrc(plain))


def test_timestamps_outside_the_topics_window_are_invalid() -> None:
    assert refused(build_batch(records(2, timestamp=NOW + HOUR + 1))) == INVALID_TIMESTAMP
    check(build_batch(records(1, timestamp=NOW + HOUR)))
    narrow = TimestampBounds(NOW, 1000, HOUR)
    assert refused(build_batch(records(2, timestamp=NOW - 1001)), narrow) == INVALID_TIMESTAMP
    check(build_batch(records(1, timestamp=NOW - 1000)), narrow)
    check(build_batch(records(1, timestamp=-1)), narrow)  # no timestamp: not checked, as in Kafka
    with pytest.raises(RecordsRefused, match="offset 1 is out of range"):  # Kafka names the offending record
        check(build_batch([*records(1), Record(1, NOW + 2 * HOUR, None, b"v", ())]))
    assert refused(build_batch(records(1, timestamp=-(2**63)))) == INVALID_TIMESTAMP  # below now - Long.MAX
    check(build_batch(records(1, timestamp=-(2**62))))  # not below it: Kafka takes it too


def test_max_decompressed_message_bytes_bounds_each_record_body_of_a_compressed_batch() -> None:
    """A record of a 900-byte value is a 907-byte body (Kafka 4.4 refused it at 900 and took it at 908, probed);
    an uncompressed batch is not checked, and the bound is met before a timestamp is, as Kafka reads the record
    (and refuses it) before validating it."""
    one = [Record(0, NOW, None, bytes(900), ())]
    gzipped = build_batch(one, compression=Compression.GZIP)
    for limit, taken in ((900, False), (906, False), (907, True), (908, True)):
        if taken:
            check_records(memoryview(gzipped), parse_header(gzipped), BOUNDS, limit)
        else:
            with pytest.raises(RecordsRefused, match="Invalid record size: 907 exceeds") as caught:
                check_records(memoryview(gzipped), parse_header(gzipped), BOUNDS, limit)
            assert caught.value.kind == INVALID_RECORD
    plain = build_batch(one)
    check_records(memoryview(plain), parse_header(plain), BOUNDS, 1)
    late = build_batch([Record(0, NOW + 2 * HOUR, None, b"v", ()), Record(1, NOW, None, bytes(900), ())],
                       compression=Compression.ZSTD)
    with pytest.raises(RecordsRefused) as caught:
        check_records(memoryview(late), parse_header(late), BOUNDS, 100)
    assert caught.value.kind == INVALID_RECORD


def test_a_log_append_time_topic_does_not_check_timestamps() -> None:
    check(build_batch(records(2, timestamp=NOW + 10 * HOUR)), None)
    batch = bytearray(build_batch(records(3)))
    batch[HEADER_SIZE] = 0x7E
    assert refused(recrc(batch), None) == INVALID_RECORD  # its records are read all the same


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_batch_bit_flipped_under_a_valid_crc_is_refused_or_reads(data: st.DataObject) -> None:
    """Whatever the bytes under a valid CRC, the check answers (refuses or passes), it never raises otherwise."""
    codec = data.draw(st.sampled_from(list(Compression)))
    batch = bytearray(build_batch(records(data.draw(st.integers(1, 20))), compression=codec))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(HEADER_SIZE, len(batch) - 1))
        batch[position] = data.draw(st.integers(0, 255))
    try:
        check(recrc(batch))
    except RecordsRefused:
        pass
