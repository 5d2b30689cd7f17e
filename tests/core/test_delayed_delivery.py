"""Delayed delivery: reading the delivery headers, and the per-partition index folded from its events."""

from __future__ import annotations

import pytest
from logwright.compat.wire.compression import Compression
from logwright.compat.wire.delivery_headers import delayed_entries
from logwright.compat.wire.record_batch import build_batch, parse_header, with_base_offset
from logwright.compat.wire.records import Record
from logwright.core.events import LogTruncated, TopicDeleted
from logwright.core.events.log import DelayedRecordsIndexed
from logwright.core.log.delayed_delivery import DELAYED_RECORDS, DelayedIndex, deliver_at, next_due, pending
from logwright.core.projection import fold
from logwright.core.rangeset import RangeSet

AT, AFTER = "logwright.deliver.at.ms", "logwright.deliver.after.ms"


@pytest.mark.parametrize(("headers", "expected"), [
    ((), None),
    (((AFTER, b"3000"),), 4000),
    (((AT, b"5000"),), 5000),
    (((AT, b"5000"), (AFTER, b"100")), 5000),  # the absolute time wins
    (((AT, b"999"),), None),  # already passed
    (((AT, b"1000"),), None),  # due right now
    (((AFTER, b"0"),), None),
    (((AFTER, b"-5"),), None),
    (((AFTER, b"+5"),), None),
    (((AFTER, b" 5"),), None),
    (((AFTER, b"soon"),), None),
    (((AFTER, b""),), None),
    (((AFTER, None),), None),
    (((AFTER, b"\xd9\xa3"),), None),  # an Arabic-Indic digit is not ASCII
    (((AT, b"99999999999999999999"),), None),  # over 63 bits
    (((AFTER, b"9223372036854775807"),), 2**63 - 1),  # clamped, not overflowing
    (((AT, b"oops"), (AFTER, b"10")), 1010),  # an invalid absolute time counts as absent
])
def test_deliver_at_reads_plain_decimal_milliseconds(headers: tuple[tuple[str, bytes | None], ...],
                                                     expected: int | None) -> None:
    assert deliver_at(headers, 1000) == expected


def _index(*events: object) -> DelayedIndex | None:
    states = fold(DELAYED_RECORDS, events)  # type: ignore[arg-type]
    state = states.get("7")
    assert state is None or isinstance(state, DelayedIndex)
    return state


def test_the_index_keeps_only_what_may_still_wait() -> None:
    first = DelayedRecordsIndexed(7, 1000, ((3, 5000), (4, 2000)))
    assert _index(first) == DelayedIndex(7, ((3, 5000), (4, 2000)))
    # An append at 2500 drops offset 4 (due at 2000) and adds its own entries.
    assert _index(first, DelayedRecordsIndexed(7, 2500, ((9, 3000),))) == DelayedIndex(7, ((3, 5000), (9, 3000)))
    assert _index(first, DelayedRecordsIndexed(7, 6000, ((9, 7000),))) == DelayedIndex(7, ((9, 7000),))
    assert _index(first, LogTruncated(7, 4)) == DelayedIndex(7, ((4, 2000),))
    assert _index(first, LogTruncated(7, 5)) is None
    assert _index(first, TopicDeleted("t", b"\0" * 16, (7,))) is None
    assert _index(LogTruncated(7, 5)) is None


def test_pending_and_next_due_read_the_broker_clock() -> None:
    index = DelayedIndex(7, ((3, 5000), (4, 2000), (6, 5000)))
    assert pending(index, 1000) == RangeSet.from_ranges(((3, 4), (6, 6)))
    assert pending(index, 2000) == RangeSet.from_ranges(((3, 3), (6, 6)))
    assert pending(index, 5000) == RangeSet()
    assert pending(None, 0) == RangeSet()
    assert next_due(index, 1000) == 2000 and next_due(index, 2000) == 5000 and next_due(index, 5000) is None
    assert next_due(None, 0) is None


def _stored(records: list[Record], codec: Compression, base_offset: int = 40) -> bytes:
    return with_base_offset(build_batch(records, compression=codec), base_offset)


def test_delayed_entries_come_from_the_stored_batch_with_its_patched_offsets() -> None:
    records = [Record(0, 1, None, b"a"), Record(1, 1, None, b"b", ((AFTER, b"3000"),)),
               Record(2, 1, None, b"c", ((AT, b"junk"),))]
    batch = _stored(records, Compression.NONE)
    assert delayed_entries(batch, parse_header(batch), 100, compressed=False) == ((41, 3100),)
    plain = _stored([Record(0, 1, None, b"logwright.deliver in the value, no header")], Compression.NONE)
    assert delayed_entries(plain, parse_header(plain), 100, compressed=False) == ()


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_compressed_batches_are_opened_only_when_the_topic_asks(codec: Compression) -> None:
    batch = _stored([Record(0, 1, None, b"a", ((AFTER, b"10"),))], codec)
    assert delayed_entries(batch, parse_header(batch), 0, compressed=False) == ()
    assert delayed_entries(batch, parse_header(batch), 0, compressed=True) == ((40, 10),)


def test_malformed_records_are_delivered_at_once_not_refused() -> None:
    batch = bytearray(_stored([Record(0, 1, None, b"a", ((AFTER, b"10"),))], Compression.NONE))
    batch[61] = 0x7F  # the first record's length varint now lies
    assert delayed_entries(bytes(batch), parse_header(batch), 0, compressed=False) == ()
