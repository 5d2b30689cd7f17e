"""RecordBatch v2: header golden bytes, splitting, CRC, offset patching, codecs, and aiokafka as a second opinion."""

from __future__ import annotations

import random
import struct

import cramjam
import pytest
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st
from logwright.compat.wire.compression import Compression, compress_within, decompress
from logwright.compat.wire.record_batch import (
    HEADER_SIZE,
    BatchHeader,
    CorruptBatch,
    Record,
    RecordBatchError,
    TimestampType,
    UnsupportedMessageFormat,
    build_batch,
    decode_records,
    iter_batches,
    numbered,
    parse_header,
    recompressed,
    verify_crc,
    with_base_offset,
    with_log_append_time,
)

GOLDEN_HEADER = bytes.fromhex(
    "0000000000000064"  # baseOffset 100
    "00000031"  # batchLength 49: header only, no records
    "00000007"  # partitionLeaderEpoch 7
    "02"  # magic 2
    "01020304"  # crc (not checked by parse_header)
    "0033"  # attributes: codec 3 (lz4) | transactional 0x10 | control 0x20
    "00000004"  # lastOffsetDelta 4
    "0000018bcfe56800"  # baseTimestamp 1700000000000
    "0000018bcfe56bb8"  # maxTimestamp 1700000000952
    "000000000000002a"  # producerId 42
    "0003"  # producerEpoch 3
    "00000010"  # baseSequence 16
    "00000005"  # recordCount 5
)

timestamps = st.integers(min_value=0, max_value=2**41)
records_strategy = st.lists(
    st.builds(
        Record, offset=st.just(0), timestamp=timestamps, key=st.none() | st.binary(max_size=30),
        value=st.none() | st.binary(max_size=200),
        headers=st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=10)), max_size=3).map(tuple),
    ),
    min_size=1, max_size=20,
)


def sample_records(count: int = 5) -> list[Record]:
    return [Record(0, 1_700_000_000_000 + 10 * i, f"key-{i}".encode(), b"value " * i, (("trace", b"t%d" % i),))
            for i in range(count)]


def aiokafka_batch(records: list[Record], codec: Compression) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=int(codec), is_transactional=0, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=10_000_000)
    for offset, record in enumerate(records):
        builder.append(offset, timestamp=record.timestamp, key=record.key, value=record.value,
                       headers=list(record.headers))
    return bytes(builder.build())


def with_payload(payload: bytes, codec: Compression, record_count: int, base_timestamp: int) -> bytes:
    """A batch around an already-encoded records payload, written field by field."""
    tail = struct.pack(">hiqqqhii", int(codec), record_count - 1, base_timestamp, base_timestamp, -1, -1, -1,
                       record_count) + payload
    return struct.pack(">qiibI", 0, 49 + len(payload), -1, 2, crc32c(tail)) + tail


def test_golden_header() -> None:
    header = parse_header(GOLDEN_HEADER)
    assert header == BatchHeader(100, 49, 7, 2, 0x01020304, 0x33, 4, 1_700_000_000_000, 1_700_000_000_952, 42, 3,
                                 16, 5)
    assert header.compression is Compression.LZ4
    assert header.is_transactional and header.is_control
    assert header.timestamp_type is TimestampType.CREATE_TIME
    assert (header.size, header.last_offset, header.next_offset) == (61, 104, 105)


def test_log_append_time_flag() -> None:
    header = parse_header(GOLDEN_HEADER[:21] + b"\x00\x08" + GOLDEN_HEADER[23:])
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert not header.is_transactional and not header.is_control
    assert header.compression is Compression.NONE


@pytest.mark.parametrize("magic", [0, 1])
def test_old_message_formats_are_refused(magic: int) -> None:
    legacy = struct.pack(">qiIbb", 0, 14 + 8 * magic, 0, magic, 0) + b"\x00" * (8 * magic) + b"\xff" * 8
    with pytest.raises(UnsupportedMessageFormat, match=f"v{magic}"):
        list(iter_batches(legacy))
    with pytest.raises(UnsupportedMessageFormat):
        parse_header(legacy)
    with pytest.raises(UnsupportedMessageFormat):
        list(iter_batches(build_batch(sample_records()) + legacy))


