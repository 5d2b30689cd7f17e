"""The client reads a pop's slice of a stored batch (its first record past the base offset) as a batch without
gaps from that record: only its records decoded, every field as stored, a slice that lies about its offsets
refused."""

from __future__ import annotations

import struct

import pytest
from logwright.client.connection import ClientError
from logwright.client.popped import PoppedMessages
from logwright.client.record_reader import CorruptRecordBatch
from logwright.compat.wire.batch_slices import BatchSlicer
from logwright.compat.wire.compacted_batch import rebuild
from logwright.compat.wire.record_batch import build_batch, decode_records, parse_header

from tests.client.test_popped import checkpoint, varied_records, with_crc


def test_a_slice_decodes_from_its_first_record_and_reads_every_field_as_stored() -> None:
    stored = build_batch(varied_records(2_000), base_offset=0)
    expected = {record.offset: record for record in decode_records(stored)}
    cut = BatchSlicer().cut((b"t" * 16, 0), stored, 700, 1_723)
    popped = PoppedMessages([checkpoint([cut], [(700, 1_723)])])
    popped.checkpoints[0].check()
    [batch] = popped.checkpoints[0].batches
    assert (batch.base_offset, batch.first_offset, batch.last_offset, batch.dense) == (0, 700, 1_723, True)
    for message in popped:
        record = expected[message.offset]
        assert (message.timestamp, message.key, message.value, message.headers) == (
            record.timestamp, record.key, record.value, record.headers)
    assert len(batch.values) == 1_024  # the slice's records, none of the 700 before them


def test_offsets_before_a_slice_are_in_no_batch_sent() -> None:
    cut = BatchSlicer().cut((b"t" * 16, 0), build_batch(varied_records(300), base_offset=0), 100, 199)
    with pytest.raises(ClientError, match="offset 99 of partition 0"):
        checkpoint([cut], [(99, 150)]).check()


def test_a_slice_announcing_no_gaps_from_its_first_record_whose_records_hold_others_is_refused() -> None:
    records = varied_records(31)[2:]
    gappy = rebuild(build_batch(varied_records(31)), [r for r in records if r.offset != 10], None)  # 2..30, not 10
    header = parse_header(gappy)
    lying = bytearray(gappy)
    struct.pack_into(">i", lying, 23, header.record_count + 1)  # last delta 29, first 2: "29 - 2 + 1 records"
    batch = PoppedMessages([checkpoint([with_crc(bytes(lying), header.record_count)], [(2, 5)])]).checkpoints[0]
    [kept] = batch.batches
    assert kept.first_offset == 2 and kept.dense
    with pytest.raises(CorruptRecordBatch, match="hold others"):
        kept.index(20)
