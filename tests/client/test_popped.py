"""The bundled client's lazy reading of a compact pop (`logwright.client.popped`), without a broker: every field
read from the batch bytes equals what the reference decoder (`decode_records`) finds, nothing is read before it
is asked, and a whole pop acknowledges as its checkpoints' ranges."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from logwright.client.connection import ClientError
from logwright.client.pop import _compact_acks
from logwright.client.popped import Checkpoint, PoppedMessage, PoppedMessages, kept_batch
from logwright.client.record_reader import CorruptRecordBatch
from logwright.compat.wire.compacted_batch import rebuild
from logwright.compat.wire.record_batch import Compression, Record, build_batch, decode_records, parse_header

TOPIC_HEX = "ab" * 16


def varied_records(count: int, base_offset: int = 0) -> list[Record]:
    """Keys null, short and long (multi-byte lengths), values of 0 to 300 bytes and null, headers on some,
    timestamp deltas from 0 to minutes (multi-byte varints)."""
    records = []
    for index in range(count):
        key = None if index % 3 == 0 else b"k" * (index % 200)
        value = None if index % 7 == 3 else bytes([index % 251]) * (index * 37 % 301)
        headers = tuple((f"h{n}", None if n == 1 else b"v" * n) for n in range(index % 4))
        records.append(Record(base_offset + index, 1_700_000_000_000 + index * index * 97, key, value, headers))
    return records


def with_crc(raw: bytes, record_count: int) -> bytes:
    """``raw`` with its length, record count and CRC made to match its bytes (a batch only the records betray)."""
    fixed = bytearray(raw)
    struct.pack_into(">i", fixed, 8, len(fixed) - 12)
    struct.pack_into(">i", fixed, 57, record_count)
    struct.pack_into(">I", fixed, 17, crc32c(bytes(fixed[21:])))
    return bytes(fixed)


def checkpoint(batches: list[bytes], ranges: list[tuple[int, int]], epoch: int = 3, partition: int = 0
               ) -> Checkpoint:
    kept = [batch for raw in batches if (batch := kept_batch(TOPIC_HEX, partition, raw)) is not None]
    return Checkpoint("t", "g", TOPIC_HEX, partition, epoch, 99, {5: 2}, ranges, kept)


@pytest.mark.parametrize("compression", [Compression.NONE, Compression.GZIP, Compression.ZSTD])
def test_every_field_read_lazily_equals_the_reference_decoder(compression: Compression) -> None:
    raw = build_batch(varied_records(400), base_offset=1_000, compression=compression)
    expected = {record.offset: record for record in decode_records(raw)}
    popped = PoppedMessages([checkpoint([raw], [(1_000, 1_399)])])
    assert len(popped) == 400
    for message in reversed(list(popped)):  # backwards: a read past the records found so far scans ahead
        record = expected[message.offset]
        assert (message.timestamp, message.key, message.value, message.headers) == (
            record.timestamp, record.key, record.value, record.headers)
        assert message.handle == f"1 3 0 {message.offset} {TOPIC_HEX} g"
        assert message.reconsume_times == (2 if message.offset == 5 else 0) and message.invisible_until_ms == 99


def test_offsets_need_no_record_read_and_a_value_reads_only_up_to_its_record() -> None:
    raw = build_batch(varied_records(2_000), base_offset=0)
    popped = PoppedMessages([checkpoint([raw], [(10, 1_033)])])
    assert [message.offset for message in popped] == list(range(10, 1_034))
    batch = popped.checkpoints[0].batches[0]
    assert batch.values == []  # no record looked at
    assert popped[0].value == varied_records(11)[10].value
    assert 11 <= len(batch.values) < 2_000


def test_a_batch_with_gaps_yields_the_records_it_holds() -> None:
    records = varied_records(30)
    raw = rebuild(build_batch(records), [record for record in records if record.offset % 4 != 1], None)
    kept = [record for record in decode_records(raw)]
    ranges = [(0, 0), (2, 4), (6, 8)]
    popped = PoppedMessages([checkpoint([raw], ranges)])
    popped.checkpoints[0].check()
    assert [(m.offset, m.value, m.key) for m in popped] == [
        (r.offset, r.value, r.key) for r in kept if any(first <= r.offset <= last for first, last in ranges)]
    with pytest.raises(ClientError, match="offset 5 of partition 0"):
        checkpoint([raw], [(4, 6)]).check()  # 5 was compacted away: the broker could not have popped it


def test_offsets_outside_every_batch_sent_are_refused() -> None:
    raw = build_batch(varied_records(10), base_offset=100)
    with pytest.raises(ClientError, match="offset 110"):
        checkpoint([raw], [(105, 110)]).check()
    with pytest.raises(ClientError, match="offset 99"):
        checkpoint([raw], [(99, 101)]).check()


def test_records_that_do_not_fill_their_batch_are_corrupt_not_silently_short() -> None:
    """A batch whose records run past its end, or leave bytes over, raises the client's error on every read (the
    same fault each time)."""
    records = varied_records(50)
    raw = build_batch(records, base_offset=0)
    short = with_crc(raw[:-40], record_count=50)  # the last record cut, the CRC made to match
    batch = kept_batch(TOPIC_HEX, 7, short)
    assert batch is not None
    for _ in range(2):
        with pytest.raises(CorruptRecordBatch):
            batch.index(49)
    assert batch.values == []
    trailing = kept_batch(TOPIC_HEX, 9, with_crc(raw + b"\x02\x00", record_count=50))
    assert trailing is not None
    with pytest.raises(CorruptRecordBatch, match="unconsumed"):
        trailing.index(49)
    with pytest.raises(ClientError, match="CRC"):  # the client's error, before anything is decoded
        kept_batch(TOPIC_HEX, 10, raw[:-1] + bytes([raw[-1] ^ 1]))


def test_a_batch_announcing_no_gaps_whose_records_hold_other_offsets_is_refused() -> None:
    records = varied_records(30)
    kept = [record for record in records if record.offset % 4 != 1]
    gappy = rebuild(build_batch(records), kept, None)  # 23 records with offset deltas 0, 2, 3, 4, 6, ...
    header = parse_header(gappy)
    lying = bytearray(gappy)
    struct.pack_into(">i", lying, 23, header.record_count - 1)  # last offset delta = count - 1: "no gaps"
    batch = kept_batch(TOPIC_HEX, 11, with_crc(bytes(lying), record_count=header.record_count))
    assert batch is not None and batch.dense
    with pytest.raises(CorruptRecordBatch, match="hold others"):
        batch.index(5)
    with pytest.raises(CorruptRecordBatch, match="hold others"):
        batch.index(1)


def test_the_sequence_reads_as_a_list() -> None:
    first = build_batch(varied_records(20), base_offset=0)
    second = build_batch(varied_records(20, 100), base_offset=100, compression=Compression.GZIP)
    popped = PoppedMessages([checkpoint([first], [(2, 3), (7, 7)]), checkpoint([second], [(100, 101)], 4, 1)])
    listed = list(popped)
    assert [(m.partition, m.offset) for m in listed] == [(0, 2), (0, 3), (0, 7), (1, 100), (1, 101)]
    assert popped == listed and popped[-1] == listed[-1] and popped[2] == listed[2]
    assert popped[1:3] == listed[1:3] and popped + [] == listed and [] + popped == listed
    assert PoppedMessages() == [] and popped != listed[:-1]
    assert [popped.position(0, 7), popped.position(1, 101), popped.position(0, 5)] == [2, 4, None]
    with pytest.raises(IndexError):
        popped[5]


def test_a_whole_pop_acknowledges_as_its_ranges_and_a_changed_handle_apart() -> None:
    raw = build_batch(varied_records(20), base_offset=0)
    popped = PoppedMessages([checkpoint([raw], [(2, 5), (9, 9)])])
    compact = _compact_acks(popped)
    assert compact is not None
    entries, locate = compact
    assert entries == [{"topic_id": bytes.fromhex(TOPIC_HEX), "partition": 0, "epoch": 3, "ranges": [[2, 5], [9, 9]]}]
    assert (locate(0, 9), locate(0, 6)) == ([4], [])
    changed = popped[1].with_handle(f"1 8 0 3 {TOPIC_HEX} g", 500)
    assert (changed.handle, changed.invisible_until_ms, changed.value) == (f"1 8 0 3 {TOPIC_HEX} g", 500,
                                                                             popped[1].value)
    mixed = _compact_acks([popped[0], changed, popped[2]])
    assert mixed is not None
    assert [(entry["epoch"], entry["ranges"]) for entry in mixed[0]] == [(3, [[2, 2], [4, 4]]), (8, [[3, 3]])]
    assert (mixed[1](0, 4), mixed[1](1, 3)) == ([2], [1])
    assert _compact_acks([PoppedMessage("t", "g", 0, 1, 0, None, None, (), "opaque", 0, 0)]) is None