def test_unknown_magic_is_corrupt() -> None:
    with pytest.raises(CorruptBatch, match="magic byte 3"):
        parse_header(GOLDEN_HEADER[:16] + b"\x03" + GOLDEN_HEADER[17:])


def test_unknown_codec_is_corrupt() -> None:
    with pytest.raises(CorruptBatch, match="codec 5"):
        parse_header(GOLDEN_HEADER[:21] + b"\x00\x05" + GOLDEN_HEADER[23:])


def test_short_header_and_short_length_are_corrupt() -> None:
    with pytest.raises(CorruptBatch, match="61 header bytes"):
        parse_header(GOLDEN_HEADER[:60])
    too_short = GOLDEN_HEADER[:8] + struct.pack(">i", 48) + GOLDEN_HEADER[12:]
    with pytest.raises(CorruptBatch, match="batch length 48"):
        parse_header(too_short)
    with pytest.raises(CorruptBatch, match="batch length 48"):
        list(iter_batches(too_short))


def test_iter_batches_splits_several_batches_without_copying() -> None:
    first, second = build_batch(sample_records(3)), build_batch(sample_records(2), compression=Compression.GZIP)
    views = list(iter_batches(first + second))
    assert [bytes(view) for view in views] == [first, second]
    assert all(isinstance(view, memoryview) for view in views)
    assert list(iter_batches(b"")) == []


def test_partial_tail() -> None:
    batch = build_batch(sample_records())
    for cut in (10, 40, len(batch) - 1):
        with pytest.raises(CorruptBatch):
            list(iter_batches(batch + batch[:cut]))
        assert [bytes(view) for view in iter_batches(batch + batch[:cut], allow_partial_tail=True)] == [batch]


def test_crc_mismatch_is_detected() -> None:
    batch = build_batch(sample_records())
    assert verify_crc(batch)
    for position in (21, 30, HEADER_SIZE, len(batch) - 1):
        damaged = bytearray(batch)
        damaged[position] ^= 0x40
        assert not verify_crc(damaged), position
    assert not verify_crc(batch[:60])


def test_base_offset_and_leader_epoch_patch_keeps_the_crc() -> None:
    batch = build_batch(sample_records(), compression=Compression.SNAPPY)
    patched = with_base_offset(memoryview(batch), 1_000, partition_leader_epoch=9)
    header = parse_header(patched)
    assert (header.base_offset, header.partition_leader_epoch) == (1_000, 9)
    assert verify_crc(patched) and DefaultRecordBatch(patched).validate_crc()
    assert [record.offset for record in decode_records(patched)] == [1_000, 1_001, 1_002, 1_003, 1_004]
    assert with_base_offset(batch, 0) == batch


def test_numbered_patches_a_batch_in_the_frame_it_fills_at_least_half_of_and_copies_any_other() -> None:
    batch = build_batch(sample_records(), compression=Compression.SNAPPY)
    expected = with_base_offset(batch, 1_000, partition_leader_epoch=0)
    frame = bytearray(b"\xff" * 40 + batch)  # a request frame: its header and fields, then the batch
    view = memoryview(frame)[40:]
    patched = numbered(view, 1_000, 0)
    assert patched is view and bytes(patched) == expected and frame[:40] == b"\xff" * 40
    assert verify_crc(patched) and [record.offset for record in decode_records(patched)][0] == 1_000

    small_share = bytearray(len(batch) + 1) + batch  # the batch under half of what it would keep alive
    copied = numbered(memoryview(small_share)[len(batch) + 1:], 1_000, 0)
    assert isinstance(copied, bytes) and copied == expected and small_share[len(batch) + 1:] == batch
    unchanged = bytes(batch)
    from_bytes = numbered(memoryview(unchanged), 1_000, 0)
    assert from_bytes == expected and unchanged == batch and isinstance(from_bytes, bytes)


