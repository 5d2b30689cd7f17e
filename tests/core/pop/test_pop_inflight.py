"""The in-flight table holds runs of offsets in one state and reads back as the entries a per-offset model
gives whatever events cut the runs; the compact form's shortcuts (acks by range, an append for fresh pops, a
walk along ack ranges) decide exactly what the per-offset paths decide, and the table stored as a head and
pages rewrites only the rows an event names while reading back as the one table."""

from __future__ import annotations

import random
from typing import Any

from logwright.core.events import Event
from logwright.core.events.pop import (
    PAGES_EMPTIED,
    CheckpointAcked,
    CheckpointCreated,
    PopCursorCreated,
    PopDeadLettered,
    PopDelayed,
    PopEntriesDropped,
    PopNacked,
    PopPositionMoved,
    Revived,
)
from logwright.core.pop.inflight import (
    PAGE_OFFSETS,
    PopEntry,
    PopHead,
    PopPartition,
    PopRun,
    page_key,
    pop_key,
    ranges_of,
    table_in,
)
from logwright.core.pop.inflight_fold import POP_INFLIGHT
from logwright.core.pop.pop_commands import current, ranges_current
from logwright.core.pop.receipt_handle import StaleReceiptHandle, UnknownReceiptHandle
from logwright.core.projection import fold


def test_runs_read_back_as_their_entries_with_neighbours_in_one_state_joined() -> None:
    rng = random.Random(14)
    for _ in range(200):
        offsets = sorted(rng.sample(range(60), rng.randint(0, 40)))
        entries = tuple(PopEntry(offset, rng.randint(0, 1), rng.randint(1, 2), 5, rng.random() < 0.3)
                        for offset in offsets)
        table = PopPartition.of_entries("g", 1, "t", 60, 2, entries)
        assert table.entries == entries and table.in_flight() == len(entries)
        assert all(a.last + 1 < b.first or a[2:] != b[2:] for a, b in zip(table.runs, table.runs[1:], strict=False))
        for offset in range(61):
            assert table.entry(offset) == next((e for e in entries if e.offset == offset), None)
    assert PopPartition("g", 1, "t", 9, 1, (PopRun(3, 5, 1, 1, 7),)).entries == tuple(
        PopEntry(offset, 1, 1, 7) for offset in (3, 4, 5))


def test_ranges_of_ascending_offsets() -> None:
    rng = random.Random(15)
    for _ in range(300):
        offsets = sorted(rng.sample(range(3_000), rng.randint(0, 200)))
        if rng.random() < 0.3:
            offsets = list(range(100, 100 + rng.randint(1, 1_500)))
        expected: list[tuple[int, int]] = []
        for offset in offsets:
            if expected and expected[-1][1] + 1 == offset:
                expected[-1] = (expected[-1][0], offset)
            else:
                expected.append((offset, offset))
        assert ranges_of(offsets) == expected


class Rows:
    """The projection's rows folded event by event, with the keys each event rewrote."""

    def __init__(self) -> None:
        self.states: dict[str, Any] = {}
        self.written: list[tuple[str, ...]] = []

    def apply(self, *events: Event) -> PopPartition:
        for event in events:
            keys = POP_INFLIGHT.entity_keys(event)
            self.written.append(keys)
            for key in keys:
                state = POP_INFLIGHT.evolve(self.states.get(key), event, key)
                if state is None:
                    self.states.pop(key, None)
                else:
                    self.states[key] = state
        table = table_in(self.states, "g", 1)
        assert table is not None
        return table


