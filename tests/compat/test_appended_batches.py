"""`appended_batch`: what the index hooks see of a batch being stored, and how its header search picks a strategy."""

from __future__ import annotations

import pytest
from logwright.compat.wire import appended_batches
from logwright.compat.wire.appended_batches import appended_batch
from logwright.compat.wire.compression import Compression
from logwright.compat.wire.record_batch import Record, build_batch
from logwright.core.log import record_keys
from logwright.core.log.index_hooks import AppendedBatch

NEEDLE = b"logwright.deliver."
DELAY = (("logwright.deliver.after.ms", b"60000"),)


def _view(records: list[Record], compression: Compression = Compression.NONE) -> AppendedBatch:
    return appended_batch(bytes(build_batch(records, base_offset=7, compression=compression)), "t", 0, 3,
                          lambda name: None)


def test_large_records_have_only_their_headers_searched() -> None:
    """A 64 KiB value holding the string is skipped (no decoding of the batch follows), a header holding it found."""
    value = b"x" * 30_000 + NEEDLE + b"x" * 35_000
    plain = _view([Record(0, 1, None, value), Record(0, 2, None, value)])
    delayed = _view([Record(0, 1, None, value), Record(0, 2, None, b"y" * 65_000, DELAY)])
    assert plain.contains(NEEDLE) and not plain.headers_contain(NEEDLE)
    assert delayed.headers_contain(NEEDLE)


def test_small_records_are_searched_whole_and_may_answer_true_for_a_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Walking a thousand 1 KiB records costs more than searching their bytes; a value holding the string makes the
    plugin decode the batch, which then finds no header."""
    walked: list[int] = []
    real = record_keys.headers_contain

    def counting(batch: bytes, needle: bytes) -> bool:
        walked.append(len(batch))
        return real(batch, needle)

    monkeypatch.setattr(appended_batches, "headers_contain", counting)
    small = _view([Record(0, 1, None, b"v" * 1_000 + NEEDLE) for _ in range(100)])
    assert small.headers_contain(NEEDLE) and walked == []
    large = _view([Record(0, 1, None, b"v" * 20_000) for _ in range(3)])
    assert not large.headers_contain(NEEDLE) and len(walked) == 1


def test_a_compressed_batch_hides_its_headers() -> None:
    assert not _view([Record(0, 1, None, b"v" * 20_000, DELAY)], Compression.GZIP).headers_contain(NEEDLE)
