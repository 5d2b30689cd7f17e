"""A cursor's recent dead-lettered records, folded from `DeadLettered`: what InspectCursor shows an operator.

Kept per ``(subscription, partition)`` beside the cursor rather than inside it, so the cursor's hot fold
does not carry it. Bounded: only the last `MAX_SPANS` spans (runs of offsets archived together with one
delivery count) are kept; the `DeadLettered` events in the log keep the whole history. Each span knows
where its copies went: the copies of one event are appended in offset order from its base offset, so a
span's first copy is the base plus the records of the spans before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch

from logwright.core.cursors.cursor import cursor_key
from logwright.core.events import Event
from logwright.core.events.cursors import DeadLettered, SubscriptionDeleted
from logwright.core.projection import Projection

MAX_SPANS = 100
"""Spans kept per cursor; older ones drop out (the log still has them)."""


@dataclass(frozen=True, slots=True)
class DeadLetteredSpan:
    """Offsets ``first..last`` archived with ``delivery_count`` for ``reason`` at ``time_ms`` (last holder
    ``consumer``, "" after a lock expiry), copied to ``dead_letter_topic`` partition id
    ``dead_letter_partition_id`` from offset ``dead_letter_offset``."""

    first: int
    last: int
    delivery_count: int
    reason: str
    consumer: str
    time_ms: int
    dead_letter_topic: str
    dead_letter_partition_id: int
    dead_letter_offset: int


@dataclass(frozen=True, slots=True)
class DeadLetterHistory:
    """The last `MAX_SPANS` dead-lettered spans of one cursor, oldest first."""

    spans: tuple[DeadLetteredSpan, ...] = ()


def spans_of(event: DeadLettered) -> tuple[DeadLetteredSpan, ...]:
    """The event's ``deliveries`` with the dead-letter offset of each span's first copy."""
    spans: list[DeadLetteredSpan] = []
    offset = event.dead_letter_base_offset
    for first, last, count in event.deliveries:
        spans.append(DeadLetteredSpan(first, last, count, event.reason, event.consumer, event.time_ms,
                                      event.dead_letter_topic, event.dead_letter_partition_id, offset))
        offset += last - first + 1
    return tuple(spans)


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, DeadLettered | SubscriptionDeleted):
        return (cursor_key(event.subscription, event.partition_id),)
    return ()


@singledispatch
def _evolve(event: Event, state: DeadLetterHistory | None) -> DeadLetterHistory | None:
    return state


@_evolve.register
def _(event: DeadLettered, state: DeadLetterHistory | None) -> DeadLetterHistory | None:
    kept = (*(state.spans if state else ()), *spans_of(event))
    return DeadLetterHistory(kept[-MAX_SPANS:])


@_evolve.register
def _(event: SubscriptionDeleted, state: DeadLetterHistory | None) -> DeadLetterHistory | None:
    return None


DEAD_LETTER_HISTORY: Projection[DeadLetterHistory] = Projection(
    name="dead_letter_history", entity_keys=_keys, evolve=lambda state, event, key: _evolve(event, state),
    handles=frozenset({DeadLettered, SubscriptionDeleted}),
)


def dead_letter_history(state: object) -> DeadLetterHistory | None:
    """A stored state as a `DeadLetterHistory` (``None`` for anything else: nothing dead-lettered)."""
    return state if isinstance(state, DeadLetterHistory) else None
