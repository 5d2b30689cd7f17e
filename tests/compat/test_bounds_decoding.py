"""The decoding boundary (`compat/wire/bounds.py`): every count and length is checked before kio reads a body.

Properties: a body kio's writer produced always passes and ends where kio's reader ends; after any mutation,
a body that passes is either refused by kio with an ordinary exception or read to exactly the same end (the
walk never diverges from kio's, so kio never sees an unchecked count). Plus the forged frames of issue 12.
"""

from __future__ import annotations

import datetime
import importlib
import struct
import timeit
import tracemalloc
from typing import Any

import cramjam
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from kio.index import load_request_schema
from kio.serial import entity_reader
from kio.static.primitive import Records
from logwright.compat.wire import produce_request
from logwright.compat.wire.bounds import MAX_ELEMENTS, OutOfBounds, check_body, min_size
from logwright.compat.wire.compression import (
    MAX_DECOMPRESSED_BYTES,
    Compression,
    CompressionError,
    compress,
    decompress,
    inflate,
)
from logwright.compat.wire.encoder import encode_entity
from logwright.compat.wire.messages import (
    KNOWN_VERSIONS,
    MalformedRequest,
    decode_request,
    encode_request,
    parse_request_header,
    request_type,
    response_type,
)
from logwright.compat.wire.record_batch import Record, build_batch, parse_header
from logwright.compat.wire.record_check import check_records
from logwright.compat.wire.varints import uvarint
from logwright.core.log.record_keys import record_keys

st.register_type_strategy(Records, st.binary(max_size=40).map(Records))

ALL_CLASSES = [lookup(api_key, version) for api_key, versions in KNOWN_VERSIONS.items() for version in versions
               for lookup in (request_type, response_type)]
TOLERANT = settings(suppress_health_check=list(HealthCheck), deadline=None)
FORGED_COUNT = b"\xff\xff\xff\xff\x0f"
"""An unsigned varint of 2^32 - 1: the compact array length that made kio allocate 34 GB (issue 12)."""


def produce_frame(version: int, payload: bytes = b"v" * 1000) -> bytes:
    cls = load_request_schema(0, version)
    module = importlib.import_module(cls.__module__)
    batch = build_batch([Record(0, 1_700_000_000_000, None, payload)])
    partition = module.PartitionProduceData(index=0, records=batch)
    request = cls(transactional_id=None, acks=1, timeout=datetime.timedelta(milliseconds=1000),
                  topic_data=(module.TopicProduceData(name="t", partition_data=(partition,)),))
    return encode_request(request, 5, "rdkafka")


@settings(TOLERANT, max_examples=500)
@given(st.sampled_from(ALL_CLASSES).flatmap(st.from_type))
def test_every_body_kio_writes_passes_and_ends_where_kio_ends(entity: Any) -> None:
    body = encode_entity(entity)
    try:
        _, kio_end = entity_reader(type(entity))(body, 0)
    except ValueError as error:
        if "timedelta milliseconds overflow" in str(error):
            reject()  # kio's reader refuses i64 millisecond durations near 2**63 that its writer emits
        raise
    assert check_body(type(entity), body, 0) == kio_end == len(body)
    assert len(body) >= min_size(type(entity))


MUTATION = st.one_of(
    st.tuples(st.just("insert"), st.integers(0, 10_000), st.sampled_from(
        [FORGED_COUNT, b"\xff\xff\xff\x7f", b"\x7f\xff\xff\xff", b"\x80\x80\x80\x80\x80\x01", b"\xff", b"\x00"])),
    st.tuples(st.just("overwrite"), st.integers(0, 10_000), st.binary(min_size=1, max_size=5)),
    st.tuples(st.just("flip"), st.integers(0, 10_000), st.integers(0, 7)),
    st.tuples(st.just("truncate"), st.integers(0, 10_000), st.just(b"")),
)


