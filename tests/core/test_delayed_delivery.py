"""Delayed delivery: reading the delivery headers, the index rows folded from its events, and the in-memory
view of those rows that answers what is held back and which rows may go."""

from __future__ import annotations

from typing import Any

import pytest
from logwright.core.events import LogTruncated, TopicDeleted
from logwright.core.events.log import DelayedRecordsDropped, DelayedRecordsIndexed
from logwright.core.log.delayed_delivery import (
    DELAYED_RECORDS,
    LEGACY_ROW,
    DelayedIndex,
    deliver_at,
    index_events,
    parse_row_key,
    row_key,
)
from logwright.core.log.delayed_view import DelayedView, HeldSpan
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


def _rows(*events: Any) -> dict[str, Any]:
    return fold(DELAYED_RECORDS, events)


def test_each_append_is_a_row_of_its_own_written_once() -> None:
    first, second = index_events(7, 1000, ((3, 5000), (4, 2000))), index_events(7, 2500, ((9, 3000),))
    assert _rows(*first, *second) == {"7/3": DelayedIndex(7, ((3, 5000), (4, 2000))),
                                      "7/9": DelayedIndex(7, ((9, 3000),))}
    # Appending a row touches that row only: the fold names one key, whatever the index already holds.
    assert DELAYED_RECORDS.entity_keys(second[0]) == ("7/9",)
    assert _rows(*first, *second, DelayedRecordsDropped(7, (3,))) == {"7/9": DelayedIndex(7, ((9, 3000),))}
    assert parse_row_key(row_key(7, 9)) == (7, 9) and parse_row_key(row_key(7, LEGACY_ROW)) == (7, LEGACY_ROW)


def test_a_batch_with_more_entries_than_one_event_holds_gets_several_events() -> None:
    entries = tuple((offset, 9000) for offset in range(100, 107))
    events = index_events(7, 1000, entries, limit=3)
    assert [event.entries for event in events] == [entries[0:3], entries[3:6], entries[6:7]]
    assert all(event.own_row and event.appended_at_ms == 1000 for event in events)
    assert sorted(_rows(*events)) == ["7/100", "7/103", "7/106"]
    assert index_events(7, 1000, ()) == ()
    with pytest.raises(ValueError):
        index_events(7, 1000, entries, limit=0)


def test_entries_logged_before_rows_existed_fold_into_the_legacy_row_as_they_always_did() -> None:
    first = DelayedRecordsIndexed(7, 1000, ((3, 5000), (4, 2000)))  # read from an old log: own_row=False

    def legacy(*events: Any) -> DelayedIndex | None:
        state = _rows(*events).get("7")
        assert state is None or isinstance(state, DelayedIndex)
        return state

    assert legacy(first) == DelayedIndex(7, ((3, 5000), (4, 2000)))
    assert legacy(first, DelayedRecordsIndexed(7, 2500, ((9, 3000),))) == DelayedIndex(7, ((3, 5000), (9, 3000)))
    assert legacy(first, DelayedRecordsIndexed(7, 6000, ((9, 7000),))) == DelayedIndex(7, ((9, 7000),))
    assert legacy(first, LogTruncated(7, 4)) == DelayedIndex(7, ((4, 2000),))
    assert legacy(first, LogTruncated(7, 5)) is None
    assert legacy(first, TopicDeleted("t", b"\0" * 16, (7,))) is None
    assert legacy(first, DelayedRecordsDropped(7, (LEGACY_ROW,))) is None
    # A new row beside it leaves it alone.
    assert legacy(first, *index_events(7, 9000, ((20, 9999),))) == DelayedIndex(7, ((3, 5000), (4, 2000)))


def _view_of(*events: Any) -> tuple[DelayedView, dict[str, Any]]:
    rows = _rows(*events)
    return DelayedView.of(rows), rows


def test_the_view_answers_what_is_held_and_until_when() -> None:
    view, rows = _view_of(*index_events(7, 0, ((3, 5000), (4, 2000), (5, 2000))), *index_events(7, 0, ((9, 5000),)),
                          *index_events(8, 0, ((3, 9000),)))
    assert view.held(7, 0, 100, 1000, detailed=True)[2] == (HeldSpan(3, 3, 5000), HeldSpan(4, 5, 2000),
                                                            HeldSpan(9, 9, 5000))
    assert view.held(7, 0, 100, 1000) == (RangeSet.from_ranges(((3, 5), (9, 9))), 2000, ())
    assert view.held(7, 4, 8, 1000, detailed=True)[2] == (HeldSpan(4, 5, 2000),)
    assert view.held(7, 0, 100, 2000, detailed=True)[2] == (HeldSpan(3, 3, 5000), HeldSpan(9, 9, 5000))
    assert view.held(7, 0, 100, 5000, detailed=True)[2] == ()
    assert view.held(6, 0, 100, 0, detailed=True)[2] == ()


