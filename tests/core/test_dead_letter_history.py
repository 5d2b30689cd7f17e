"""The dead-letter history fold: spans with their copies' offsets, bounded, gone with the cursor."""

from __future__ import annotations

from logwright.core.cursors.cursor import cursor_key
from logwright.core.cursors.dead_letter_history import (
    DEAD_LETTER_HISTORY,
    MAX_SPANS,
    DeadLetteredSpan,
    DeadLetterHistory,
)
from logwright.core.events import Event
from logwright.core.events.cursors import DeadLettered, SubscriptionDeleted
from logwright.core.projection import fold

KEY = cursor_key("g", 7)


def _lettered(deliveries: tuple[tuple[int, int, int], ...], base: int, reason: str = "rejected") -> DeadLettered:
    return DeadLettered("g", 7, "m1", deliveries, reason, 5_000, "dlq.x", 11, base)


def _history(*events: Event) -> DeadLetterHistory | None:
    state = fold(DEAD_LETTER_HISTORY, events).get(KEY)
    assert state is None or isinstance(state, DeadLetterHistory)
    return state


def test_each_span_knows_the_offset_of_its_first_copy() -> None:
    history = _history(_lettered(((3, 5, 1), (6, 6, 2), (9, 10, 1)), base=40))
    assert history == DeadLetterHistory((
        DeadLetteredSpan(3, 5, 1, "rejected", "m1", 5_000, "dlq.x", 11, 40),
        DeadLetteredSpan(6, 6, 2, "rejected", "m1", 5_000, "dlq.x", 11, 43),
        DeadLetteredSpan(9, 10, 1, "rejected", "m1", 5_000, "dlq.x", 11, 44),
    ))


def test_only_the_last_spans_are_kept_and_the_cursor_deletion_clears_them() -> None:
    events = [_lettered(((offset, offset, 1),), base=offset) for offset in range(MAX_SPANS + 5)]
    history = _history(*events)
    assert history is not None and len(history.spans) == MAX_SPANS
    assert (history.spans[0].first, history.spans[-1].first) == (5, MAX_SPANS + 4)
    assert _history(*events, SubscriptionDeleted("g", 7)) is None
    assert fold(DEAD_LETTER_HISTORY, [SubscriptionDeleted("g", 8), *events]).keys() == {KEY}