def mutate(body: bytes, mutation: tuple[str, int, Any]) -> bytes:
    kind, at, value = mutation
    at = at % (len(body) + 1)
    if kind == "insert":
        return body[:at] + value + body[at:]
    if kind == "overwrite":
        return body[:at] + value + body[at + len(value):]
    if kind == "flip":
        if at == len(body):
            return body
        return body[:at] + bytes([body[at] ^ (1 << value)]) + body[at + 1:]
    return body[:at]


@settings(TOLERANT, max_examples=1500)
@given(st.sampled_from(ALL_CLASSES).flatmap(st.from_type), st.lists(MUTATION, min_size=1, max_size=3))
def test_a_mutated_body_that_passes_is_read_by_kio_to_the_same_end_or_refused(
        entity: Any, mutations: list[tuple[str, int, Any]]) -> None:
    body = encode_entity(entity)
    for mutation in mutations:
        body = mutate(body, mutation)
    try:
        end = check_body(type(entity), body, 0)
    except OutOfBounds:
        return
    try:
        _, kio_end = entity_reader(type(entity))(body, 0)
    except Exception:
        return
    assert kio_end == end


@pytest.mark.parametrize("version", [9, 10, 11, 12])
def test_forged_compact_array_count_in_produce_is_refused_before_kio(version: int) -> None:
    frame = produce_frame(version)
    topic_count_at = parse_request_header(frame).header_length + 1 + 2 + 4  # null transactional id, acks, timeout
    forged = frame[:topic_count_at] + FORGED_COUNT + frame[topic_count_at + 1:]
    with pytest.raises(MalformedRequest, match="OutOfBounds"):
        decode_request(forged)


def test_every_length_and_count_position_of_a_produce_v10_frame_refuses_the_forged_varint() -> None:
    frame = produce_frame(10, b"v" * 20)
    start = parse_request_header(frame).header_length
    for at in range(start, len(frame)):
        try:
            decode_request(frame[:at] + FORGED_COUNT + frame[at:])
        except MalformedRequest:
            pass


def test_a_count_needs_its_elements_minimum_bytes() -> None:
    frame = bytearray(produce_frame(3))
    at = parse_request_header(frame).header_length + 2 + 2 + 4
    frame[at:at + 4] = (1000).to_bytes(4, "big")  # 1000 topics, each at least 2 + 4 bytes: more than is left
    with pytest.raises(OutOfBounds, match="an array of 1000"):
        check_body(request_type(0, 3), frame, parse_request_header(frame).header_length)


def _describe_groups(names: int) -> bytes:
    """DescribeGroups v0 naming ``names`` empty groups (two bytes each)."""
    return struct.pack(">hhih", 15, 0, 7, 1) + b"x" + struct.pack(">i", names) + b"\x00\x00" * names


def _offset_fetch(partitions: tuple[int, ...]) -> bytes:
    """OffsetFetch v1 of one group, one topic per entry of ``partitions`` with that many partitions (nested arrays)."""
    topics = b"".join(struct.pack(">h", 1) + b"t" + struct.pack(">i", count) + bytes(4 * count) for count in partitions)
    return struct.pack(">hhih", 9, 1, 7, 1) + b"x" + struct.pack(">h", 1) + b"g" + struct.pack(">i", len(partitions)) \
        + topics


def test_a_body_holding_more_than_a_million_array_elements_is_refused_before_kio() -> None:
    """Kafka has no such limit; past it a request costs the loop and memory no byte limit bounds (a 2 MB DescribeGroups
    of a million empty names: 80 ms to decode)."""
    assert len(decode_request(_describe_groups(MAX_ELEMENTS))[1].groups) == MAX_ELEMENTS
    with pytest.raises(MalformedRequest, match="more than 1,000,000 elements"):
        decode_request(_describe_groups(MAX_ELEMENTS + 1))
    half = MAX_ELEMENTS // 2 - 1  # two topics' partitions, and the two topics: counted across nested arrays
    assert len(decode_request(_offset_fetch((half, half)))[1].topics) == 2
    with pytest.raises(MalformedRequest, match="more than 1,000,000 elements"):
        decode_request(_offset_fetch((half, half + 1)))
    # tagged fields count too: a million empty ones in a flexible body were walked one by one before kio refused them
    flexible = struct.pack(">hhih", 15, 5, 7, 1) + b"x\x00" + b"\x01\x00" + uvarint(MAX_ELEMENTS + 1) \
        + b"\x07\x00" * (MAX_ELEMENTS + 1)
    with pytest.raises(MalformedRequest, match="more than 1,000,000 elements"):
        decode_request(flexible)


