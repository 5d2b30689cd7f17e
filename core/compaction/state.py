"""The cleaner's checkpoint per partition (projection ``compaction``), folded from `PartitionCompacted`.

Kafka keeps ``cleaner-offset-checkpoint`` files; here the last slice of a pass carries the pass's end and the
earliest delete horizon it left, and this fold keeps them, written in that slice's WriteBatch. A topic's
deletion forgets its partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.core.events import Event, TopicDeleted
from logwright.core.events.compaction import PartitionCompacted
from logwright.core.projection import Projection


@dataclass(frozen=True, slots=True)
class CleanerCheckpoint:
    """Where the last pass over a partition ended, and the earliest delete horizon it left (-1: none)."""

    cleaned_to: int
    next_delete_horizon_ms: int = -1
    passes: int = 1


def checkpoint_key(partition_id: int) -> str:
    return str(partition_id)


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, PartitionCompacted):
        return (checkpoint_key(event.partition_id),) if event.cleaned_to >= 0 else ()
    if isinstance(event, TopicDeleted):
        return tuple(checkpoint_key(partition_id) for partition_id in event.partition_ids)
    return ()


def _evolve(state: CleanerCheckpoint | None, event: Event, key: str) -> CleanerCheckpoint | None:
    if isinstance(event, PartitionCompacted):
        passes = state.passes + 1 if state is not None else 1
        return CleanerCheckpoint(event.cleaned_to, event.next_delete_horizon_ms, passes)
    if isinstance(event, TopicDeleted):
        return None
    return state


CLEANER_CHECKPOINTS: Projection[CleanerCheckpoint] = Projection(
    name="compaction", entity_keys=_keys, evolve=_evolve, handles=frozenset({PartitionCompacted, TopicDeleted}),
)
