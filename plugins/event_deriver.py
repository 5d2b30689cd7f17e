"""Every ``logwright_derive_events`` implementation as one plain loop that asks only those a change concerns.

Each implementation may declare the event types and whether the record batches it derives from (`spec.derives_from`);
one that declares nothing is asked about every change. Which implementations an event type concerns is worked out
once per type, so a change costs a dictionary lookup per event before anything is built: with none concerned, the
broker builds no `StagedChange` at all (an OffsetCommit of one partition spent about 8 us building one and asking
three built-ins that ignore its event). One that derives only from a projection's rows (``while_rows``) is left out
while that projection is empty: the backlog quota's commits, with no eviction point anywhere, still cost every
OffsetCommit a `StagedChange` and a call, 2-4% of a one-partition commit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from typing import TypeVar

from logwright.core.events import Event
from logwright.core.log.index_hooks import StagedChange

from .spec import DerivesFrom

Derive = Callable[[StagedChange], "list[Event] | None"]
_Batch = TypeVar("_Batch")


class EventDeriver:
    """The implementations in the order pluggy calls them, each with what it declared (``None``: everything)."""

    def __init__(self, implementations: Sequence[tuple[Derive, DerivesFrom | None]]) -> None:
        self._functions = tuple(function for function, _ in implementations)
        self._declared = tuple(declared for _, declared in implementations)
        self._batches = self._mask(lambda declared: declared.batches)
        self._while_rows = tuple((1 << index, declared.while_rows) for index, declared in enumerate(self._declared)
                                 if declared is not None and declared.while_rows is not None)
        self._conditional = sum(bit for bit, _ in self._while_rows)
        self._by_type: dict[type[Event], int] = {}
        """Event type -> a bit per implementation it concerns (bit i: ``_functions[i]``)."""

    def _mask(self, concerns: Callable[[DerivesFrom], bool]) -> int:
        return sum(1 << index for index, declared in enumerate(self._declared)
                   if declared is None or concerns(declared))

    def _concerned(self, events: Sequence[Event], batches: bool) -> int:
        mask = self._batches if batches else 0
        by_type = self._by_type
        for event in events:
            kind = type(event)
            bits = by_type.get(kind)
            if bits is None:
                bits = by_type[kind] = self._type_mask(kind)
            mask |= bits
        return mask

    def _type_mask(self, kind: type[Event]) -> int:
        return self._mask(lambda declared: declared.events(kind))

    def derive(self, events: Sequence[Event], batches: Sequence[_Batch],
               view: Callable[[Sequence[Event], Sequence[_Batch]], StagedChange],
               rows: Callable[[str], Sized] | None = None) -> list[Event]:
        """What the implementations concerned derive from ``events`` and ``batches``; ``view`` builds their
        `StagedChange`, only when one is concerned. ``rows`` (a projection's rows, as `StagedChange.rows`) leaves
        out those declared ``while_rows`` while their projection is empty; without it they are asked."""
        mask = self._concerned(events, bool(batches))
        if mask & self._conditional and rows is not None:
            for bit, projection in self._while_rows:
                if mask & bit and not rows(projection):
                    mask &= ~bit
        return self._ask(mask, view(events, batches)) if mask else []

    def __call__(self, staged: StagedChange) -> list[Event]:
        """Ask the implementations ``staged`` concerns (tests, tools; the broker calls `derive`)."""
        return self._ask(self._concerned(staged.events, bool(staged.batches)), staged)

    def _ask(self, mask: int, staged: StagedChange) -> list[Event]:
        derived: list[Event] = []
        for index, function in enumerate(self._functions):
            if mask >> index & 1:
                events = function(staged)
                if events:
                    derived.extend(events)
        return derived