def test_log_append_time_rewrite() -> None:
    batch = with_log_append_time(build_batch(sample_records()), 1_800_000_000_000)
    header = parse_header(batch)
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME and header.max_timestamp == 1_800_000_000_000
    assert verify_crc(batch)
    assert {record.timestamp for record in decode_records(batch)} == {1_800_000_000_000}
    assert {record.timestamp for record in DefaultRecordBatch(batch)} == {1_800_000_000_000}


def test_build_batch_flags_and_producer_fields() -> None:
    batch = build_batch(sample_records(2), base_offset=7, producer_id=11, producer_epoch=2, base_sequence=30,
                        is_transactional=True, is_control=True, partition_leader_epoch=4)
    header = parse_header(batch)
    assert (header.base_offset, header.producer_id, header.producer_epoch, header.base_sequence) == (7, 11, 2, 30)
    assert header.is_transactional and header.is_control and header.partition_leader_epoch == 4
    assert (header.record_count, header.last_offset_delta, header.size) == (2, 1, len(batch))
    with pytest.raises(ValueError, match="at least one record"):
        build_batch([])


@pytest.mark.parametrize("codec", list(Compression))
def test_aiokafka_batches_parse_and_decode_the_same(codec: Compression) -> None:
    records = sample_records(50)
    batch = aiokafka_batch(records, codec)
    header = parse_header(batch)
    assert verify_crc(batch) and header.record_count == 50 and header.size == len(batch)
    ours = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decode_records(batch)]
    theirs = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in DefaultRecordBatch(batch)]
    assert ours == theirs


@pytest.mark.parametrize("codec", list(Compression))
def test_our_batches_read_by_aiokafka(codec: Compression) -> None:
    records = sample_records(50)
    batch = build_batch(records, base_offset=3, compression=codec)
    reader = DefaultRecordBatch(batch)
    assert reader.validate_crc() and reader.compression_type == int(codec)
    got = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in DefaultRecordBatch(batch)]
    assert got == [(3 + i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)]


def test_uncompressed_batch_is_byte_identical_to_aiokafkas() -> None:
    records = sample_records(20)
    assert build_batch(records) == aiokafka_batch(records, Compression.NONE)


def test_snappy_raw_and_xerial_framings_both_decode() -> None:
    records = sample_records(30)
    plain = build_batch(records)
    payload = plain[HEADER_SIZE:]
    raw = with_payload(bytes(cramjam.snappy.compress_raw(payload)), Compression.SNAPPY, 30, records[0].timestamp)
    xerial = build_batch(records, compression=Compression.SNAPPY)
    assert xerial[HEADER_SIZE:].startswith(b"\x82SNAPPY\x00")
    assert [r.value for r in decode_records(raw)] == [r.value for r in decode_records(xerial)] == [
        r.value for r in records]


def test_garbled_compressed_payload_is_corrupt() -> None:
    for codec in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD):
        with pytest.raises(CorruptBatch, match=codec.name.lower()):
            decode_records(with_payload(b"not compressed at all", codec, 1, 0))


def test_record_bytes_that_do_not_add_up_are_corrupt() -> None:
    payload = build_batch(sample_records(3))[HEADER_SIZE:]
    with pytest.raises(CorruptBatch, match="end early"):
        decode_records(with_payload(payload[:-3], Compression.NONE, 3, 0))
    with pytest.raises(CorruptBatch, match="follow the last"):
        decode_records(with_payload(payload, Compression.NONE, 2, 0))
    with pytest.raises(CorruptBatch, match="end early"):
        decode_records(with_payload(payload, Compression.NONE, 4, 0))
    with pytest.raises(CorruptBatch, match="only"):
        decode_records(build_batch(sample_records(3))[:-1])


@pytest.mark.parametrize("codec", list(Compression))
@given(records=records_strategy, base_offset=st.integers(0, 2**62))
def test_build_then_decode_round_trip(codec: Compression, records: list[Record], base_offset: int) -> None:
    batch = build_batch(records, base_offset=base_offset, compression=codec)
    [view] = list(iter_batches(batch))
    assert verify_crc(view) and parse_header(view).compression is codec
    expected = [Record(base_offset + i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)]
    assert decode_records(view) == expected