def test_a_compact_ack_and_a_fresh_checkpoint_fold_as_the_search_per_offset_does() -> None:
    """The one-pass fold of many acked handles and the append of a pop of fresh records (compact pops) give
    the table the per-offset fold gives: same entries, stale handles left in place."""
    rng = random.Random(141)
    rows = Rows()
    state = rows.apply(PopCursorCreated("g", 1, "t", 0))
    for epoch in range(1, 9):
        first = state.next_offset
        offsets = tuple(range(first, first + rng.randint(20, 60)))
        state = rows.apply(CheckpointCreated("g", 1, "c", offsets, offsets[-1] + 1, 1_000 * epoch, 60_000, epoch,
                                             False))
        assert state.entries[-len(offsets):] == tuple(PopEntry(o, 1, epoch, 1_000 * epoch + 60_000)
                                                      for o in offsets)
    entries = state.entries
    handles = tuple((entry.offset, entry.epoch if rng.random() < 0.7 else entry.epoch + 1)
                    for entry in entries if rng.random() < 0.6)
    assert len(handles) > 16
    before = dict(rows.states)
    folded = rows.apply(CheckpointAcked("g", 1, "c", handles))
    expected = tuple(entry for entry in entries if (entry.offset, entry.epoch) not in set(handles))
    assert folded.entries == expected and len(expected) < len(entries)
    rows.states = dict(before)
    twice = handles + ((handles[0][0], handles[0][1] + 5),) * 20  # an offset named with two epochs
    assert rows.apply(CheckpointAcked("g", 1, "c", twice)).entries == expected


