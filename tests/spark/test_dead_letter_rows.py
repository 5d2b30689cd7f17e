"""Dead-letters, retries and delayed records in Spark's event table: the table is generic by design (common columns
plus every field in a map), so these events get their offsets in ``first_offset``/``last_offset`` from their
spans and entries, and their own fields in the map. Plain Python: no Spark session needed."""

from __future__ import annotations

import json

from logwright.core.events import DelayedRecordsIndexed
from logwright.core.events.cursors import DeadLetterDeferred, DeadLettered, MovedToRetry
from logwright.eventstore.interface import LoggedEvent
from logwright.spark.rows import event_row


def test_a_dead_letter_row_spans_its_offsets_and_keeps_where_the_copies_went() -> None:
    lettered = DeadLettered("billing", 4, "m1", ((3, 5, 2), (9, 9, 3)), "rejected by consumer", 7_000, "dlq.x", 11, 40)
    row = event_row(LoggedEvent(12, 7_000, lettered))
    assert row[3:6] == ("DeadLettered", None, 4) and row[8:11] == ("billing", 3, 9)
    fields = row[11]
    assert json.loads(fields["deliveries"]) == [[3, 5, 2], [9, 9, 3]]
    assert (fields["dead_letter_topic"], fields["dead_letter_partition_id"], fields["dead_letter_base_offset"]) == (
        "dlq.x", "11", "40")


def test_a_deferred_dead_letter_a_retry_move_and_delayed_records_have_their_offsets() -> None:
    deferred = DeadLetterDeferred("billing", 4, "", ((7, 8, 5),), "delivery count limit reached", 1_000, "dlq.x",
                                  "dead-letter topic 'dlq.x' does not exist", 31_000)
    assert event_row(LoggedEvent(1, 1_000, deferred))[9:11] == (7, 8)
    moved = MovedToRetry("billing", 4, "m1", 6, 2, 1_000, 1_000, "orders-billing-RETRY", 12, 0)
    assert event_row(LoggedEvent(2, 1_000, moved))[9:11] == (6, 6)
    delayed = DelayedRecordsIndexed(4, 1_000, ((20, 5_000), (23, 2_000)))
    row = event_row(LoggedEvent(3, 1_000, delayed))
    assert row[5] == 4 and row[9:11] == (20, 23)
