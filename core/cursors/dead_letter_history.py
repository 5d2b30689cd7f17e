"""A cursor's recent dead-lettered records, folded from `DeadLettered`: what InspectCursor shows an operator.

Kept per ``(subscription, partition)`` beside the cursor rather than inside it, so the cursor's hot fold
does not carry it. Bounded: only the last `MAX_SPANS` spans (runs of offsets archived together with one
delivery count) are kept; the `DeadLettered` events in the log keep the whole history. Each span knows
where its copies went: the copies of one event are appended in offset order from its base offset, so a
span's first copy is the base plus the records of the spans before it.

It also keeps the records whose copy could not be written (`DeadLetterDeferred`): which offsets wait, for
which target, why, and when they are offered again, until a `DeadLettered` copies them or a later deferral
replaces them (offsets a consumer settled meanwhile are dropped by the reader, which has the cursor).
Stores written before these were kept (`DeadLetterHistory` version 1) read as having none.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import singledispatch
from typing import Any, ClassVar

from logwright.core.cursors.cursor import cursor_key
from logwright.core.events import Event
from logwright.core.events.cursors import DeadLetterDeferred, DeadLettered, SubscriptionDeleted
from logwright.core.projection import Projection

MAX_SPANS = 100
"""Spans kept per cursor, dead-lettered and deferred each; older ones drop out (the log still has them)."""


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
class DeferredSpan:
    """Offsets ``first..last`` (``delivery_count``, archived for ``reason`` by ``consumer`` at ``time_ms``)
    kept because their copy to ``dead_letter_topic`` failed with ``error``; offered again at ``available_at_ms``."""

    first: int
    last: int
    delivery_count: int
    reason: str
    consumer: str
    time_ms: int
    dead_letter_topic: str
    error: str
    available_at_ms: int


@dataclass(frozen=True, slots=True)
class DeadLetterHistory:
    """The last `MAX_SPANS` dead-lettered spans of one cursor, oldest first, and its deferred spans (whose
    copy failed and was not retried with success yet), in offset order."""

    VERSION: ClassVar[int] = 2
    spans: tuple[DeadLetteredSpan, ...] = ()
    deferred: tuple[DeferredSpan, ...] = ()

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 (before deferred spans were kept): nothing deferred."""
        return [*fields, ()] if version == 1 else fields


def spans_of(event: DeadLettered) -> tuple[DeadLetteredSpan, ...]:
    """The event's ``deliveries`` with the dead-letter offset of each span's first copy."""
    spans: list[DeadLetteredSpan] = []
    offset = event.dead_letter_base_offset
    for first, last, count in event.deliveries:
        spans.append(DeadLetteredSpan(first, last, count, event.reason, event.consumer, event.time_ms,
                                      event.dead_letter_topic, event.dead_letter_partition_id, offset))
        offset += last - first + 1
    return tuple(spans)


def deferred_of(event: DeadLetterDeferred) -> tuple[DeferredSpan, ...]:
    return tuple(DeferredSpan(first, last, count, event.reason, event.consumer, event.time_ms,
                              event.dead_letter_topic, event.error, event.available_at_ms)
                 for first, last, count in event.deliveries)


def _without(deferred: tuple[DeferredSpan, ...], ranges: tuple[tuple[int, int], ...]) -> list[DeferredSpan]:
    """``deferred`` with the offsets of ``ranges`` carved out (a span may split in two)."""
    kept = list(deferred)
    for first, last in ranges:
        carved: list[DeferredSpan] = []
        for span in kept:
            if span.last < first or span.first > last:
                carved.append(span)
                continue
            if span.first < first:
                carved.append(replace(span, last=first - 1))
            if span.last > last:
                carved.append(replace(span, first=last + 1))
        kept = carved
    return kept


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, DeadLettered | DeadLetterDeferred | SubscriptionDeleted):
        return (cursor_key(event.subscription, event.partition_id),)
    return ()


@singledispatch
def _evolve(event: Event, state: DeadLetterHistory | None) -> DeadLetterHistory | None:
    return state


@_evolve.register
def _(event: DeadLettered, state: DeadLetterHistory | None) -> DeadLetterHistory | None:
    kept = (*(state.spans if state else ()), *spans_of(event))
    copied = tuple((first, last) for first, last, _ in event.deliveries)
    return DeadLetterHistory(kept[-MAX_SPANS:], tuple(_without(state.deferred, copied)) if state else ())


@_evolve.register
def _(event: DeadLetterDeferred, state: DeadLetterHistory | None) -> DeadLetterHistory | None:
    """The event's spans replace whatever was deferred at those offsets before; the newest are kept."""
    ranges = tuple((first, last) for first, last, _ in event.deliveries)
    waiting = [*_without(state.deferred if state else (), ranges), *deferred_of(event)]
    newest = sorted(waiting, key=lambda span: span.time_ms)[-MAX_SPANS:]
    return DeadLetterHistory(state.spans if state else (), tuple(sorted(newest, key=lambda span: span.first)))


@_evolve.register
def _(event: SubscriptionDeleted, state: DeadLetterHistory | None) -> DeadLetterHistory | None:
    return None


DEAD_LETTER_HISTORY: Projection[DeadLetterHistory] = Projection(
    name="dead_letter_history", entity_keys=_keys, evolve=lambda state, event, key: _evolve(event, state),
    handles=frozenset({DeadLettered, DeadLetterDeferred, SubscriptionDeleted}),
)


def dead_letter_history(state: object) -> DeadLetterHistory | None:
    """A stored state as a `DeadLetterHistory` (``None`` for anything else: nothing dead-lettered)."""
    return state if isinstance(state, DeadLetterHistory) else None
