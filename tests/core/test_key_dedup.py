"""Business-key deduplication, pure: classification against the window, the index fold, the producer's sequence."""

from __future__ import annotations

import pytest
from logwright.core.events import ProducerIdAllocated, RecordsAppended
from logwright.core.events.keys import DedupKeysExpired, DedupKeysIndexed, DuplicateDropped
from logwright.core.keys.dedup import (
    DEDUP_WINDOW,
    Deduplication,
    DroppedForEarlier,
    DroppedForStored,
    Kept,
    SeenKey,
    WindowIndex,
    check_window,
    classify,
    classify_keys,
    dedup_key_reader,
    entity_key,
    expired_entries,
    key_digest,
)
from logwright.core.log.producers import PRODUCERS, check_sequence, producer_key
from logwright.core.log.record_keys import KeyedRecord
from logwright.core.projection import fold

A, B = key_digest(b"a"), key_digest(b"b")


def _record(key: bytes | None, headers: tuple[tuple[str, bytes | None], ...] = ()) -> KeyedRecord:
    return KeyedRecord(0, 0, key, False, headers)


def test_stored_keys_in_the_window_and_earlier_records_of_the_batch_are_duplicates() -> None:
    window = {A: (7, 2_000)}
    dedup = Deduplication(dedup_key_reader("record-key"), 1_000, "record-key")
    verdicts = classify([_record(b"a"), _record(b"b"), _record(None), _record(b"b"), _record(None)], dedup,
                        window.get, 1_999)
    assert verdicts == (DroppedForStored(A, 7), Kept(B), Kept(None), DroppedForEarlier(B, 1), Kept(None))


def test_an_entry_at_its_expiry_no_longer_drops() -> None:
    dedup = Deduplication(dedup_key_reader("record-key"), 1_000, "record-key")
    assert classify([_record(b"a")], dedup, {A: (7, 2_000)}.get, 2_000) == (Kept(A),)


def test_header_mode_reads_the_last_header_of_that_name_and_ignores_the_record_key() -> None:
    dedup = Deduplication(dedup_key_reader("header:id"), 1_000, "header:id")
    records = [_record(b"x", (("id", b"a"),)), _record(b"x", (("id", b"b"), ("id", b"a"))), _record(b"x")]
    assert classify(records, dedup, {}.get, 0) == (Kept(A), DroppedForEarlier(A, 0), Kept(None))


def test_a_batch_is_looked_up_once_and_a_clean_batch_names_no_verdicts() -> None:
    asked: list[list[bytes]] = []

    def recall_many(digests: list[bytes]) -> list[tuple[int, int] | None]:
        asked.append(digests)
        return [(7, 2_000) if digest == A else None for digest in digests]

    clean = classify_keys([b"b", None, b"c"], recall_many, 1_000)
    assert clean.dropped == {} and clean.digests == [B, None, key_digest(b"c")]
    assert classify_keys([b"b", b"a", b"b"], recall_many, 1_000).dropped == {
        1: DroppedForStored(A, 7), 2: DroppedForEarlier(B, 0)}
    assert asked == [[B, key_digest(b"c")], [B, A, B]]


@pytest.mark.parametrize("value", ["", "key", "header:", "headers:id", "record-key "])
def test_a_bad_dedup_key_is_refused_with_the_allowed_forms(value: str) -> None:
    with pytest.raises(ValueError, match="'record-key' or 'header:<header name>'"):
        dedup_key_reader(value)


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "soon", str(366 * 24 * 3600 * 1000)])
def test_a_bad_window_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="logwright.dedup.window.ms"):
        check_window(value)


def test_the_window_fold_keeps_a_row_per_batch_named_by_its_first_key_until_it_is_swept() -> None:
    C = key_digest(b"c")
    states = fold(DEDUP_WINDOW, [
        DedupKeysIndexed(3, 100, 1_100, ((A, 10), (B, 11))),
        DedupKeysIndexed(4, 100, 1_100, ((A, 0),)),
        DedupKeysIndexed(3, 200, 1_200, ((C, 13),)),
        DedupKeysIndexed(3, 2_000, 3_000, ((B, 14), (A, 15))),
        DedupKeysExpired(((3, A), (3, C))),
    ])
    assert states == {entity_key(3, B): SeenKey(14, 3_000, ((A, 15),)), entity_key(4, A): SeenKey(0, 1_100)}
    assert expired_entries(sorted(states.items()), 1_100, 10) == ((4, A),)
    assert expired_entries(sorted(states.items()), 5_000, 1) == ((3, B),)


def test_a_row_of_version_1_is_a_batch_of_one_key() -> None:
    assert SeenKey.upgrade_fields(1, [7, 2_000]) == [7, 2_000, ()]


def test_the_window_index_is_built_from_the_rows_extended_and_pruned_as_windows_end() -> None:
    C = key_digest(b"c")
    index = WindowIndex.of_rows([(entity_key(3, A), SeenKey(10, 1_100, ((B, 11),))),
                                 (entity_key(4, A), SeenKey(0, 900)), ("3/not-a-row", object())])
    assert dict(index.partition(3)) == {A: (10, 1_100), B: (11, 1_100)} and dict(index.partition(4)) == {A: (0, 900)}
    index.add(3, 2_000, ((C, 12), (B, 13)))  # B again after its window ended, before the sweep
    index.prune(1_100)
    assert dict(index.partition(3)) == {C: (12, 2_000), B: (13, 2_000)} and dict(index.partition(4)) == {}
    index.prune(2_000)
    assert dict(index.partition(3)) == {} and dict(index.partition(9)) == {}


def test_a_shortened_batch_still_takes_its_whole_sequence_range() -> None:
    """Records 0..4 sent with sequences 0..4, two dropped: the next batch starts at 5 and a retry is a duplicate."""
    events = [
        ProducerIdAllocated(9, 0, None),
        RecordsAppended(1, 20, 3, 100, 0, 9, 0, 0),
        DuplicateDropped(1, 0, 20, 5, ((1, A, 3), (3, B, 4)), 9, 0, 0),
    ]
    state = fold(PRODUCERS, events)[producer_key(1, 9)]
    assert check_sequence(state, 0, 5, 1) is None
    assert check_sequence(state, 0, 0, 5) is not None and check_sequence(state, 0, 0, 5).base_offset == 20


def test_a_batch_dropped_whole_takes_its_range_too() -> None:
    events = [RecordsAppended(1, 0, 2, 100, 0, 9, 0, 0), DuplicateDropped(1, 0, 0, 2, ((0, A, 0), (1, B, 1)), 9, 0, 2)]
    state = fold(PRODUCERS, events)[producer_key(1, 9)]
    assert check_sequence(state, 0, 4, 1) is None
    duplicate = check_sequence(state, 0, 2, 2)
    assert duplicate is not None and duplicate.base_offset == 0