def test_an_event_rewrites_only_the_rows_of_the_offsets_it_names() -> None:
    """A pop writes the head and the pages of its offsets, an ack only the pages of its handles, however many
    entries the table holds; emptied pages leave the head's list through the pruning event."""
    rows = Rows()
    rows.apply(PopCursorCreated("g", 1, "t", 0))
    for epoch in range(1, 21):  # 20,000 in flight
        first = (epoch - 1) * 1_000
        rows.apply(CheckpointCreated("g", 1, "c", tuple(range(first, first + 1_000)), first + 1_000, 0, 60_000,
                                     epoch))
    assert len(rows.states) == 1 + 20_000 // PAGE_OFFSETS + 1
    table = rows.apply(CheckpointCreated("g", 1, "c", (20_000, 20_001), 20_002, 5, 60_000, 21))
    assert rows.written[-1] == (pop_key("g", 1), page_key("g", 1, 20_000 // PAGE_OFFSETS))
    assert len(table.entries) == 20_002
    table = rows.apply(CheckpointAcked("g", 1, "c", ((300, 1), (301, 1))))
    assert rows.written[-1] == (page_key("g", 1, 1),) and len(table.entries) == 20_000
    table = rows.apply(CheckpointAcked("g", 1, "c", tuple((offset, 1) for offset in range(PAGE_OFFSETS))))
    head = rows.states[pop_key("g", 1)]
    assert isinstance(head, PopHead) and 0 in head.pages and page_key("g", 1, 0) not in rows.states
    assert table.entries[0].offset == PAGE_OFFSETS, "a listed page without a row reads as empty"
    rows.apply(PopEntriesDropped("g", 1, ((0, PAGE_OFFSETS - 1),), PAGES_EMPTIED, 9))
    head = rows.states[pop_key("g", 1)]
    assert isinstance(head, PopHead) and head.pages[0] == 1 and rows.written[-1] == (pop_key("g", 1),
                                                                                    page_key("g", 1, 0))


def test_rows_fold_as_the_one_table_did() -> None:
    """Random pops, acks, nacks, revivals, delays, dead letters and moves: the rows read back as the table a
    plain model of the entries gives, and refolding the events from nothing gives the same rows."""
    rng = random.Random(1401)
    rows = Rows()
    events: list[Event] = [PopCursorCreated("g", 1, "t", 0)]
    table = rows.apply(events[0])
    model: dict[int, PopEntry] = {}
    epoch = 0
    for step in range(400):
        choice = rng.random()
        held = [e for e in model.values() if not e.visible and e.deliveries]
        if choice < 0.35:
            epoch += 1
            fresh = list(range(table.next_offset, table.next_offset + rng.randint(1, 700)))
            again = sorted(e.offset for e in model.values() if e.visible)[:rng.randint(0, 5)]
            offsets = tuple(sorted((*fresh, *again)))
            event: Event = CheckpointCreated("g", 1, "c", offsets, fresh[-1] + 1, step, 1_000, epoch)
            for offset in offsets:
                deliveries = model[offset].deliveries + 1 if offset in model else 1
                model[offset] = PopEntry(offset, deliveries, epoch, step + 1_000)
        elif choice < 0.45 and model:
            # a compact ack: a range under one epoch settles exactly the offsets in it under that epoch
            low = rng.choice(sorted(model))
            high = low + rng.randint(0, 800)
            epochs = sorted({e.epoch for e in model.values() if low <= e.offset <= high})
            ack_epoch = rng.choice(epochs)
            event = CheckpointAcked("g", 1, "c", (), ((low, high, ack_epoch),))
            model = {o: e for o, e in model.items() if not (low <= o <= high and e.epoch == ack_epoch)}
        elif choice < 0.6 and held:
            chosen = rng.sample(held, min(len(held), rng.randint(1, 400)))
            event = CheckpointAcked("g", 1, "c", tuple((e.offset, e.epoch) for e in chosen))
            for entry in chosen:
                del model[entry.offset]
        elif choice < 0.7 and held:
            entry = rng.choice(held)
            epoch += 1
            event = PopNacked("g", 1, "c", entry.offset, entry.epoch, epoch, step + 50)
            model[entry.offset] = entry._replace(epoch=epoch, invisible_until_ms=step + 50)
        elif choice < 0.8 and held:
            chosen = rng.sample(held, min(len(held), 30))
            event = Revived("g", 1, tuple(e.offset for e in chosen), step)
            for entry in chosen:
                model[entry.offset] = entry._replace(visible=True)
        elif choice < 0.85:
            at = table.next_offset + rng.randint(0, 3)
            event = PopDelayed("g", 1, ((at, step + 9),), step)
            model.setdefault(at, PopEntry(at, 0, 0, step + 9))
        elif choice < 0.9 and held:
            entry = rng.choice(held)
            event = PopDeadLettered("g", 1, ((entry.offset, entry.deliveries),), "max", step, "d", 2, 0)
            del model[entry.offset]
        elif choice < 0.95 and model:
            low = rng.choice(sorted(model))
            event = PopEntriesDropped("g", 1, ((low - 100, low + 600),), "reset", step)
            model = {o: e for o, e in model.items() if not low - 100 <= o <= low + 600}
        else:
            event = PopPositionMoved("g", 1, table.next_offset + rng.randint(0, 50), "evicted", step)
        events.append(event)
        table = rows.apply(event)
        assert table.in_flight() == len(model), step
        if step % 4 == 0 or step > 390:  # expanding some 20,000 entries at every step would take seconds
            assert table.entries == tuple(model[offset] for offset in sorted(model)), step
    assert fold(POP_INFLIGHT, events) == rows.states


def test_a_walk_along_ranges_takes_and_refuses_exactly_what_current_does() -> None:
    rng = random.Random(142)
    entries = tuple(PopEntry(offset, rng.randint(0, 2), rng.randint(1, 3), 5_000, rng.random() < 0.2)
                    for offset in sorted(rng.sample(range(300), 150)))
    state = PopPartition.of_entries("g", 1, "t", 300, 3, entries)
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
        assert [(offset, epoch) for first, last, epoch in accepted for offset in range(first, last + 1)
                ] == by_current
        assert [(offset, f"{type(error).__name__}: {error}") for offset, error in refused] == errors


def test_an_ack_logged_before_ranges_existed_reads_back_with_none() -> None:
    """`CheckpointAcked` gained ``ranges`` at the end, with a default: an ack in an older log (pairs only) still
    decodes, and folds as it did."""
    import msgpack
    from logwright.eventstore.codec import default_registry

    old = msgpack.packb([5, CheckpointAcked.TAG, 1, "g", 1, "c", [[3, 1], [4, 1]]], use_bin_type=True)
    _, event = default_registry().decode_event(old, "test")
    assert event == CheckpointAcked("g", 1, "c", ((3, 1), (4, 1)), ())
    rows = Rows()
    rows.apply(PopCursorCreated("g", 1, "t", 0), CheckpointCreated("g", 1, "c", (3, 4, 5), 6, 0, 60_000, 1))
    assert [entry.offset for entry in rows.apply(event).entries] == [5]
