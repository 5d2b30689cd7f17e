"""A Shared subscription's consumer gets due redeliveries earliest-due first even through its mode, which chooses
from offsets only; modes that keep key or cumulative order keep offset order. Pure: the cursor fold, no broker."""

from __future__ import annotations

from logwright.core.cursors import cursor_commands as commands
from logwright.core.cursors.acquisition_order import eligible_in_runs, in_due_order, increasing_runs
from logwright.core.cursors.cursor import CURSORS, CursorState, cursor_key
from logwright.core.cursors.subscription_mode import (
    MAX_UNACKED_PER_CONSUMER,
    DispatchView,
    Membership,
    ModeConsumer,
    SubscriptionModeBase,
)
from logwright.core.events import Event
from logwright.core.events.cursors import RecordsAcquired, RecordsReleased, SubscriptionCreated
from logwright.core.projection import fold
from logwright.core.rangeset import RangeSet
from logwright.plugins.exclusive import ExclusiveMode
from logwright.plugins.key_shared import KeySharedMode
from logwright.plugins.shared import SharedMode

SUB, PID = "sub", 0


def nacked_state() -> CursorState:
    """Offsets 0..2 nacked with backoffs 3 s, 2 s, 1 s (due in reverse offset order), 3..5 never delivered."""
    log: list[Event] = [SubscriptionCreated(SUB, PID, "t", 0), RecordsAcquired(SUB, PID, "c", ((0, 2),), 60_000)]
    log.extend(RecordsReleased(SUB, PID, "c", ((offset, offset),), 3_000 - 1_000 * offset) for offset in range(3))
    state = fold(CURSORS, log)[cursor_key(SUB, PID)]
    assert isinstance(state, CursorState)
    return state


def choose(mode: SubscriptionModeBase, limit: int, settings: dict[str, str] | None = None,
           excluded: RangeSet | None = None) -> list[int]:
    ordered = list(commands.available(nacked_state(), 0, 6, now_ms=5_000))
    view = DispatchView(Membership(SUB, (ModeConsumer("c"),)), 0, 1, settings=settings or {}, now_ms=5_000)
    return list(eligible_in_runs(mode, view, "c", increasing_runs(ordered, excluded or RangeSet(), 1024), limit, 1024))


def test_runs_cut_where_the_offsets_go_down() -> None:
    ordered = list(commands.available(nacked_state(), 0, 6, now_ms=5_000))
    assert ordered == [(2, 2), (1, 1), (0, 0), (3, 5)]
    assert increasing_runs(ordered, RangeSet(), 1024) == [RangeSet.of([2]), RangeSet.of([1]), RangeSet.of([0, 3, 4, 5])]
    assert increasing_runs(ordered, RangeSet.of([1, 4]), 1024) == [RangeSet.of([2]), RangeSet.of([0, 3, 5])]
    assert increasing_runs(ordered, RangeSet(), 2) == [RangeSet.of([2]), RangeSet.of([1])]


def test_shared_takes_the_earliest_due_first_not_the_lowest_offset() -> None:
    assert choose(SharedMode(), 1) == [2]
    assert sorted(choose(SharedMode(), 2)) == [1, 2]
    assert sorted(choose(SharedMode(), 4)) == [0, 1, 2, 3]
    assert choose(SharedMode(), 1, excluded=RangeSet.of([2])) == [1]


def test_the_cap_on_unacknowledged_records_counts_what_earlier_runs_gave() -> None:
    assert sorted(choose(SharedMode(), 10, {MAX_UNACKED_PER_CONSUMER: "2"})) == [1, 2]


def test_modes_keeping_key_or_cumulative_order_stay_in_offset_order() -> None:
    assert in_due_order(SharedMode()) and in_due_order(SubscriptionModeBase("plain"))
    assert not in_due_order(KeySharedMode()) and not in_due_order(ExclusiveMode())