@given(batches=st.lists(records_strategy, min_size=1, max_size=4), new_offset=st.integers(0, 2**62),
       codec=st.sampled_from(Compression))
def test_split_and_patch_round_trip(batches: list[list[Record]], new_offset: int, codec: Compression) -> None:
    built = [build_batch(records, compression=codec) for records in batches]
    views = list(iter_batches(b"".join(built)))
    assert [bytes(view) for view in views] == built
    for view, records in zip(views, batches, strict=True):
        patched = with_base_offset(view, new_offset)
        assert verify_crc(patched)
        assert [r.offset for r in decode_records(patched)] == list(range(new_offset, new_offset + len(records)))


@given(codec=st.sampled_from(Compression), flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)),
                                                         min_size=1, max_size=5), cut=st.integers(0, 10_000))
def test_damaged_batches_fail_only_with_batch_errors(codec: Compression, flips: list[tuple[int, int]],
                                                     cut: int) -> None:
    damaged = bytearray(build_batch(sample_records(4), compression=codec))
    for position, mask in flips:
        if position >= HEADER_SIZE or position in range(16, 23):
            damaged[position % len(damaged)] ^= mask
    try:
        decode_records(bytes(damaged[: max(cut, HEADER_SIZE)]))
    except RecordBatchError:
        pass


@pytest.mark.parametrize("target", list(Compression))
@pytest.mark.parametrize("source", [Compression.NONE, Compression.ZSTD, Compression.SNAPPY])
def test_a_recompressed_batch_keeps_every_field_but_its_codec(source: Compression, target: Compression) -> None:
    records = sample_records(40)
    batch = build_batch(records, base_offset=7, compression=source, producer_id=12, producer_epoch=3,
                        base_sequence=40, is_transactional=True, partition_leader_epoch=2)
    rebuilt, records_bytes = recompressed(batch, parse_header(batch), target,
                                          level=1 if target == Compression.GZIP else None)
    assert rebuilt is not None and verify_crc(rebuilt) and records_bytes == len(decompress(
        source, memoryview(batch)[HEADER_SIZE:]))
    before, after = parse_header(batch), parse_header(rebuilt)
    assert after.compression == target and after.size == len(rebuilt)
    assert after._replace(batch_length=0, crc=0, attributes=0) == before._replace(batch_length=0, crc=0, attributes=0)
    assert after.attributes & ~0x07 == before.attributes & ~0x07
    assert [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in DefaultRecordBatch(bytes(rebuilt))] == [
        (7 + i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)]
    assert DefaultRecordBatch(bytes(rebuilt)).compression_type == int(target), "aiokafka reads our framing"


def test_a_rebuilt_batch_over_its_bound_is_given_up() -> None:
    batch = build_batch([Record(0, 1, None, bytes(range(256)) * 64)])
    rebuilt = recompressed(batch, parse_header(batch), Compression.GZIP).batch
    assert rebuilt is not None
    assert recompressed(batch, parse_header(batch), Compression.GZIP, max_size=len(rebuilt)).batch is not None
    assert recompressed(batch, parse_header(batch), Compression.GZIP, max_size=len(rebuilt) - 1).batch is None


@pytest.mark.parametrize("codec", list(Compression))
def test_compressing_stops_once_the_output_passes_its_limit(codec: Compression) -> None:
    """Bytes that do not shrink: a limit below their size gives up within a chunk or a block of it, whatever the
    input's length; a limit of the whole result keeps it, and it decompresses to the input."""
    data = random.Random(83).randbytes(3 * 1024 * 1024)
    whole = compress_within(codec, data, 2**40)
    assert whole is not None and decompress(codec, whole) == data
    assert compress_within(codec, data, len(whole)) == whole
    assert compress_within(codec, data, len(whole) - 1) is None
    assert compress_within(codec, data, 1_000) is None
