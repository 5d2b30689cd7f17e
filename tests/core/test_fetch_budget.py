"""ShareFetch limits as Kafka 4.4 applies them: bytes in whole batches, batch completion, AcquiredRecords groups."""

from __future__ import annotations

from logwright.core.log.fetch_budget import BatchSpan, FetchBudget, completing_batch, grouped, within_bytes
from logwright.core.rangeset import RangeSet

BATCHES = [BatchSpan(5 * i, 5 * i + 4, 5100) for i in range(6)]  # offsets 0..29 in batches of five


def test_the_first_batch_of_a_response_goes_even_over_max_bytes() -> None:
    chosen, kept = within_bytes(RangeSet.from_ranges([(0, 29)]), BATCHES, FetchBudget(500, 1))
    assert chosen == RangeSet.from_ranges([(0, 4)]) and kept == BATCHES[:1]


def test_whole_batches_are_taken_while_they_fit() -> None:
    assert within_bytes(RangeSet.from_ranges([(0, 29)]), BATCHES, FetchBudget(500, 13_000))[0] == \
        RangeSet.from_ranges([(0, 9)])
    started = FetchBudget(500, 5_000, started=True)  # another partition already filled most of the response
    assert within_bytes(RangeSet.from_ranges([(0, 29)]), BATCHES, started) == (RangeSet(), [])


def test_a_choice_that_stops_inside_a_batch_is_completed_in_batch_optimized_mode() -> None:
    assert completing_batch(RangeSet.from_ranges([(0, 2)]), BATCHES) == BATCHES[0]
    assert completing_batch(RangeSet.from_ranges([(0, 4)]), BATCHES) is None
    assert completing_batch(RangeSet(), BATCHES) is None


def test_acquired_records_are_grouped_by_whole_batches_of_batch_size_records() -> None:
    taken = ((0, 29, 1),)
    assert grouped(taken, BATCHES, 2) == tuple((5 * i, 5 * i + 4, 1) for i in range(6))
    assert grouped(taken, BATCHES, 7) == ((0, 9, 1), (10, 19, 1), (20, 29, 1))
    assert grouped(taken, BATCHES, 500) == taken and grouped(taken, BATCHES, 0) == taken
    assert grouped(((3, 6, 2), (7, 12, 1)), BATCHES, 5) == ((3, 4, 2), (5, 6, 2), (7, 9, 1), (10, 12, 1))


def test_the_budget_is_spent_across_partitions() -> None:
    budget = FetchBudget(10, 6_000)
    assert not budget.exhausted
    budget.spend(5, 5_100)
    assert budget.started and not budget.exhausted
    budget.spend(5, 5_100)
    assert budget.exhausted
