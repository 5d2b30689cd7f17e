"""Projections: state folded from events, one entity at a time.

A projection names the entities an event touches (`entity_keys`) and folds the event into each one
(`evolve`). The event store keeps every entity's latest state in the ``state`` column family, written
in the same WriteBatch as the event, so a projection never lags the log; `logwright check` refolds the
log with these same functions and compares. A state of ``None`` means the entity does not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from logwright.core.events import Event

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Projection(Generic[S]):
    """A pure fold: ``evolve(state, event) -> state`` for each entity ``entity_keys(event)`` names."""

    name: str
    entity_keys: Callable[[Event], tuple[str, ...]]
    evolve: Callable[[S | None, Event, str], S | None]
    handles: frozenset[type[Event]] | None = None
    """The event types this projection folds; ``None`` means it must be asked about every event.

    Declaring them lets the store skip the projection for other events (it runs on every append).
    """
    replaces: tuple[str, ...] = ()
    """Names of earlier projections this one took over from: a store opened for writing deletes their rows (their
    events fold into this one instead), so an upgraded store neither keeps nor warns about them."""
    removed_by: frozenset[type[Event]] = frozenset()
    """Event types that only delete this projection's entities: evolving one into a missing entity gives ``None``.
    The store folds them into the entities it holds only; a topic's deletion names each of its partitions, and four
    projections keyed by partition looked up 5,000 missing rows each (10 ms of one turn)."""
    empty: Callable[[str], S] | None = None
    """The state an entity has without a row, for a projection that stores none for entities in it (a partition
    nothing was appended to). ``check`` and Spark replay take a row equal to it as no row: a store written before
    the projection stopped storing them still holds some. Readers fall back to it; whether such an entity exists
    at all is for another projection to say."""

    def may_fold(self, event_type: type[Event]) -> bool:
        return self.handles is None or any(issubclass(event_type, handled) for handled in self.handles)


def fold(projection: Projection[Any], events: Iterable[Event]) -> dict[str, Any]:
    """Fold events from nothing; entities whose state ends as ``None`` are absent."""
    states: dict[str, Any] = {}
    for event in events:
        for key in projection.entity_keys(event):
            new_state = projection.evolve(states.get(key), event, key)
            if new_state is None:
                states.pop(key, None)
            else:
                states[key] = new_state
    return states


def fold_entity(projection: Projection[Any], entity: str, events: Iterable[Event]) -> Any:
    """One entity's state folded from the events that name it, in log order (Spark replays per entity)."""
    state: Any = None
    for event in events:
        state = projection.evolve(state, event, entity)
    return state
