"""The in-flight window of a share-partition and the record lock limit (`core.share_groups.record_locks`)."""

from __future__ import annotations

from logwright.core.cursors.cursor import CursorState, Delivery, Redelivery
from logwright.core.rangeset import RangeSet
from logwright.core.share_groups.record_locks import acquisition_ceiling, in_window


def cursor(mark: int = -1, settled: tuple[tuple[int, int], ...] = (), in_flight: tuple[Delivery, ...] = (),
           redeliveries: tuple[Redelivery, ...] = ()) -> CursorState:
    return CursorState("g", "t", 0, mark, RangeSet.from_ranges(settled), in_flight, redeliveries)


def test_a_new_cursor_may_acquire_up_to_the_limit() -> None:
    assert acquisition_ceiling(cursor(), 0, 100) == 99
    assert in_window(cursor(), 0) == 0


def test_acknowledged_holes_count_until_the_start_moves() -> None:
    """Kafka counts the window from its first unfinished record to the last acquired one, holes included."""
    state = cursor(settled=((10, 89),), in_flight=(Delivery(0, 9, "a", 1, 1), Delivery(90, 99, "b", 1, 1)))
    assert in_window(state, 0) == 100
    assert acquisition_ceiling(state, 0, 100) == 99  # nothing new
    moved = cursor(mark=19, settled=((20, 89),), in_flight=(Delivery(90, 99, "b", 1, 1),))
    assert acquisition_ceiling(moved, 0, 100) == 119  # the first 20 acknowledged: 20 new ones


def test_released_records_inside_the_window_stay_acquirable() -> None:
    state = cursor(in_flight=(Delivery(0, 94, "a", 1, 1),), redeliveries=(Redelivery(95, 99, 1, 0, "a"),))
    assert acquisition_ceiling(state, 0, 100) == 99
    assert acquisition_ceiling(state, 0, 50) == 99  # a lowered limit never hides what is already in the window


def test_the_log_start_moves_the_window() -> None:
    assert acquisition_ceiling(cursor(), 500, 100) == 599

