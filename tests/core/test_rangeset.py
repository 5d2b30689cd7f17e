"""RangeSet against a plain Python set: every operation agrees with the model, invariants always hold."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.core.rangeset import RangeSet

LOW, HIGH = -20, 60
offset = st.integers(LOW, HIGH)
offsets = st.sets(offset, max_size=40)


def interval(draw: Any) -> tuple[int, int]:
    first = draw(offset)
    return first, draw(st.integers(first, min(first + 25, HIGH)))


@st.composite
def intervals(draw: Any) -> tuple[int, int]:
    return interval(draw)


@st.composite
def operations(draw: Any) -> tuple[Any, ...]:
    kind = draw(st.sampled_from(["add", "add-one", "remove", "remove-one", "union", "difference", "below",
                                 "at_or_above", "with_ranges", "without_ranges", "within"]))
    if kind in ("add", "remove"):
        return (kind, *interval(draw))
    if kind in ("with_ranges", "without_ranges"):  # a few ranges in any order, overlapping or touching
        return (kind, draw(st.lists(intervals(), max_size=4)))
    if kind == "within":
        return (kind, draw(st.integers(LOW - 5, HIGH + 5)), draw(st.integers(LOW - 5, HIGH + 5)))
    if kind in ("add-one", "remove-one", "below", "at_or_above"):
        return (kind, draw(st.integers(LOW - 5, HIGH + 5)))
    return (kind, draw(offsets))


def apply(ranges: RangeSet, model: set[int], operation: tuple[Any, ...]) -> tuple[RangeSet, set[int]]:
    kind, *args = operation
    if kind == "add":
        return ranges.add(*args), model | set(range(args[0], args[1] + 1))
    if kind == "add-one":
        return ranges.add(args[0]), model | {args[0]}
    if kind == "remove":
        return ranges.remove(*args), model - set(range(args[0], args[1] + 1))
    if kind == "remove-one":
        return ranges.remove(args[0]), model - {args[0]}
    if kind == "union":
        return ranges.union(RangeSet.of(args[0])), model | args[0]
    if kind == "difference":
        return ranges.difference(RangeSet.of(args[0])), model - args[0]
    if kind == "with_ranges":
        return ranges.with_ranges(args[0]), model.union(*(set(range(first, last + 1)) for first, last in args[0]))
    if kind == "without_ranges":
        taken = (set(range(first, last + 1)) for first, last in args[0])
        return ranges.without_ranges(args[0]), model.difference(*taken)
    if kind == "within":
        return ranges.within(*args), {n for n in model if args[0] <= n <= args[1]}
    if kind == "below":
        return ranges.below(args[0]), {n for n in model if n < args[0]}
    return ranges.at_or_above(args[0]), {n for n in model if n >= args[0]}


def assert_invariants(ranges: RangeSet) -> None:
    for first, last in ranges.ranges:
        assert first <= last, ranges
    for (_, previous_last), (next_first, _) in zip(ranges.ranges, ranges.ranges[1:], strict=False):
        assert next_first > previous_last + 1, f"ranges overlap or touch: {ranges}"


def assert_agrees(ranges: RangeSet, model: set[int]) -> None:
    assert_invariants(ranges)
    assert list(ranges) == sorted(model)
    assert len(ranges) == len(model)
    assert bool(ranges) == bool(model)
    assert ranges.first == (min(model) if model else None)
    assert ranges.last == (max(model) if model else None)
    for candidate in range(LOW - 3, HIGH + 4):
        assert (candidate in ranges) == (candidate in model), candidate
    assert ranges == RangeSet.of(model), "the representation is canonical"


@settings(max_examples=1_000)
@given(st.lists(operations(), max_size=25))
def test_every_operation_agrees_with_a_set_model(steps: list[tuple[Any, ...]]) -> None:
    ranges, model = RangeSet(), set()
    for step in steps:
        ranges, model = apply(ranges, model, step)
        assert_agrees(ranges, model)


@given(offsets, intervals())
def test_missing_is_the_holes_of_a_window(members: set[int], window: tuple[int, int]) -> None:
    first, last = window
    holes = RangeSet.of(members).missing(first, last)
    assert_invariants(holes)
    assert set(holes) == set(range(first, last + 1)) - members


@given(offsets, offset)
def test_missing_of_an_empty_window_is_empty(members: set[int], first: int) -> None:
    assert RangeSet.of(members).missing(first, first - 1) == RangeSet()


@given(offsets, offsets)
def test_union_and_difference_agree_with_sets(left: set[int], right: set[int]) -> None:
    a, b = RangeSet.of(left), RangeSet.of(right)
    assert_agrees(a.union(b), left | right)
    assert_agrees(a.difference(b), left - right)
    assert a.union(b) == b.union(a)


@given(offsets, offset)
def test_below_and_at_or_above_split_the_set(members: set[int], limit: int) -> None:
    ranges = RangeSet.of(members)
    below, above = ranges.below(limit), ranges.at_or_above(limit)
    assert_agrees(below, {n for n in members if n < limit})
    assert_agrees(above, {n for n in members if n >= limit})
    assert below.union(above) == ranges


def shifted(operation: tuple[Any, ...], shift: int) -> tuple[Any, ...]:
    kind, *args = operation
    if kind in ("union", "difference"):
        return (kind, {n + shift for n in args[0]})
    if kind in ("with_ranges", "without_ranges"):
        return (kind, [(first + shift, last + shift) for first, last in args[0]])
    return (kind, *(n + shift for n in args))


@given(st.lists(operations(), max_size=15), st.sampled_from([2**40, 2**62, -(2**62)]))
def test_operations_far_from_zero_behave_like_shifted_small_ones(steps: list[tuple[Any, ...]], shift: int) -> None:
    near, near_model, far, far_model = RangeSet(), set[int](), RangeSet(), set[int]()
    for step in steps:
        near, near_model = apply(near, near_model, step)
        far, far_model = apply(far, far_model, shifted(step, shift))
        assert_invariants(far)
        assert far.ranges == tuple((first + shift, last + shift) for first, last in near.ranges)
        assert set(far) == far_model


def test_extremes_of_the_i64_range() -> None:
    low, high = -(2**63), 2**63 - 1
    ranges = RangeSet().add(low, low + 2).add(high - 2, high)
    assert RangeSet().with_ranges([(high - 2, high), (low, low + 2)]) == ranges
    assert low in ranges and high in ranges and 0 not in ranges
    assert len(ranges) == 6
    assert ranges.below(high) == RangeSet(((low, low + 2), (high - 2, high - 1)))
    assert ranges.at_or_above(low + 1) == RangeSet(((low + 1, low + 2), (high - 2, high)))
    assert ranges.missing(low, low + 4) == RangeSet(((low + 3, low + 4),))


def test_adding_a_range_that_bridges_two_neighbours_merges_all_three() -> None:
    assert RangeSet(((0, 3), (10, 12))).add(4, 9) == RangeSet(((0, 12),))
    assert RangeSet(((0, 3), (5, 12))).add(4) == RangeSet(((0, 12),))


def test_removing_from_the_middle_splits_a_range() -> None:
    assert RangeSet(((0, 10),)).remove(4, 6) == RangeSet(((0, 3), (7, 10)))


def test_non_integers_are_never_members() -> None:
    assert "1" not in RangeSet(((0, 5),))
    assert 1.0 not in RangeSet(((0, 5),))


@pytest.mark.parametrize("ranges", [((3, 2),), ((0, 5), (4, 8)), ((0, 5), (6, 8)), ((5, 8), (0, 2))])
def test_construction_refuses_empty_overlapping_touching_or_unsorted(ranges: tuple[tuple[int, int], ...]) -> None:
    with pytest.raises(ValueError):
        RangeSet(ranges)


def test_adding_an_empty_range_is_refused() -> None:
    with pytest.raises(ValueError, match="empty range"):
        RangeSet().add(5, 4)
