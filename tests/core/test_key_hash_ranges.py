"""Key_Shared hash-range ownership: Pulsar's AUTO_SPLIT arithmetic, merges on leave, STICKY declarations."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from logwright.core.cursors.key_hash_ranges import (
    TOP_HASH,
    HashRange,
    KeyHashOwnership,
    OwnedRange,
    auto_split_join,
    auto_split_leave,
    sticky_join,
    sticky_leave,
)
from logwright.core.errors import ConsumerBusy, InvalidRequest


def spans(ownership: KeyHashOwnership) -> dict[str, list[tuple[int, int]]]:
    result: dict[str, list[tuple[int, int]]] = {}
    for owned in ownership.ranges:
        result.setdefault(owned.consumer_id, []).append((owned.start, owned.end))
    return result


def joined(*consumers: str, top: int = TOP_HASH) -> KeyHashOwnership:
    ownership = KeyHashOwnership(top=top)
    for consumer in consumers:
        ownership = auto_split_join(ownership, consumer)
    return ownership


def test_upstream_expectation_for_range_size_64() -> None:
    # HashRangeAutoSplitStickyKeyConsumerSelectorTest: range size 64, consumers added c1..c4.
    assert spans(joined("c1", "c2", "c3", "c4", top=64)) == {
        "c3": [(0, 16)], "c2": [(17, 32)], "c4": [(33, 48)], "c1": [(49, 64)]}


def test_first_consumer_owns_everything_and_the_second_takes_the_lower_half() -> None:
    assert spans(joined("a")) == {"a": [(0, 65535)]}
    assert spans(joined("a", "b")) == {"b": [(0, 32767)], "a": [(32768, 65535)]}


def test_rejoining_consumer_keeps_its_range() -> None:
    ownership = joined("a", "b")
    assert auto_split_join(ownership, "a") == ownership


def test_leaver_merges_into_its_upper_neighbour_or_the_lower_one_at_the_top() -> None:
    ownership = joined("c1", "c2", "c3", "c4", top=64)
    assert spans(auto_split_leave(ownership, "c2")) == {"c3": [(0, 16)], "c4": [(17, 48)], "c1": [(49, 64)]}
    assert spans(auto_split_leave(ownership, "c1")) == {"c3": [(0, 16)], "c2": [(17, 32)], "c4": [(33, 64)]}
    assert spans(auto_split_leave(joined("a"), "a")) == {}
    assert auto_split_leave(ownership, "stranger") == ownership


def test_owner_of_looks_up_every_boundary() -> None:
    ownership = joined("c1", "c2", "c3", "c4", top=64)
    expected = {**dict.fromkeys(range(0, 17), "c3"), **dict.fromkeys(range(17, 33), "c2"),
                **dict.fromkeys(range(33, 49), "c4"), **dict.fromkeys(range(49, 65), "c1")}
    assert {h: ownership.owner_of(h) for h in range(65)} == expected
    assert ownership.owner_of(65) is None


def test_a_range_too_small_to_split_refuses_the_consumer() -> None:
    ownership = joined("a", "b", top=2)
    with pytest.raises(ConsumerBusy, match="no key-hash range is left"):
        auto_split_join(ownership, "c")


def test_sticky_declarations_and_overlap() -> None:
    ownership = sticky_join(KeyHashOwnership(), "c1", (HashRange(0, 32767),))
    ownership = sticky_join(ownership, "c2", (HashRange(32768, 65535),))
    assert all(ownership.owner_of(h) == "c1" for h in (0, 1000, 32767))
    assert ownership.owner_of(32768) == "c2"
    with pytest.raises(ConsumerBusy, match=r"\[30000, 40000\].*overlaps \[0, 32767\] owned by 'c1'"):
        sticky_join(ownership, "c3", (HashRange(30000, 40000),))
    with pytest.raises(InvalidRequest, match="overlapping"):
        sticky_join(KeyHashOwnership(), "c3", (HashRange(0, 10), HashRange(5, 20)))
    with pytest.raises(InvalidRequest, match="within 0..65535"):
        sticky_join(KeyHashOwnership(), "c3", (HashRange(0, 65536),))
    with pytest.raises(InvalidRequest, match="not an inclusive range"):
        sticky_join(KeyHashOwnership(), "c3", (HashRange(9, 3),))
    with pytest.raises(InvalidRequest, match="must declare"):
        sticky_join(KeyHashOwnership(), "c3", ())


def test_sticky_rejoin_replaces_own_ranges_and_leave_unowns_them() -> None:
    ownership = sticky_join(KeyHashOwnership(), "c1", (HashRange(0, 99),))
    ownership = sticky_join(ownership, "c1", (HashRange(50, 149),))
    assert spans(ownership) == {"c1": [(50, 149)]}
    ownership = sticky_join(ownership, "c2", (HashRange(0, 49), HashRange(200, 300)))
    assert ownership.ranges_of("c2") == (HashRange(0, 49), HashRange(200, 300))
    left = sticky_leave(ownership, "c1")
    assert left.owner_of(60) is None and left.owner_of(10) == "c2"


def assert_partition(ownership: KeyHashOwnership) -> None:
    assert ownership.ranges[0].start == 0
    assert ownership.ranges[-1].end == ownership.top
    for lower, upper in zip(ownership.ranges, ownership.ranges[1:], strict=False):
        assert lower.start <= lower.end and upper.start == lower.end + 1
    assert len({r.consumer_id for r in ownership.ranges}) == len(ownership.ranges)


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 11)), max_size=60))
def test_auto_split_is_always_a_partition_of_the_whole_space(steps: list[tuple[bool, int]]) -> None:
    ownership = KeyHashOwnership()
    members: set[str] = set()
    for joining, number in steps:
        consumer = f"c{number}"
        if joining:
            ownership = auto_split_join(ownership, consumer)
            members.add(consumer)
        else:
            ownership = auto_split_leave(ownership, consumer)
            members.discard(consumer)
        assert ownership.owners() == members
        if members:
            assert_partition(ownership)
            assert all(isinstance(r, OwnedRange) for r in ownership.ranges)
        else:
            assert ownership.ranges == ()


@given(st.lists(st.tuples(st.integers(0, 65535), st.integers(0, 2000)), max_size=12))
def test_sticky_never_overlaps(wanted: list[tuple[int, int]]) -> None:
    ownership = KeyHashOwnership()
    for number, (start, width) in enumerate(wanted):
        try:
            ownership = sticky_join(ownership, f"c{number}", (HashRange(start, min(start + width, 65535)),))
        except ConsumerBusy:
            continue
    for lower, upper in zip(ownership.ranges, ownership.ranges[1:], strict=False):
        assert lower.end < upper.start


def _verdict(ownership: KeyHashOwnership, consumer_id: str, declared: tuple[HashRange, ...]) -> str:
    """What a brute-force check of every pair says of a STICKY join: the reference `sticky_join` must agree with."""
    if any(not 0 <= r.start <= r.end <= ownership.top for r in declared):
        return "invalid"
    if any(a.overlaps(b) for i, a in enumerate(declared) for b in declared[i + 1:]):
        return "invalid"
    others = [HashRange(r.start, r.end) for r in ownership.ranges if r.consumer_id != consumer_id]
    return "busy" if any(w.overlaps(o) for w in declared for o in others) else "joined"


_small_ranges = st.lists(st.tuples(st.integers(0, 70), st.integers(0, 12)), max_size=6).map(
    lambda spans: tuple(HashRange(start, start + width) for start, width in spans))


@given(owned=_small_ranges, declared=_small_ranges)
def test_a_sticky_join_refuses_exactly_what_a_check_of_every_pair_refuses(
        owned: tuple[HashRange, ...], declared: tuple[HashRange, ...]) -> None:
    ownership = KeyHashOwnership(top=64)
    for number, wanted in enumerate(owned):  # whatever joins, one consumer a range
        try:
            ownership = sticky_join(ownership, f"o{number}", (wanted,))
        except (InvalidRequest, ConsumerBusy):
            pass
    expected = _verdict(ownership, "o1", declared) if declared else "invalid"
    try:
        joined = sticky_join(ownership, "o1", declared)
    except InvalidRequest:
        assert expected == "invalid"
    except ConsumerBusy:
        assert expected == "busy"
    else:
        assert expected == "joined"
        assert joined.ranges_of("o1") == tuple(sorted(declared, key=lambda r: r.start))
        assert_partition_free_of_overlaps(joined)


def assert_partition_free_of_overlaps(ownership: KeyHashOwnership) -> None:
    ranges = ownership.ranges
    assert all(a.end < b.start for a, b in itertools.pairwise(ranges))


def test_a_sticky_join_of_every_hash_compares_neighbours_not_every_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """65,536 one-hash ranges, declared in reverse: comparing every pair held the event loop for minutes."""
    compared = 0
    overlaps = HashRange.overlaps

    def counted(self: HashRange, other: HashRange) -> bool:
        nonlocal compared
        compared += 1
        return overlaps(self, other)

    monkeypatch.setattr(HashRange, "overlaps", counted)
    declared = tuple(HashRange(h, h) for h in reversed(range(65_536)))
    ownership = sticky_join(KeyHashOwnership(), "c1", declared)
    assert len(ownership.ranges) == 65_536 and ownership.owner_of(40_000) == "c1"
    assert compared < 65_536
