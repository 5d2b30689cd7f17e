"""`appended_batch`: what the index hooks see of a batch being stored, and how its header search picks a strategy."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from logwright.compat.wire import appended_batches
from logwright.compat.wire.appended_batches import appended_batch
from logwright.compat.wire.compression import Compression
from logwright.compat.wire.record_batch import Record, build_batch
from logwright.core.log import record_keys
from logwright.core.log.index_hooks import AppendedBatch

NEEDLE = b"logwright.deliver."
DELAY = (("logwright.deliver.after.ms", b"60000"),)


def _view(records: list[Record], compression: Compression = Compression.NONE, in_frame: bool = False
          ) -> AppendedBatch:
    """The hooks' view of a batch of ``records``; ``in_frame``: held as a client's large Produce holds it, a view
    into the request's bytearray (`record_batch.numbered`)."""
    data = build_batch(records, base_offset=7, compression=compression)
    return appended_batch(memoryview(bytearray(b"\0" * 30 + data))[30:] if in_frame else bytes(data), "t", 0, 3,
                          lambda name: None)


@pytest.mark.parametrize("in_frame", [False, True])
def test_large_records_have_only_their_headers_searched(in_frame: bool) -> None:
    """A 200 KB value holding the string is skipped (no decoding of the batch follows), a header holding it found."""
    value = b"x" * 100_000 + NEEDLE + b"x" * 100_000
    plain = _view([Record(0, 1, None, value), Record(0, 2, None, value)], in_frame=in_frame)
    delayed = _view([Record(0, 1, None, value), Record(0, 2, None, b"y" * 200_000, DELAY)], in_frame=in_frame)
    assert plain.contains(NEEDLE) and not plain.headers_contain(NEEDLE)
    assert delayed.headers_contain(NEEDLE)
    assert plain.base_offset == 7 and [record.headers for record in delayed.records(False)][1] == DELAY


def test_small_records_are_searched_whole_and_may_answer_true_for_a_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Walking a thousand 1 KiB records (or 16 of 64 KiB) costs more than searching their bytes; a value holding the
    string makes the plugin decode the batch, which then finds no header."""
    walked: list[int] = []
    real = record_keys.headers_contain

    def counting(batch: bytes, needle: bytes) -> bool:
        walked.append(len(batch))
        return real(batch, needle)

    monkeypatch.setattr(appended_batches, "headers_contain", counting)
    small = _view([Record(0, 1, None, b"v" * 1_000 + NEEDLE) for _ in range(100)])
    assert small.headers_contain(NEEDLE) and walked == []
    assert not _view([Record(0, 1, None, b"v" * 65_536) for _ in range(16)]).headers_contain(NEEDLE) and walked == []
    large = _view([Record(0, 1, None, b"v" * 200_000) for _ in range(3)])
    assert not large.headers_contain(NEEDLE) and len(walked) == 1


def test_a_compressed_batch_hides_its_headers() -> None:
    assert not _view([Record(0, 1, None, b"v" * 20_000, DELAY)], Compression.GZIP).headers_contain(NEEDLE)


@given(st.lists(st.binary(max_size=60), min_size=1, max_size=8), st.binary(min_size=1, max_size=20), st.booleans())
def test_the_search_finds_what_bytes_find_finds_past_the_header(values: list[bytes], needle: bytes,
                                                                 planted: bool) -> None:
    """The SIMD search answers as ``bytes.find`` would, for any bytes and any needle, the batch header never
    searched (its CRC or timestamps may hold any bytes)."""
    records = [Record(0, index, None, value) for index, value in enumerate(values)]
    if planted:
        records.append(Record(0, len(values), None, b"a" + needle + b"z"))
    data = bytes(build_batch(records, base_offset=7))
    view = appended_batch(data, "t", 0, 3, lambda name: None)
    expected = data.find(needle, 61) >= 0
    assert view.contains(needle) is expected
    assert view.headers_contain(needle) is expected
    assert not planted or expected
    first_bytes = data[61:61 + len(needle)]  # the first record's own first bytes: found from the header's end on
    assert view.contains(first_bytes) and view.headers_contain(first_bytes)
