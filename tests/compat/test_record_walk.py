"""The record walk in C (``compat/wire/_record_walk.c``) gives the answers of the Python reference
(`record_walk.walk_in_python`) on every input, hostile ones first: it runs in the broker's process, where a read
past a buffer would not raise but kill it."""

from __future__ import annotations

import shutil
import sysconfig

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.compat.wire import record_walk
from logwright.compat.wire.record_batch import HEADER_SIZE, Record, build_batch
from logwright.compat.wire.record_walk import Walked, walk, walk_in_python
from logwright.compat.wire.varints import uvarint, varint

NOW = 1_800_000_000_000
WINDOW = (NOW - 1000, NOW + 1000)

native = pytest.mark.skipif(not record_walk.NATIVE, reason="no C compiler built compat/wire/_record_walk.c")


def test_the_c_walk_is_built_where_a_compiler_is() -> None:
    if shutil.which(sysconfig.get_config_var("CC").split()[0]) is None:
        pytest.skip("no C compiler here: the Python walk serves")
    assert record_walk.NATIVE, "pip install -e . should have built compat/wire/_record_walk.c"


def answer(records: bytes, count: int, first: int = NOW, window: tuple[int, int] = WINDOW,
           timestamps: bool = True, offsets: bool = True) -> Walked | str:
    """What a walk answers: its findings, or the message of the record that does not read."""
    try:
        return walk_in_python(records, count, first, *window, timestamps, offsets)
    except ValueError as error:
        return str(error)


def same(records: bytes, count: int, first: int = NOW, window: tuple[int, int] = WINDOW, timestamps: bool = True,
         offsets: bool = True) -> Walked | str:
    """Both walks' answer, which must agree."""
    expected = answer(records, count, first, window, timestamps, offsets)
    try:
        got: Walked | str = walk(records, count, first, *window, timestamps, offsets)
    except ValueError as error:
        got = str(error)
    assert got == expected
    return expected


def body(records: list[Record]) -> tuple[bytes, int]:
    batch = build_batch(records)
    return batch[HEADER_SIZE:], len(records)


def record(fields: bytes) -> bytes:
    """A record whose fields (after the attributes byte) are given raw, with its length in front."""
    return varint(1 + len(fields)) + b"\x00" + fields


PLAIN = varint(0) + varint(0) + varint(1) + b"k" + varint(1) + b"v" + varint(0)
"""timestamp delta 0, offset delta 0, key "k", value "v", no headers."""


@native
def test_what_clients_write_reads_the_same() -> None:
    records = [Record(i, NOW + i, None if i % 3 else b"key", b"v" * i, (("h", b"x"), ("é", None)) if i % 2 else ())
               for i in range(50)]
    assert same(*body(records))[:4] == (-1, 0, -1, 0)


@native
def test_the_first_timestamp_out_of_the_window_and_the_first_offset_out_of_place() -> None:
    records = [Record(0, NOW, None, b"a", ()), Record(1, NOW + 5000, None, b"b", ()), Record(2, -1, None, b"c", ())]
    assert same(*body(records))[:4] == (-1, 0, 1, NOW + 5000)
    assert same(*body(records), timestamps=False)[:4] == (-1, 0, -1, 0)
    skipping = record(varint(0) + varint(0) + PLAIN[2:]) + record(varint(0) + varint(7) + PLAIN[2:])
    assert same(skipping, 2)[:4] == (1, 7, -1, 0)
    assert same(skipping, 2, offsets=False)[:4] == (-1, 0, -1, 0)
    assert same(record(varint(2**62) + PLAIN[1:]), 1, first=2**62)[:4] == (-1, 0, 0, -(2**63))  # wraps as Java


