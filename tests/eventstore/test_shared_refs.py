"""`shared_refs`: which partitions hold batches in which shared file (pure bookkeeping, no I/O)."""

from __future__ import annotations

from logwright.eventstore.shared_refs import END_KEY, FIRST_KEY, SharedRefs, parse_ref, ref_key


def _written(*writes: tuple[int, int, int]) -> SharedRefs:
    refs = SharedRefs()
    for file, partition_id, base_offset in writes:
        refs.wrote(file, partition_id, base_offset)
    return refs


def test_a_row_spans_the_lowest_and_highest_base_offset_written_and_is_put_once_a_commit() -> None:
    refs = _written((1, 0, 10), (1, 0, 30), (1, 5, 0), (1, 0, 20))
    rows = refs.take_rows()
    assert [parse_ref(key, value) for key, value in rows] == [(1, 0, 10, 30), (1, 5, 0, 0)]
    assert refs.take_rows() == [], "nothing written since"
    refs.wrote(1, 5, 7)
    assert [parse_ref(key, value) for key, value in refs.take_rows()] == [(1, 5, 0, 7)]


def test_rows_sort_between_the_bounds_and_not_among_the_time_index() -> None:
    key = ref_key(2**64 - 1, 2**32 - 1)
    assert FIRST_KEY <= ref_key(0, 0) < key < END_KEY
    assert not key.startswith(b"T")


def test_a_truncation_drops_the_rows_wholly_below_it_and_names_the_files_left_empty() -> None:
    refs = _written((1, 0, 0), (1, 0, 10), (1, 1, 0), (2, 0, 20), (3, 0, 40))
    assert refs.drop_below(0, 20) == ([ref_key(1, 0)], []), "file 1 still holds partition 1's batch"
    assert refs.span(2, 0) == (20, 20), "the batch at 20 is kept: its row stays"
    assert refs.drop_below(0, 41) == ([ref_key(2, 0), ref_key(3, 0)], [2, 3])
    assert refs.files() == {1}
    assert refs.drop_below(1, 1) == ([ref_key(1, 1)], [1])
    spanning = _written((1, 0, 0), (1, 0, 10))
    assert spanning.drop_below(0, 10) == ([], []), "the batch at 10 is kept, and with it the row"
    assert len(refs) == 0 and not refs.referenced(1)


def test_a_partition_deleted_drops_every_row_of_it() -> None:
    refs = _written((1, 0, 0), (1, 1, 0), (2, 0, 10))
    assert refs.drop_partition(0) == ([ref_key(1, 0), ref_key(2, 0)], [2])
    assert refs.drop_partition(0) == ([], []), "nothing left"
    assert refs.files() == {1} and refs.span(1, 1) == (0, 0)


def test_a_row_dropped_in_the_commit_that_wrote_it_is_not_put() -> None:
    refs = _written((1, 0, 0), (1, 1, 0))
    refs.drop_partition(0)
    assert [parse_ref(key, value)[:2] for key, value in refs.take_rows()] == [(1, 1)]


def test_one_pair_dropped_alone_and_an_unknown_pair_is_nothing() -> None:
    refs = _written((1, 0, 0), (1, 1, 0))
    assert refs.drop(1, 0) == ([ref_key(1, 0)], [])
    assert refs.drop(1, 0) == ([], [])
    assert refs.drop(9, 1) == ([], [])
    assert refs.drop(1, 1) == ([ref_key(1, 1)], [1])


def test_load_replaces_everything_with_the_stored_rows() -> None:
    stored = _written((4, 2, 5), (4, 2, 9), (6, 3, 1))
    rows = stored.take_rows()
    refs = _written((1, 0, 0))
    refs.load(rows)
    assert refs.files() == {4, 6} and refs.span(4, 2) == (5, 9) and refs.span(1, 0) is None
    assert refs.take_rows() == [], "loaded rows are not put again"
    assert refs.drop_partition(3) == ([ref_key(6, 3)], [6])