def test_rows_go_once_every_entry_is_due_or_truncated_or_their_topic_deleted() -> None:
    view, rows = _view_of(*index_events(7, 0, ((3, 5000), (4, 2000))), *index_events(7, 0, ((9, 3000),)),
                          *index_events(7, 0, ((12, 1500),)))
    assert view.drop_due(7, 1000, rows) is None
    assert view.drop_due(7, 3000, rows) == DelayedRecordsDropped(7, (9, 12))
    assert view.drop_due(7, 3000, rows) is None, "forgotten once dropped"
    assert view.drop_below(7, 4, rows) is None, "offset 4 of row 3 is still in the log"
    assert view.drop_below(7, 5, rows) == DelayedRecordsDropped(7, (3,))
    view, rows = _view_of(*index_events(7, 0, ((3, 5000),)), *index_events(7, 0, ((9, 3000),)))
    assert view.drop_partition(7, rows) == DelayedRecordsDropped(7, (3, 9))
    assert view.partition_ids() == ()


def test_the_view_drops_only_stored_rows_and_follows_drops_it_is_shown() -> None:
    view, rows = _view_of(*index_events(7, 0, ((3, 5000),)))
    view.note(index_events(7, 0, ((9, 5000),))[0])  # staged, then lost with a failed write: never stored
    assert view.drop_due(7, 6000, rows) == DelayedRecordsDropped(7, (3,)), "no drop of a row that is not stored"
    view, rows = _view_of(*index_events(7, 0, ((3, 5000),)), *index_events(7, 0, ((4, 5000),)))
    view.note(DelayedRecordsDropped(7, (3,)))
    assert view.held(7, 0, 100, 0) == (RangeSet.of([4]), 5000, ())


def test_a_legacy_row_is_viewed_and_dropped_like_the_others() -> None:
    view, rows = _view_of(DelayedRecordsIndexed(7, 0, ((3, 5000), (4, 2000))), *index_events(7, 0, ((9, 3000),)))
    assert view.held(7, 0, 100, 0, detailed=True)[2] == (HeldSpan(3, 3, 5000), HeldSpan(4, 4, 2000),
                                                         HeldSpan(9, 9, 3000))
    assert view.drop_due(7, 4000, rows) == DelayedRecordsDropped(7, (9,))
    assert view.drop_due(7, 5000, rows) == DelayedRecordsDropped(7, (LEGACY_ROW,))
    view, rows = _view_of(DelayedRecordsIndexed(7, 0, ((3, 5000),)))
    assert view.drop_partition(7, rows) is None, "the deletion folds the legacy row itself"
    assert view.drop_below(7, 10, rows) is None, "and so does a truncation"


def test_the_cached_answer_follows_new_rows_and_drops_and_the_clock() -> None:
    view, rows = _view_of(*index_events(7, 0, ((3, 5000),)))
    assert view.held(7, 0, 100, 0) == (RangeSet.of([3]), 5000, ())
    view.note(index_events(7, 100, ((9, 2000), (10, 2000)))[0])  # after: extends the cached ranges
    view.note(index_events(7, 100, ((1, 9000),))[0])  # below: merged into them
    assert view.held(7, 0, 100, 100) == (RangeSet.from_ranges(((1, 1), (3, 3), (9, 10))), 2000, ())
    assert view.held(7, 2, 100, 100) == (RangeSet.from_ranges(((3, 3), (9, 10))), 2000, ())
    assert view.held(7, 0, 100, 2000) == (RangeSet.from_ranges(((1, 1), (3, 3))), 5000, ()), "9 and 10 came due"
    view.note(DelayedRecordsDropped(7, (3,)))  # dropped before its time (a truncation): no longer held
    assert view.held(7, 0, 100, 2000) == (RangeSet.of([1]), 9000, ())
    assert view.held(7, 0, 100, 1000) == (RangeSet.from_ranges(((1, 1), (9, 10))), 2000, ()), "the clock went back"
    assert view.held(7, 5, 8, 1000) == (RangeSet(), None, ())
