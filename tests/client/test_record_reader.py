"""The bundled client's C record reader (`logwright.client.record_reader`, aiokafka's `DefaultRecordBatch`): it
is the native one, it reads what the reference decoder reads, and no batch however broken (truncated, bit-flipped
with or without a matching CRC, lengths near 2**63, a decompression bomb) does more than raise the client's
error: the process survives every one of them."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib

import pytest
from crc32c import crc32c
from logwright.client.connection import ClientError
from logwright.client.record_reader import NATIVE, CorruptRecordBatch, RecordCursor, read_all
from logwright.compat.wire.compression import MAX_DECOMPRESSED_BYTES
from logwright.compat.wire.record_batch import Compression, Record, build_batch, decode_records
from logwright.compat.wire.varints import varint


def fixed(raw: bytes | bytearray, record_count: int | None = None) -> bytes:
    """``raw`` with its batch length, CRC (and, if given, record count) made to match its bytes."""
    batch = bytearray(raw)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    if record_count is not None:
        struct.pack_into(">i", batch, 57, record_count)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


def sample() -> list[Record]:
    return [Record(0, 1_700_000_000_000, None, b"v0", ()),
            Record(1, 1_700_000_000_500, b"k1", None, (("h", b"x"), ("n", None))),
            Record(2, 1_699_999_999_000, b"", b"", (("", b""),)),
            Record(3, 1_700_000_090_000, b"k" * 200, b"v" * 300, (("caf\u00e9", b"\xff"),))]


def test_the_reader_is_aiokafkas_c_extension_even_when_aiokafka_is_told_not_to_use_it() -> None:
    assert NATIVE
    script = ("from logwright.client import record_reader as r; "
              "print(r.NATIVE, type(r.RecordCursor.__init__), r.DefaultRecordBatch.__module__)")
    shown = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                           env={**os.environ, "AIOKAFKA_NO_EXTENSIONS": "1"}).stdout.split()
    assert shown[0] == "True" and shown[-1] == "aiokafka.record._crecords.default_records"


@pytest.mark.parametrize("compression", list(Compression))
def test_null_and_empty_keys_values_and_headers_read_as_the_reference_decoder_reads_them(
        compression: Compression) -> None:
    raw = build_batch(sample(), base_offset=500, compression=compression)
    got = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in read_all(raw)]
    assert got == [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decode_records(raw)]
    assert got[1][2:] == (b"k1", None, (("h", b"x"), ("n", None))) and got[0][2] is None and got[2][2:4] == (b"", b"")


def test_log_append_time_gives_every_record_the_batch_time() -> None:
    raw = build_batch(sample(), log_append_time=1_800_000_000_000)
    assert {r.timestamp for r in read_all(raw)} == {1_800_000_000_000}


def test_records_decode_in_steps_and_a_fault_keeps_those_before_it() -> None:
    records = [Record(i, 1_700_000_000_000, None, bytes([i % 256]) * 10, ()) for i in range(100)]
    raw = build_batch(records)
    cursor = RecordCursor(raw)
    assert cursor.taken == 0
    assert [r.offset for r in cursor.take(10) + cursor.take(20)] == list(range(30))
    assert [r.offset for r in cursor.take(1_000)] == list(range(30, 100)) and cursor.take(5) == []
    cursor.check()
    cut = RecordCursor(fixed(raw[:-5], record_count=100))
    assert len(cut.take(50)) == 50
    before = cut.take(100)
    assert len(before) == 49 and before[-1].value == bytes([98]) * 10  # the records before the fault
    for _ in range(2):
        with pytest.raises(CorruptRecordBatch, match="record 99"):
            cut.take(1)
    with pytest.raises(CorruptRecordBatch, match="record 99"):
        cut.check()


def test_every_truncation_raises_the_clients_error() -> None:
    raw = build_batch(sample(), compression=Compression.NONE)
    for size in range(len(raw)):
        with pytest.raises(ClientError):
            read_all(raw[:size])  # as sent: the batch length says more
        if size >= 61:
            with pytest.raises(CorruptRecordBatch):
                read_all(fixed(raw[:size]))  # length and CRC made to match: the records betray it


def test_every_bit_flip_raises_or_reads_never_crashes() -> None:
    """Each bit of a batch flipped: with the CRC left as it was, every flip the CRC covers is refused; with the
    CRC made to match, the reader meets the broken record itself and must still only raise."""
    raw = build_batch(sample())
    for position in range(len(raw)):
        for bit in range(8):
            flipped = bytearray(raw)
            flipped[position] ^= 1 << bit
            if position >= 21:
                with pytest.raises(CorruptRecordBatch, match="CRC|announces"):
                    read_all(bytes(flipped))
            if position < 17:
                continue  # base offset, length, leader epoch, magic: not the records
            try:
                read = read_all(fixed(flipped))
            except CorruptRecordBatch:
                continue
            assert len(read) == 4  # a flip that still parses (a value byte, a timestamp): read, not crashed


def record_with_key_length(key_length: int) -> bytes:
    """One record whose key announces ``key_length`` bytes, followed by a few bytes only."""
    body = b"\x00" + varint(0) + varint(0) + varint(key_length) + b"abc" + varint(-1) + varint(0)
    return varint(len(body)) + body


@pytest.mark.parametrize("key_length", [2**63 - 1, 2**63 - 40, 2**62, 2**31, 4, -2**63])
def test_lengths_near_the_limits_of_int64_raise(key_length: int) -> None:
    head = build_batch([Record(0, 1_700_000_000_000, None, None, ())])[:61]
    with pytest.raises(CorruptRecordBatch):
        read_all(fixed(head + record_with_key_length(key_length), record_count=1))


def test_a_decompression_bomb_is_refused_before_the_reader_sees_it() -> None:
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    payload = b"".join(bomb.compress(chunk) for _ in range(MAX_DECOMPRESSED_BYTES // len(chunk) + 1)) + bomb.flush()
    head = bytearray(build_batch([Record(0, 0, None, None, ())])[:61])
    head[22] |= int(Compression.GZIP)
    with pytest.raises(CorruptRecordBatch, match="larger|limit|MiB|bytes"):
        read_all(fixed(bytes(head) + payload))


def test_aiokafkas_python_reader_where_no_wheel_is_built_reads_and_refuses_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from aiokafka.record.default_records import _DefaultRecordBatchPy
    from logwright.client import record_reader

    raw = build_batch(sample(), compression=Compression.GZIP)
    native = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in read_all(raw)]
    monkeypatch.setattr(record_reader, "DefaultRecordBatch", _DefaultRecordBatchPy)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in read_all(raw)] == native
    with pytest.raises(CorruptRecordBatch):
        read_all(fixed(build_batch(sample())[:-3]))
