"""Keys decoded once at append: every codec, tombstones and headers, and hostile batches refused, not trusted."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.compat.wire.compression import Compression, decompress
from logwright.compat.wire.record_batch import Record, build_batch
from logwright.core.log.record_keys import (
    KeyedRecord,
    UnreadableRecords,
    headers_contain,
    keyed_records,
    record_key_columns,
    record_keys,
)

RECORDS = (
    Record(0, 1_000, b"k1", b"v1", (("trace", b"t"), ("id", b"A"))),
    Record(0, 1_005, None, b"v2"),
    Record(0, 1_007, b"k1", None, (("id", None),)),
)


@pytest.mark.parametrize("codec", list(Compression))
def test_every_codec_gives_offsets_keys_tombstones_and_headers(codec: Compression) -> None:
    batch = build_batch(RECORDS, base_offset=40, compression=codec)
    assert keyed_records(batch, decompress) == (
        KeyedRecord(40, 1_000, b"k1", False, (("trace", b"t"), ("id", b"A"))),
        KeyedRecord(41, 1_005, None, False),
        KeyedRecord(42, 1_007, b"k1", True, (("id", None),)),
    )


def test_log_append_time_is_every_record_timestamp() -> None:
    batch = build_batch(RECORDS, log_append_time=9_999)
    assert [record.timestamp for record in keyed_records(batch, decompress)] == [9_999] * 3


def test_header_is_the_last_value_of_a_name() -> None:
    record = KeyedRecord(0, 0, None, False, (("id", b"A"), ("id", b"B")))
    assert record.header("id") == b"B"
    assert record.header("other") is None


def _with_count(batch: bytes, count: int) -> bytes:
    return batch[:57] + struct.pack(">i", count) + batch[61:]


@pytest.mark.parametrize("count", [2**31 - 1, -1, 4, 2])
def test_a_forged_record_count_is_refused(count: int) -> None:
    with pytest.raises(UnreadableRecords):
        keyed_records(_with_count(build_batch(RECORDS), count), decompress)


def test_a_forged_header_count_is_refused_before_any_loop() -> None:
    record = build_batch([Record(0, 0, b"k", b"v")])
    forged = record[:-1] + b"\xfe\xff\xff\xff\x0f"  # 2**31 - 1 headers, zigzag
    forged = forged[:61] + bytes([forged[61] + 4]) + forged[62:]
    forged = forged[:8] + struct.pack(">i", len(forged) - 12) + forged[12:]
    with pytest.raises(UnreadableRecords):
        keyed_records(forged, decompress)


@pytest.mark.parametrize("cut", [1, 5, 20])
def test_a_truncated_batch_is_refused(cut: int) -> None:
    batch = build_batch(RECORDS)
    with pytest.raises(UnreadableRecords):
        keyed_records(batch[:-cut], decompress)
    shortened = batch[:8] + struct.pack(">i", len(batch) - 12 - cut) + batch[12:-cut]
    with pytest.raises(UnreadableRecords):
        keyed_records(shortened, decompress)


def test_an_endless_varint_is_refused() -> None:
    batch = build_batch([Record(0, 0, b"k", b"v")])
    forged = batch[:61] + b"\xff" * 12
    forged = forged[:8] + struct.pack(">i", len(forged) - 12) + forged[12:]
    with pytest.raises(UnreadableRecords, match="ten bytes|varint"):
        keyed_records(forged, decompress)


def test_records_that_decompress_past_the_limit_are_refused() -> None:
    bomb = build_batch([Record(0, 0, b"k", b"\x00" * 200_000)], compression=Compression.ZSTD)
    with pytest.raises(UnreadableRecords, match="zstd"):
        keyed_records(bomb, lambda codec, data: decompress(codec, data, max_size=1_000))


def test_garbage_compressed_bytes_are_refused() -> None:
    batch = build_batch(RECORDS, compression=Compression.LZ4)
    forged = batch[:61] + b"\x04\x22\x4d\x18garbage"
    forged = forged[:8] + struct.pack(">i", len(forged) - 12) + forged[12:]
    with pytest.raises(UnreadableRecords):
        keyed_records(forged, decompress)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_any_corruption_of_a_batch_is_read_or_refused_never_anything_else(data: st.DataObject) -> None:
    codec = data.draw(st.sampled_from(list(Compression)))
    batch = bytearray(build_batch(RECORDS, base_offset=5, compression=codec))
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(batch) - 1))
        batch[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(batch)))
    try:
        records = keyed_records(bytes(batch[:cut]), decompress)
    except UnreadableRecords:
        return
    assert all(isinstance(record, KeyedRecord) for record in records)


def _keys_or_refusal(read: object) -> object:
    try:
        return read()  # type: ignore[operator]
    except UnreadableRecords:
        return UnreadableRecords


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_the_keys_only_reader_agrees_with_the_full_one_on_any_batch(data: st.DataObject) -> None:
    """`record_keys` and `record_key_columns` (inline varints, headers parsed only when present) read what
    `keyed_records` reads and refuse what it refuses, on whole, corrupted and truncated batches, with long
    varints and many records."""
    codec = data.draw(st.sampled_from(list(Compression)))
    records = data.draw(st.lists(st.builds(
        Record, st.just(0), st.integers(0, 10**12), st.none() | st.binary(max_size=200),
        st.none() | st.binary(max_size=300),
        st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2).map(tuple)),
        min_size=1, max_size=80))
    batch = bytearray(build_batch(records, base_offset=5, compression=codec))
    for _ in range(data.draw(st.integers(0, 4))):
        at = data.draw(st.integers(0, len(batch) - 1))
        batch[at] = data.draw(st.integers(0, 255))
    cut = bytes(batch[:data.draw(st.integers(0, len(batch)))] if data.draw(st.booleans()) else batch)
    full = _keys_or_refusal(lambda: [record.key for record in keyed_records(cut, decompress)])
    assert _keys_or_refusal(lambda: record_keys(cut, decompress)) == full
    columns = _keys_or_refusal(lambda: [(record.offset, record.key, record.value_is_null)
                                        for record in keyed_records(cut, decompress)])
    assert _keys_or_refusal(lambda: list(zip(*record_key_columns(cut, decompress), strict=True))) == columns


NEEDLE = b"logwright.deliver."


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(
    st.none() | st.binary(max_size=40) | st.just(NEEDLE),
    st.none() | st.binary(max_size=300) | st.builds(lambda pad: pad + NEEDLE + pad, st.binary(max_size=50)),
    st.lists(st.tuples(st.sampled_from(["id", "logwright.deliver.after.ms", "x-logwright.deliver.at"]),
                       st.none() | st.binary(max_size=8)), max_size=3)), min_size=1, max_size=20))
def test_headers_contain_finds_a_string_in_the_headers_and_never_in_keys_or_values(
        records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]) -> None:
    """What the delayed-delivery plugin asks of a batch of large records: its values (up to a MB each) are skipped,
    so a value holding the string is no false alarm, and a header holding it is always found."""
    batch = build_batch([Record(0, 1_000, key, value, tuple(headers)) for key, value, headers in records])
    in_headers = any(NEEDLE in name.encode() for _, _, headers in records for name, _ in headers)
    assert headers_contain(batch, NEEDLE) is in_headers


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_headers_contain_reads_or_refuses_any_corruption(data: st.DataObject) -> None:
    batch = bytearray(build_batch(RECORDS + (Record(0, 0, b"k", b"v" * 300, (("logwright.deliver.at.ms", b"1"),)),)))
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(batch) - 1))
        batch[at] = data.draw(st.integers(0, 255))
    cut = bytes(batch[:data.draw(st.integers(0, len(batch)))])
    try:
        assert headers_contain(cut, NEEDLE) in (True, False)
    except UnreadableRecords:
        pass


@pytest.mark.parametrize("count", [2**31 - 1, -1, 5])
def test_headers_contain_refuses_a_forged_record_count(count: int) -> None:
    with pytest.raises(UnreadableRecords):
        headers_contain(_with_count(build_batch(RECORDS), count), NEEDLE)
