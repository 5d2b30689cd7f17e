"""LogwrightPopInspect's partition answer, counted from a table's runs: the same counts and first entries as every
record expanded, without expanding them (up to 20,000 records a partition). No I/O."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.compat.extensions.pop_inspection import MAX_ENTRIES, _partition
from logwright.core.pop.inflight import PopEntry, PopPartition

_entries = st.lists(st.tuples(st.integers(0, 2), st.integers(1, 3), st.booleans()), max_size=60).map(
    lambda drawn: tuple(PopEntry(offset, deliveries, 1, 100 * deadline, visible)
                        for offset, (deliveries, deadline, visible) in enumerate(drawn)))


@settings(max_examples=200)
@given(entries=_entries)
def test_counts_from_runs_are_the_counts_of_every_record(entries: tuple[PopEntry, ...]) -> None:
    state = PopPartition.of_entries("g", 4, "t", 100, 3, entries)
    answer = _partition(2, state)
    assert answer["in_flight"] == sum(1 for e in state.held() if e.deliveries)
    assert answer["revived"] == len(state.revived())
    assert answer["delayed"] == sum(1 for e in state.entries if not e.deliveries)
    assert [entry["offset"] for entry in answer["entries"]] == [e.offset for e in state.entries[:MAX_ENTRIES]]
    assert (answer["partition"], answer["consumed_offset"], answer["next_offset"]) == (
        2, state.consumed_offset(), 100)


def test_a_full_table_is_answered_with_its_first_entries_only() -> None:
    state = PopPartition.of_entries("g", 4, "t", 30_000, 3, (PopEntry(n, 1, 1, 500) for n in range(20_000)))
    answer = _partition(0, state)
    assert answer["in_flight"] == 20_000 and len(answer["entries"]) == MAX_ENTRIES
