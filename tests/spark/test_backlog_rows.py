"""Evictions in Spark's event table: a BacklogEvicted row names the subscription, the partition and the skipped
offsets, with every field in the map (no Spark session needed: the row conversion is plain Python)."""

from __future__ import annotations

from logwright.core.events import BacklogEvicted, EvictedCommitRaised, EvictionPointLifted
from logwright.eventstore.interface import LoggedEvent
from logwright.spark.rows import event_row


def test_an_eviction_is_a_row_with_its_skipped_range() -> None:
    evicted = BacklogEvicted("slow-group", "group", "orders", 7, 0, 2, 2, 180, "backlog quota exceeded")
    row = event_row(LoggedEvent(41, 1_000, evicted))
    assert row[:11] == (41, row[1], 1_000, "BacklogEvicted", "orders", 7, None, None, "slow-group", 0, 1)
    assert row[11]["records"] == "2" and row[11]["bytes"] == "180" and row[11]["reason"] == "backlog quota exceeded"


def test_a_raised_commit_and_a_lifted_point_are_rows_at_the_eviction_point() -> None:
    raised = event_row(LoggedEvent(42, 2_000, EvictedCommitRaised("slow-group", "orders", 7, 1, 2)))
    assert raised[3:11] == ("EvictedCommitRaised", "orders", 7, None, "slow-group", None, 2, 2)
    assert raised[11]["requested_offset"] == "1"
    lifted = event_row(LoggedEvent(43, 3_000, EvictionPointLifted("slow-group", "orders", 7, 2, "committed")))
    assert lifted[3:11] == ("EvictionPointLifted", "orders", 7, None, "slow-group", None, 2, 2)
