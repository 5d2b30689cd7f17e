"""Server-side assignors of KIP-848 consumer groups: ``uniform`` (the default) and ``range``.

An assignor maps every partition of the subscribed topics to exactly one member subscribed to its topic.
``uniform`` is sticky: it keeps each partition with its previous target owner while that stays balanced,
so a membership change moves as few partitions as it can (each move is a revocation round trip).
``range`` gives each member contiguous partitions of every topic, in member id order, as Kafka's
RangeAssignor does (partition p of co-partitioned topics lands on the same member).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

TopicPartition = tuple[str, int]
Assignment = dict[str, frozenset[TopicPartition]]


@dataclass(frozen=True, slots=True)
class AssignorMember:
    member_id: str
    subscribed_topics: frozenset[str]
    """Names and regex matches resolved to existing topics."""


class Assignor(Protocol):
    name: str

    def assign(self, members: Sequence[AssignorMember], partition_counts: Mapping[str, int],
               previous: Mapping[str, frozenset[TopicPartition]]) -> Assignment:
        """Every partition of a topic some member subscribes to, to one of those members."""
        ...


def _eligible(members: Sequence[AssignorMember],
              partition_counts: Mapping[str, int]) -> dict[TopicPartition, list[str]]:
    eligible: dict[TopicPartition, list[str]] = {}
    for topic in sorted({t for m in members for t in m.subscribed_topics if t in partition_counts}):
        subscribers = sorted(m.member_id for m in members if topic in m.subscribed_topics)
        for index in range(partition_counts[topic]):
            eligible[(topic, index)] = subscribers
    return eligible


class UniformAssignor:
    """Balanced within one partition per member where subscriptions allow, and sticky."""

    name = "uniform"

    def assign(self, members: Sequence[AssignorMember], partition_counts: Mapping[str, int],
               previous: Mapping[str, frozenset[TopicPartition]]) -> Assignment:
        eligible = _eligible(members, partition_counts)
        owned: dict[str, set[TopicPartition]] = {m.member_id: set() for m in members}
        owner: dict[TopicPartition, str] = {}
        for member_id in sorted(previous):
            for partition in sorted(previous[member_id]):
                if member_id in owned and member_id in eligible.get(partition, ()) and partition not in owner:
                    owner[partition] = member_id
                    owned[member_id].add(partition)
        for partition, candidates in eligible.items():
            if partition not in owner:
                chosen = min(candidates, key=lambda m: (len(owned[m]), m))
                owner[partition] = chosen
                owned[chosen].add(partition)
        moved = True
        while moved:
            moved = False
            for partition in sorted(owner, key=lambda p: (p[0], -p[1])):
                current = owner[partition]
                best = min(eligible[partition], key=lambda m: (len(owned[m]), m))
                if len(owned[current]) > len(owned[best]) + 1:
                    owned[current].discard(partition)
                    owned[best].add(partition)
                    owner[partition] = best
                    moved = True
        return {member_id: frozenset(partitions) for member_id, partitions in owned.items()}


class RangeAssignor:
    """Per topic, contiguous ranges over the subscribers sorted by member id; the first ones get one more."""

    name = "range"

    def assign(self, members: Sequence[AssignorMember], partition_counts: Mapping[str, int],
               previous: Mapping[str, frozenset[TopicPartition]]) -> Assignment:
        owned: dict[str, set[TopicPartition]] = {m.member_id: set() for m in members}
        for topic in sorted({t for m in members for t in m.subscribed_topics if t in partition_counts}):
            subscribers = sorted(m.member_id for m in members if topic in m.subscribed_topics)
            count = partition_counts[topic]
            quota, extra = divmod(count, len(subscribers))
            start = 0
            for position, member_id in enumerate(subscribers):
                size = quota + (1 if position < extra else 0)
                owned[member_id].update((topic, index) for index in range(start, start + size))
                start += size
        return {member_id: frozenset(partitions) for member_id, partitions in owned.items()}


DEFAULT_ASSIGNOR_NAME = "uniform"
ASSIGNORS: dict[str, Assignor] = {assignor.name: assignor for assignor in (UniformAssignor(), RangeAssignor())}
"""The assignors a member may name (``group.remote.assignor`` / ``server_assignor``); the first is the default."""
