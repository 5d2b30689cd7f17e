"""A compacted batch as the cleaner rebuilds it: same base offset and last offset delta, the kept records' own
offsets and timestamps, a valid CRC, the codec kept, and Kafka's delete horizon in the base timestamp."""

from __future__ import annotations

import pytest
from logwright.compat.wire.compacted_batch import DELETE_HORIZON_FLAG, delete_horizon_ms, keyless_record, rebuild
from logwright.compat.wire.record_batch import (
    Compression,
    Record,
    build_batch,
    decode_records,
    parse_header,
    verify_crc,
)

RECORDS = [Record(0, 1_000 + index, b"k%d" % (index % 3), None if index == 4 else b"v%d" % index,
                  (("h", b"%d" % index),)) for index in range(6)]


@pytest.mark.parametrize("codec", list(Compression))
def test_a_rebuilt_batch_keeps_offsets_timestamps_and_codec(codec: Compression) -> None:
    original = build_batch(RECORDS, base_offset=500, compression=codec, producer_id=9, producer_epoch=2,
                           base_sequence=40)
    stored = decode_records(original)
    rebuilt = rebuild(original, [stored[1], stored[4], stored[5]], None)
    header = parse_header(rebuilt)
    assert verify_crc(rebuilt)
    assert (header.base_offset, header.last_offset_delta, header.record_count) == (500, 5, 3)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (9, 2, 40)
    assert header.compression is codec and delete_horizon_ms(header) is None
    assert header.max_timestamp == 1_005
    assert decode_records(rebuilt) == [stored[1], stored[4], stored[5]]


def test_a_delete_horizon_is_the_base_timestamp_with_attribute_bit_6() -> None:
    original = build_batch(RECORDS, base_offset=7)
    stored = decode_records(original)
    rebuilt = rebuild(original, [stored[4]], 99_000)
    header = parse_header(rebuilt)
    assert header.attributes & DELETE_HORIZON_FLAG and delete_horizon_ms(header) == 99_000
    assert decode_records(rebuilt) == [stored[4]], "records keep their own timestamps"
    assert delete_horizon_ms(parse_header(rebuild(rebuilt, [stored[4]], None))) is None


def test_a_log_append_time_batch_keeps_its_append_time() -> None:
    original = build_batch(RECORDS, log_append_time=5_000)
    rebuilt = rebuild(original, decode_records(original)[2:3], None)
    assert parse_header(rebuilt).max_timestamp == 5_000
    assert [record.timestamp for record in decode_records(rebuilt)] == [5_000]


def test_a_keyless_record_is_found_and_nothing_is_kept_empty() -> None:
    assert keyless_record(build_batch(RECORDS)) is None
    assert keyless_record(build_batch([*RECORDS, Record(0, 1, None, b"x")], compression=Compression.LZ4)) == 6
    with pytest.raises(ValueError):
        rebuild(build_batch(RECORDS), [], None)
