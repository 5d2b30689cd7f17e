"""The delayed view against a model that rescans every row at every query (what it did before it kept each
partition's held offsets as entries come due): appends above and below, drops, queries with the clock moving
forward and back, plain and detailed."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.core.events.log import DelayedRecordsDropped
from logwright.core.log.delayed_delivery import LEGACY_ROW, DelayedIndex, index_events, row_key
from logwright.core.log.delayed_view import DelayedView, HeldSpan
from logwright.core.rangeset import RangeSet

PARTITION = 7


def model_held(rows: dict[int, tuple[tuple[int, int], ...]], first: int, last: int, now: int,
               detailed: bool) -> tuple[RangeSet, int | None, tuple[HeldSpan, ...]]:
    pending = sorted(entry for entries in rows.values() for entry in entries if entry[1] > now)
    inside = [entry for entry in pending if first <= entry[0] <= last]
    offsets = RangeSet.of(offset for offset, _ in inside)
    if detailed:
        spans: list[HeldSpan] = []
        for offset, at in inside:
            if spans and spans[-1].last == offset - 1 and spans[-1].until_ms == at:
                spans[-1] = HeldSpan(spans[-1].first, offset, at)
            else:
                spans.append(HeldSpan(offset, offset, at))
        return offsets, min((at for _, at in inside), default=None), tuple(spans)
    return offsets, min((at for _, at in pending), default=None) if offsets else None, ()


@st.composite
def steps(draw: Any) -> list[tuple[Any, ...]]:
    """Appends of blocks of 8 offsets (each block once, in any order), drops, queries and clock moves."""
    blocks = draw(st.permutations(range(12)))
    made: list[tuple[Any, ...]] = []
    for _ in range(draw(st.integers(1, 40))):
        kind = draw(st.sampled_from(["append", "append", "drop", "query", "query", "detailed", "tick", "back",
                                     "reload"]))
        if kind == "append" and blocks:
            base = blocks.pop() * 8
            offsets = sorted(draw(st.sets(st.integers(base, base + 7), min_size=1, max_size=8)))
            rising = draw(st.booleans())
            dues = sorted(draw(st.lists(st.integers(0, 200), min_size=len(offsets), max_size=len(offsets))))
            if not rising:
                dues = draw(st.permutations(dues))
            made.append(("append", tuple(zip(offsets, dues, strict=True))))
        elif kind == "drop":
            made.append(("drop", draw(st.integers(0, 11)) * 8))
        elif kind in ("query", "detailed"):
            first = draw(st.integers(-2, 100))
            made.append((kind, first, draw(st.integers(first - 1, 100))))
        elif kind == "tick":
            made.append(("tick", draw(st.integers(0, 60))))
        elif kind == "back":
            made.append(("back", draw(st.integers(0, 60))))
        elif kind == "reload":
            made.append(("reload",))
    return made


@settings(max_examples=500)
@given(steps(), st.booleans())
def test_the_view_answers_as_a_rescan_of_every_row_would(plan: list[tuple[Any, ...]], legacy: bool) -> None:
    rows: dict[int, tuple[tuple[int, int], ...]] = {}
    stored: dict[str, object] = {}
    if legacy:  # a store written before per-append rows: one row for the partition, offsets above the others
        rows[LEGACY_ROW] = ((200, 90), (201, 20), (205, 150))
        stored[row_key(PARTITION, LEGACY_ROW)] = DelayedIndex(PARTITION, rows[LEGACY_ROW])
    view = DelayedView.of(stored)
    now = 0
    for step in plan:
        kind = step[0]
        if kind == "append":
            (event,) = index_events(PARTITION, now, step[1])
            view.note(event)
            rows[step[1][0][0]] = step[1]
            stored[row_key(PARTITION, step[1][0][0])] = DelayedIndex(PARTITION, step[1])
        elif kind == "drop":
            starts = [row for row in rows if row != LEGACY_ROW and step[1] <= row < step[1] + 8]
            if starts:
                view.note(DelayedRecordsDropped(PARTITION, tuple(starts)))
                for row in starts:
                    del rows[row]
                    del stored[row_key(PARTITION, row)]
        elif kind == "tick":
            now += step[1]
        elif kind == "back":
            now = max(0, now - step[1])
        elif kind == "reload":  # the store reloaded: the view built again from the rows (their keys in text order)
            view = DelayedView.of(stored)
        else:
            first, last = step[1], step[2]
            detailed = kind == "detailed"
            assert view.held(PARTITION, first, last, now, detailed) == model_held(rows, first, last, now, detailed), \
                (kind, first, last, now)
