"""What eviction took from each subscription on each partition, folded from `BacklogEvicted`.

Kept as a projection so it survives restarts, `logwright check` refolds it, and InspectCursor can say
how much a subscription lost to its topic's quota without reading the log. The totals outlive a deleted
topic on purpose: the audit trail of what was skipped stays.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.core.events import Event
from logwright.core.events.backlog import BacklogEvicted
from logwright.core.projection import Projection


@dataclass(frozen=True, slots=True)
class EvictionTotals:
    """How often records were evicted from one subscription's partition, how many, and the last move."""

    subscription: str
    kind: str
    partition_id: int
    evictions: int = 0
    records: int = 0
    bytes: int = 0
    last_from_offset: int = -1
    last_to_offset: int = -1
    last_reason: str = ""


def evictions_key(subscription: str, partition_id: int) -> str:
    """Like a cursor's key: partition first."""
    return f"{partition_id}/{subscription}"


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, BacklogEvicted):
        return (evictions_key(event.subscription, event.partition_id),)
    return ()


def _evolve(state: EvictionTotals | None, event: Event, key: str) -> EvictionTotals | None:
    if not isinstance(event, BacklogEvicted):
        return state
    current = state or EvictionTotals(event.subscription, event.kind, event.partition_id)
    return EvictionTotals(current.subscription, current.kind, current.partition_id, current.evictions + 1,
                          current.records + event.records, current.bytes + event.bytes, event.from_offset,
                          event.to_offset, event.reason)


BACKLOG_EVICTIONS: Projection[EvictionTotals] = Projection(
    name="backlog_evictions", entity_keys=_keys, evolve=_evolve, handles=frozenset({BacklogEvicted}),
)
EVICTION_STATE_TAGS = {2150: EvictionTotals}
"""The codec tag of the state type (plugin state tags start at 2000)."""