@native
@pytest.mark.parametrize(("records", "count", "why"), [
    (b"", 1, "end before its record count"),
    (record(PLAIN), 2, "end before its record count"),
    (record(PLAIN) + b"\x00", 1, "bytes are left"),
    (b"\xff\xff\xff\xff\x0f", 1, "runs past the batch"),  # a 5-byte length, past the bytes
    (b"\xff\xff\xff\xff\xff\x01", 1, "length does not read"),  # 6 bytes: longer than an int varint
    (varint(-3) + bytes(5), 1, "runs past the batch"),
    (varint(0), 1, "ends before its attributes"),
    (record(b"\x80" * 10 + b"\x00" + PLAIN[1:]), 1, "timestamp or offset delta"),  # an 11-byte varlong
    (record(b"\x80" * 9 + b"\x01" + PLAIN[1:]), 1, None),  # a 10-byte varlong reads
    (record(varint(0) + varint(0) + varint(5) + b"k"), 1, "key runs past"),
    (record(varint(0) + varint(0) + varint(-1) + varint(9)), 1, "value runs past"),
    (record(PLAIN[:-1] + varint(-1)), 1, "negative number of headers"),
    (record(PLAIN[:-1] + varint(1) + varint(-1) + varint(-1)), 1, "negative size"),
    (record(PLAIN[:-1] + varint(1) + varint(2) + b"\xc3\x28" + varint(-1)), 1, "not UTF-8"),
    (record(PLAIN[:-1] + varint(1) + varint(2) + "é".encode() + varint(-1)), 1, None),
    (record(PLAIN[:-1] + varint(1) + varint(0) + varint(3) + b"ab"), 1, "header value runs past"),
    (record(PLAIN[:-1] + varint(2**31 - 1)), 1, "header key's size does not read"),
    (record(PLAIN + b"\x00"), 1, "do not add up"),
    (varint(1 + len(PLAIN)) + b"\xff" + PLAIN, 1, None),  # attributes are one byte, whatever its bits
])
def test_hostile_records(records: bytes, count: int, why: str | None) -> None:
    got = same(records, count)
    if why is None:
        assert isinstance(got, Walked)
    else:
        assert isinstance(got, str) and why in got


@native
def test_the_longest_record_is_measured_as_kafka_bounds_it() -> None:
    """max.decompressed.message.bytes bounds a record's length varint's value, the body after it (Kafka 4.4's
    DefaultRecord.readFrom): a record of a 900-byte value and no key is 907 bytes, 909 with its length."""
    records, count = body([Record(0, NOW, None, bytes(900), ()), Record(1, NOW, b"k", bytes(10), ())])
    assert same(records, count).longest == 907  # type: ignore[union-attr]
    assert same(*body([Record(0, NOW, None, b"", ())])).longest == 6  # type: ignore[union-attr]
    assert same(b"", 0).longest == 0  # type: ignore[union-attr]


@native
def test_a_count_far_past_the_bytes_stops_at_them() -> None:
    assert "end before" in str(same(record(PLAIN) * 3, 2**31 - 1))
    assert isinstance(same(b"", 0), Walked) and "bytes are left" in str(same(record(PLAIN), 0))


@native
def test_uvarints_wider_than_an_int_keep_their_low_32_bits_as_java_does() -> None:
    five = uvarint(2 * 3 + (0x70 << 28))[:5]  # bits past 32 in the fifth byte are dropped: offset delta 3
    assert same(record(varint(0) + five + PLAIN[2:]), 1)[:4] == (0, 3, -1, 0)


@native
def test_any_buffer_reads_alike() -> None:
    records, count = body([Record(0, NOW, b"k", b"v", ())])
    for view in (bytearray(records), memoryview(records), memoryview(b"xx" + records)[2:]):
        assert walk(view, count, NOW, *WINDOW, True, True) == same(records, count)


@native
@settings(max_examples=1500, deadline=None)
@given(st.data())
def test_mutated_batches_read_alike(data: st.DataObject) -> None:
    count = data.draw(st.integers(1, 12))
    records = [Record(i, NOW + data.draw(st.integers(-2000, 2000)), data.draw(st.none() | st.binary(max_size=8)),
                      data.draw(st.binary(max_size=40)),
                      tuple(data.draw(st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(max_size=4)),
                                               max_size=2))))
               for i in range(count)]
    raw = bytearray(body(records)[0])
    for _ in range(data.draw(st.integers(0, 5))):
        action = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        if action == "flip" and raw:
            raw[at] = data.draw(st.integers(0, 255))
        elif action == "cut":
            del raw[at:at + data.draw(st.integers(1, 6))]
        else:
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=6))
    same(bytes(raw), data.draw(st.sampled_from([count, count - 1, count + 1, 0])),
         timestamps=data.draw(st.booleans()), offsets=data.draw(st.booleans()))


@native
@settings(max_examples=1500, deadline=None)
@given(st.binary(max_size=200), st.integers(-1, 40), st.integers(-(2**63), 2**63 - 1))
def test_random_bytes_read_alike(records: bytes, count: int, first: int) -> None:
    same(records, count, first)
