"""Committed consumer-group offsets: a classic Kafka group is a cursor with cumulative acknowledgement."""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatch

from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted
from logwright.core.projection import Projection


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    commit_time_ms: int = 0


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    """Offsets of one group, keyed by ``(topic, partition)``, kept sorted for stable encoding."""

    offsets: tuple[tuple[str, int, CommittedOffset], ...] = ()

    def get(self, topic: str, partition: int) -> CommittedOffset | None:
        for entry_topic, entry_partition, committed in self.offsets:
            if entry_topic == topic and entry_partition == partition:
                return committed
        return None

    def with_offset(self, topic: str, partition: int, committed: CommittedOffset | None) -> GroupOffsets:
        kept = {(t, p): c for t, p, c in self.offsets}
        if committed is None:
            kept.pop((topic, partition), None)
        else:
            kept[(topic, partition)] = committed
        return GroupOffsets(tuple((t, p, c) for (t, p), c in sorted(kept.items())))


def group_key(group: str) -> str:
    return group


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, OffsetCommitted | OffsetDeleted | GroupDeleted):
        return (group_key(event.group),)
    return ()


@singledispatch
def _evolve(event: Event, state: GroupOffsets | None, key: str) -> GroupOffsets | None:
    return state


@_evolve.register
def _(event: OffsetCommitted, state: GroupOffsets | None, key: str) -> GroupOffsets | None:
    committed = CommittedOffset(event.offset, event.leader_epoch, event.metadata, event.commit_time_ms)
    return (state or GroupOffsets()).with_offset(event.topic, event.partition, committed)


@_evolve.register
def _(event: OffsetDeleted, state: GroupOffsets | None, key: str) -> GroupOffsets | None:
    if state is None:
        return None
    remaining = state.with_offset(event.topic, event.partition, None)
    return remaining if remaining.offsets else None


@_evolve.register
def _(event: GroupDeleted, state: GroupOffsets | None, key: str) -> GroupOffsets | None:
    return None


GROUP_OFFSETS: Projection[GroupOffsets] = Projection(
    name="group_offsets", entity_keys=_keys, evolve=lambda state, event, key: _evolve(event, state, key),
    handles=frozenset({OffsetCommitted, OffsetDeleted, GroupDeleted})
)

