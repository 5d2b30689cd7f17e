"""The in-flight table's fold keeps entries in offset order whatever an event changes (`inflight._with`)."""

from __future__ import annotations

import random

from logwright.core.pop.inflight import PopEntry, PopPartition, _with


def test_changes_anywhere_keep_the_table_sorted_and_equal_to_a_rebuild() -> None:
    rng = random.Random(14)
    state = PopPartition("g", 1, "t", 0)
    model: dict[int, PopEntry] = {}
    for step in range(300):
        changed: dict[int, PopEntry | None] = {}
        for _ in range(rng.randint(1, 40)):
            offset = rng.randrange(500)
            changed[offset] = None if rng.random() < 0.4 else PopEntry(offset, rng.randint(1, 3), step, step * 10)
        state = _with(state, changed)
        for offset, entry in changed.items():
            if entry is None:
                model.pop(offset, None)
            else:
                model[offset] = entry
        assert state.entries == tuple(model[offset] for offset in sorted(model))
    assert all(type(entry) is PopEntry for entry in PopPartition("g", 1, "t", 0, 0, ((3, 1, 1, 5, False),)).entries)