@pytest.mark.parametrize("version", [3, 9])
def test_the_hand_produce_reader_counts_its_elements_as_bounds_does(version: int,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A 100 MB Produce of 6-byte partitions would be 16 million of them, read one by one in Python."""
    cls = load_request_schema(0, version)
    module = importlib.import_module(cls.__module__)

    def frame(partitions: int) -> bytes:
        request = cls(transactional_id=None, acks=1, timeout=datetime.timedelta(milliseconds=1000), topic_data=(
            module.TopicProduceData(name="t", partition_data=tuple(
                module.PartitionProduceData(index=index, records=None) for index in range(partitions))),))
        return encode_request(request, 5, "rdkafka")

    monkeypatch.setattr(produce_request, "MAX_ELEMENTS", 10)
    start = parse_request_header(frame(9)).header_length
    assert len(produce_request.read_produce_request(frame(9), start, version).topic_data[0].partition_data) == 9
    with pytest.raises(produce_request.TruncatedProduceRequest, match="more than 10 elements"):
        produce_request.read_produce_request(frame(10), start, version)  # the topic and its ten partitions


@pytest.mark.parametrize("version", [3, 9, 12])
def test_the_hand_produce_reader_refuses_forged_counts_without_looping(version: int) -> None:
    frame = produce_frame(version, b"v" * 20)
    start = parse_request_header(frame).header_length
    for at in range(start, len(frame)):
        for forged in (FORGED_COUNT, b"\x7f\xff\xff\xff", b"\xff\xfa"):
            try:
                produce_request.read_produce_request(frame[:at] + forged + frame[at:], start, version)
            except Exception:
                pass


def test_timing_bounds_check_beside_kio() -> None:
    """Printed with ``-s``: the checker's cost next to kio's reader and the whole decode (header included)."""
    rows = []
    for version in (9, 7):
        frame = produce_frame(version)
        cls = request_type(0, version)
        start = parse_request_header(frame).header_length
        reader = entity_reader(cls)
        check = min(timeit.repeat(lambda f=frame, c=cls, s=start: check_body(c, f, s), number=5000, repeat=3)) / 5
        kio = min(timeit.repeat(lambda f=frame, r=reader, s=start: r(f, s), number=5000, repeat=3)) / 5
        whole = min(timeit.repeat(lambda f=frame: decode_request(f), number=5000, repeat=3)) / 5
        rows.append((version, check * 1000, kio * 1000, whole * 1000))
    print()
    for version, check, kio, whole in rows:
        print(f"ProduceRequest v{version}, 1 partition, 1 KiB: bounds check {check:.2f} us, kio reader {kio:.2f} us, "
              f"decode_request {whole:.2f} us")


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_a_batch_that_decompresses_past_the_limit_is_refused(codec: Compression) -> None:
    bomb = compress(codec, b"\x00" * (4 * 1024 * 1024))
    assert len(bomb) < 300 * 1024
    assert decompress(codec, bomb) == b"\x00" * (4 * 1024 * 1024)
    with pytest.raises(CompressionError):
        decompress(codec, bomb, max_size=1024 * 1024)


@pytest.mark.parametrize("codec", [Compression.LZ4, Compression.ZSTD])
def test_the_first_buffer_sized_from_the_last_batch_never_changes_a_result(codec: Compression) -> None:
    """lz4 and zstd size their first buffer from the codec's last expansion: after a bomb (x16,000) and after a
    batch that barely shrinks, every result is whole, and one over the limit is still refused."""
    zeros, text = b"\x00" * (4 * 1024 * 1024), bytes(range(256)) * 4096
    for data in (zeros, text, zeros, b"x", text, zeros[:1000], text):
        assert inflate(codec, compress(codec, data)) == data
    with pytest.raises(CompressionError):
        decompress(codec, compress(codec, zeros), max_size=len(zeros) - 1)
    assert inflate(codec, compress(codec, text)) == text


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_an_inflated_batch_is_held_once_while_checked_and_while_its_keys_are_read(codec: Compression) -> None:
    """A batch inflating to the bound must not be held twice: session 33's hostile-input run found two 64 MiB
    buffers alive at once (a copy into ``bytes`` after lz4/zstd, pieces joined after gzip and xerial snappy, and
    the record-key reader copying the result again). At 40 MiB a second copy would take the peak past 80 MiB;
    one buffer, however the codec guessed its size, is at most the 64 MiB bound."""
    size = 40 * 1024 * 1024
    batch = build_batch([Record(0, 1000, b"key", bytes(size))], compression=codec)
    view = memoryview(batch)
    tracemalloc.start()
    try:
        check_records(view, parse_header(view), None)
        checking = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        assert record_keys(view, inflate) == [b"key"]
        reading_keys = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    bound = MAX_DECOMPRESSED_BYTES + 1024 * 1024
    assert checking < bound and reading_keys < bound, (checking, reading_keys)


def test_gzip_members_one_after_another_and_zero_padding_inflate_in_order() -> None:
    first, second = b"a" * (3 * 1024 * 1024), b"b" * 1000
    packed = compress(Compression.GZIP, first) + b"\x00" * 7 + compress(Compression.GZIP, second)
    assert inflate(Compression.GZIP, packed) == first + second
    with pytest.raises(CompressionError, match="ends early"):
        inflate(Compression.GZIP, packed[:-20])
    with pytest.raises(CompressionError, match="more than"):
        inflate(Compression.GZIP, packed, max_size=len(first))


def test_xerial_snappy_blocks_claiming_past_the_limit_are_refused_before_any_is_inflated() -> None:
    """Each block is under the limit, their sum is not: refused from the claims, before the result is allocated."""
    block = bytes(cramjam.snappy.compress_raw(bytes(600 * 1024)))
    framed = b"\x82SNAPPY\x00" + bytes.fromhex("0000000100000001") + (len(block).to_bytes(4, "big") + block) * 2
    assert inflate(Compression.SNAPPY, framed) == bytes(1200 * 1024)
    tracemalloc.start()
    try:
        with pytest.raises(CompressionError, match="claim more than"):
            inflate(Compression.SNAPPY, framed, max_size=1024 * 1024)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024
    empty = bytes(cramjam.snappy.compress_raw(b""))
    many = b"\x82SNAPPY\x00" + bytes.fromhex("0000000100000001") + (len(empty).to_bytes(4, "big") + empty) * 100_000
    assert inflate(Compression.SNAPPY, many) == b""


def test_a_raw_snappy_block_claiming_four_gigabytes_is_refused_before_allocating() -> None:
    with pytest.raises(CompressionError, match="claims 4294967295 bytes"):
        decompress(Compression.SNAPPY, b"\xff\xff\xff\xff\x0f" + bytes(10))


@settings(TOLERANT, max_examples=200)
@given(st.sampled_from(list(Compression)), st.binary(max_size=3000), st.lists(MUTATION, max_size=2))
def test_decompress_round_trips_and_refuses_mutations_with_compression_error(
        codec: Compression, data: bytes, mutations: list[tuple[str, int, Any]]) -> None:
    packed = compress(codec, data)
    assert decompress(codec, packed) == data
    for mutation in mutations:
        packed = mutate(packed, mutation)
    try:
        decompress(codec, packed, max_size=64 * 1024)
    except CompressionError:
        pass
