"""The in-flight table's fold keeps entries in offset order whatever an event changes (`inflight._with`), and
the compact form's shortcuts (one pass for many acks, an append for fresh pops, a walk along ack ranges) decide
exactly what the per-offset paths decide."""

from __future__ import annotations

import random

from logwright.core.events.pop import CheckpointAcked, CheckpointCreated
from logwright.core.pop.inflight import PopEntry, PopPartition, _evolve, _with
from logwright.core.pop.pop_commands import current, ranges_current
from logwright.core.pop.receipt_handle import StaleReceiptHandle, UnknownReceiptHandle


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


def test_a_compact_ack_and_a_fresh_checkpoint_fold_as_the_search_per_offset_does() -> None:
    """The one-pass fold of many acked handles and the append of a pop of fresh records (compact pops) give
    the table the per-offset fold gives: same entries, stale handles left in place."""
    rng = random.Random(141)
    state = PopPartition("g", 1, "t", 0)
    for epoch in range(1, 9):
        first = state.next_offset
        offsets = tuple(range(first, first + rng.randint(20, 60)))
        state = _evolve(CheckpointCreated("g", 1, "c", offsets, offsets[-1] + 1, 1_000 * epoch, 60_000, epoch,
                                          False), state)
        assert state.entries[-len(offsets):] == tuple(PopEntry(o, 1, epoch, 1_000 * epoch + 60_000)
                                                      for o in offsets)
    entries = state.entries
    handles = tuple((entry.offset, entry.epoch if rng.random() < 0.7 else entry.epoch + 1)
                    for entry in entries if rng.random() < 0.6)
    assert len(handles) > 16
    folded = _evolve(CheckpointAcked("g", 1, "c", handles), state)
    expected = tuple(entry for entry in entries if (entry.offset, entry.epoch) not in set(handles))
    assert folded.entries == expected and len(expected) < len(entries)
    twice = handles + ((handles[0][0], handles[0][1] + 5),) * 20  # an offset named with two epochs
    assert _evolve(CheckpointAcked("g", 1, "c", twice), state).entries == expected


def test_a_walk_along_ranges_takes_and_refuses_exactly_what_current_does() -> None:
    rng = random.Random(142)
    entries = tuple(PopEntry(offset, rng.randint(0, 2), rng.randint(1, 3), 5_000, rng.random() < 0.2)
                    for offset in sorted(rng.sample(range(300), 150)))
    state = PopPartition("g", 1, "t", 300, 3, entries)
    for epoch in (1, 2, 3, 4):
        ranges = ((0, 40), (45, 45), (60, 299))
        accepted, refused = ranges_current(state, epoch, ranges)
        by_current: list[tuple[int, int]] = []
        errors: list[tuple[int, str]] = []
        for first, last in ranges:
            for offset in range(first, last + 1):
                try:
                    current(state, offset, epoch, held=False)
                    by_current.append((offset, epoch))
                except (StaleReceiptHandle, UnknownReceiptHandle) as error:
                    errors.append((offset, f"{type(error).__name__}: {error}"))
        assert accepted == by_current
        assert [(offset, f"{type(error).__name__}: {error}") for offset, error in refused] == errors
