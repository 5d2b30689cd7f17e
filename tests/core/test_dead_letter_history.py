"""The dead-letter history fold: spans with their copies' offsets, bounded, gone with the cursor."""

from __future__ import annotations

import msgpack
from logwright.core.cursors.cursor import cursor_key
from logwright.core.cursors.dead_letter_history import (
    DEAD_LETTER_HISTORY,
    MAX_SPANS,
    DeadLetteredSpan,
    DeadLetterHistory,
    DeferredSpan,
)
from logwright.core.events import Event
from logwright.core.events.cursors import DeadLetterDeferred, DeadLettered, SubscriptionDeleted
from logwright.core.projection import fold
from logwright.eventstore.codec import default_registry

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


def _deferred(deliveries: tuple[tuple[int, int, int], ...], time_ms: int,
              error: str = "topic missing") -> DeadLetterDeferred:
    return DeadLetterDeferred("g", 7, "m1", deliveries, "rejected", time_ms, "dlq.x", error, time_ms + 30_000)


def test_deferred_spans_wait_until_copied_and_a_later_deferral_replaces_theirs() -> None:
    first = _deferred(((3, 6, 1),), 1_000)
    history = _history(first)
    assert history == DeadLetterHistory((), (DeferredSpan(3, 6, 1, "rejected", "m1", 1_000, "dlq.x", "topic missing",
                                                          31_000),))
    history = _history(first, _deferred(((5, 5, 2),), 2_000, "refused"), _lettered(((4, 4, 2),), base=0))
    assert history is not None and [span.first for span in history.spans] == [4]
    assert [(s.first, s.last, s.delivery_count, s.error, s.available_at_ms) for s in history.deferred] == [
        (3, 3, 1, "topic missing", 31_000), (5, 5, 2, "refused", 32_000), (6, 6, 1, "topic missing", 31_000)]
    assert _history(first, _lettered(((3, 6, 2),), base=9)).deferred == ()  # type: ignore[union-attr]
    assert _history(first, SubscriptionDeleted("g", 7)) is None


def test_only_the_newest_deferred_spans_are_kept() -> None:
    events = [_deferred(((offset * 2, offset * 2, 1),), offset) for offset in range(MAX_SPANS + 3)]
    history = _history(*events)
    assert history is not None and len(history.deferred) == MAX_SPANS
    assert (history.deferred[0].first, history.deferred[-1].first) == (6, (MAX_SPANS + 2) * 2)


def test_a_history_stored_before_deferred_spans_were_kept_reads_with_none() -> None:
    registry = default_registry()
    span = DeadLetteredSpan(3, 5, 1, "rejected", "m1", 5_000, "dlq.x", 11, 40)
    tag, version, spans, _ = msgpack.unpackb(registry.encode(DeadLetterHistory((span,))), use_list=False)
    assert version == 2
    stored_by_version_1 = msgpack.packb([tag, 1, spans], use_bin_type=True)
    assert registry.decode(stored_by_version_1, "test") == DeadLetterHistory((span,), ())
