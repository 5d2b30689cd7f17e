"""Which available records a consumer of a Shared subscription gets first: due redeliveries in due-time order.

`cursor_commands.available` yields the due redeliveries earliest-due first (ties by offset), then records
never delivered. A subscription mode, though, chooses from a `RangeSet` (offsets only) and takes the
lowest. So the order is cut into *runs* whose offsets only go up, in which lowest-offset-first *is* the
due order, and the mode chooses run by run, each time seeing what it already gave the consumer as held
(so a cap on unacknowledged records counts them). Modes that keep key or cumulative order (Key_Shared,
Exclusive, Failover, as Pulsar redelivers them in position order) keep choosing in offset order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from logwright.core.cursors.subscription_mode import DispatchView, SubscriptionMode, first_offsets
from logwright.core.rangeset import RangeSet


def in_due_order(mode: SubscriptionMode) -> bool:
    """Whether ``mode`` hands out due redeliveries in due-time order (it needs neither key nor offset order)."""
    return not mode.uses_key_hashes and not mode.allows_cumulative_ack


def increasing_runs(ordered: Iterable[tuple[int, int]], excluded: RangeSet, enough: int) -> list[RangeSet]:
    """``ordered`` spans (inclusive, in hand-out order) without the ``excluded`` offsets, cut where the offsets
    go down: within each run the lowest offset is the one to hand out first. Stops once the runs hold
    ``enough`` offsets, so a long backlog costs no more than a fetch can take."""
    runs: list[RangeSet] = []
    current: list[tuple[int, int]] = []
    total = 0
    for first, last in ordered:
        if current and first <= current[-1][1]:
            total += _close(runs, current, excluded)
            current = []
            if total >= enough:
                return runs
        current.append((first, last))
    if current:
        _close(runs, current, excluded)
    return runs


def _close(runs: list[RangeSet], spans: list[tuple[int, int]], excluded: RangeSet) -> int:
    """Append the run of ``spans`` without ``excluded`` (if anything is left); how many offsets it holds."""
    run = _without(spans, excluded)
    if run:
        runs.append(run)
    return len(run)


def _without(spans: list[tuple[int, int]], excluded: RangeSet) -> RangeSet:
    run = RangeSet.from_ranges(spans)
    return run.difference(excluded) if excluded else run


def eligible_in_runs(mode: SubscriptionMode, view: DispatchView, consumer_id: str, runs: list[RangeSet],
                     limit: int, window: int) -> RangeSet:
    """What ``mode`` lets ``consumer_id`` acquire, up to ``limit``, taking ``runs`` one after another; each run
    is shown at most ``window`` offsets wide. Stops at the first run the mode gives nothing of (its budget
    is spent, or the partition is not the consumer's)."""
    chosen = RangeSet()
    for run in runs:
        remaining = limit - len(chosen)
        if remaining <= 0:
            break
        shown = first_offsets(run, window)
        if chosen:
            held = view.in_flight.get(consumer_id, RangeSet()).union(chosen)
            view = replace(view, in_flight={**view.in_flight, consumer_id: held})
        given = mode.eligible(view, consumer_id, shown, remaining)
        if not given:
            break
        chosen = chosen.union(given)
    return chosen

