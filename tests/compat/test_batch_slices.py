"""A stored batch cut to the records a pop hands out: a valid batch (own count, last offset delta, length and CRC;
base offset, timestamps and producer fields as stored) holding the stored records unchanged; batches it cannot
cut safely (compressed, with gaps, a CRC or lengths that do not add up) go as stored."""

from __future__ import annotations

import random

import pytest
from crc32c import crc32c
from logwright.compat.wire.batch_slices import MARK_EVERY, BatchSlicer
from logwright.compat.wire.compacted_batch import rebuild
from logwright.compat.wire.record_batch import (
    Compression,
    Record,
    build_batch,
    decode_records,
    parse_header,
    verify_crc,
)

SCOPE = (b"t" * 16, 0)


def records(count: int) -> list[Record]:
    """Records of varying sizes (1- to 3-byte length varints), some with keys and headers."""
    return [Record(0, 5_000 + index, b"k%d" % index if index % 3 else None, b"v" * (index % 300),
                   (("h", b"%d" % index),) if index % 7 == 0 else ()) for index in range(count)]


def test_a_slice_holds_the_stored_records_from_the_first_offset_to_the_last() -> None:
    stored = build_batch(records(1_000), base_offset=10_000, producer_id=9, producer_epoch=2, base_sequence=40,
                         partition_leader_epoch=3)
    every = decode_records(stored)
    slicer = BatchSlicer()
    for first, last in ((10_000, 10_099), (10_100, 10_611), (10_612, 10_999), (10_050, 10_050), (10_999, 10_999)):
        cut = slicer.cut(SCOPE, stored, first, last)
        header, original = parse_header(cut), parse_header(stored)
        assert verify_crc(cut) and len(cut) == header.size < len(stored)
        assert (header.base_offset, header.record_count, header.last_offset) == (10_000, last - first + 1, last)
        assert (header.base_timestamp, header.max_timestamp, header.producer_id, header.producer_epoch,
                header.base_sequence, header.partition_leader_epoch, header.attributes) == (
            original.base_timestamp, original.max_timestamp, 9, 2, 40, 3, original.attributes)
        assert decode_records(cut) == every[first - 10_000:last - 10_000 + 1]


def test_cuts_anywhere_in_any_order_read_the_right_records() -> None:
    """Pops take a batch in order (the walk resumes), revivals anywhere behind it (from a mark)."""
    stored = build_batch(records(700), base_offset=0)
    every = decode_records(stored)
    slicer = BatchSlicer()
    rng = random.Random(7)
    for _ in range(200):
        first = rng.randrange(700)
        last = rng.randrange(first, min(700, first + 3 * MARK_EVERY))
        cut = slicer.cut(SCOPE, stored, first, last)
        assert decode_records(cut) == every[first:last + 1] if (first, last) != (0, 699) else cut == stored


def test_a_whole_batch_and_batches_it_cannot_cut_safely_go_as_stored() -> None:
    plain = build_batch(records(50), base_offset=100)
    slicer = BatchSlicer()
    assert slicer.cut(SCOPE, plain, 100, 149) is plain  # every record handed out
    assert slicer.cut(SCOPE, plain, 90, 120) is plain  # offsets outside the batch: not ours to decide
    compressed = build_batch(records(50), base_offset=100, compression=Compression.LZ4)
    assert slicer.cut(SCOPE, compressed, 110, 120) is compressed
    stored = decode_records(plain)
    gaps = rebuild(plain, stored[::2], None)  # compacted: offsets with gaps
    assert slicer.cut(SCOPE, gaps, 110, 120) is gaps


@pytest.mark.parametrize("damage", ["crc", "length", "negative length"])
def test_a_batch_damaged_at_rest_is_sent_as_stored_not_signed_anew(damage: str) -> None:
    stored = bytearray(build_batch(records(50), base_offset=0))
    if damage == "crc":
        stored[200] ^= 0x01  # a byte of a record: the stored CRC no longer matches
    else:  # the first record's length (zigzag 63, or -1) no longer adds up, under a CRC that matches
        stored[61] = 0x7E if damage == "length" else 0x01
        stored[17:21] = crc32c(stored[21:]).to_bytes(4, "big")
    batch = bytes(stored)
    slicer = BatchSlicer()
    assert slicer.cut(SCOPE, batch, 10, 20) is batch
    assert slicer.cut(SCOPE, batch, 20, 30) is batch  # remembered: no second look


def test_walks_are_kept_per_partition_and_forgotten_oldest_first() -> None:
    stored = build_batch(records(300), base_offset=0)
    slicer = BatchSlicer(kept=2)
    for partition in range(3):
        assert decode_records(slicer.cut((b"t" * 16, partition), stored, 100, 199)) == decode_records(stored)[100:200]
    assert len(slicer._walks) == 2 and (SCOPE, 0, parse_header(stored).crc, len(stored)) not in slicer._walks
