"""The cleaner's checkpoint per partition (projection ``compaction``), folded from `PartitionCompacted`.

Kafka keeps ``cleaner-offset-checkpoint`` files; here the last slice of a pass carries the pass's end and the
earliest delete horizon it left, and this fold keeps them, written in that slice's WriteBatch. A topic's
deletion forgets its partitions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from logwright.core.events import Event, TopicDeleted
from logwright.core.events.compaction import NOT_RECORDED, PartitionCompacted
from logwright.core.projection import Projection


@dataclass(frozen=True, slots=True)
class CleanerCheckpoint:
    """Where the last pass over a partition ended, the earliest delete horizon it left (-1: none), and the
    largest timestamp it kept below ``cleaned_to`` with the base offset of the first batch holding it (-1, -1:
    none kept; `NOT_RECORDED` for a pass of an older build)."""

    VERSION: ClassVar[int] = 2
    cleaned_to: int
    next_delete_horizon_ms: int = -1
    passes: int = 1
    kept_max_timestamp: int = -1
    kept_max_timestamp_offset: int = -1

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 (before the kept maximum was recorded): not known until the next pass."""
        return [*fields, NOT_RECORDED, NOT_RECORDED] if version == 1 else fields

    @property
    def kept_max_known(self) -> bool:
        return self.kept_max_timestamp_offset != NOT_RECORDED


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
        return CleanerCheckpoint(event.cleaned_to, event.next_delete_horizon_ms, passes, event.kept_max_timestamp,
                                 event.kept_max_timestamp_offset)
    if isinstance(event, TopicDeleted):
        return None
    return state


CLEANER_CHECKPOINTS: Projection[CleanerCheckpoint] = Projection(
    name="compaction", entity_keys=_keys, evolve=_evolve, handles=frozenset({PartitionCompacted, TopicDeleted}),
    removed_by=frozenset({TopicDeleted}),
)
