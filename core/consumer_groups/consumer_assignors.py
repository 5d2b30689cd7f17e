"""Server-side assignors of KIP-848 consumer groups: ``uniform`` (the default) and ``range``.

An assignor maps every partition of the subscribed topics to exactly one member subscribed to its topic.
``uniform`` is sticky: it keeps each partition with its previous target owner while that stays balanced,
so a membership change moves as few partitions as it can (each move is a revocation round trip).
``range`` gives each member contiguous partitions of every topic, in member id order, as Kafka's
RangeAssignor does (partition p of co-partitioned topics lands on the same member).
"""

from __future__ import annotations

import heapq
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
              partition_counts: Mapping[str, int]) -> dict[TopicPartition, tuple[str, ...]]:
    """Each subscribed partition's possible owners, sorted; the partitions of topics with the same subscribers share
    one tuple (`_LeastLoaded` keeps a heap per tuple)."""
    by_subscribers: dict[tuple[str, ...], tuple[str, ...]] = {}
    eligible: dict[TopicPartition, tuple[str, ...]] = {}
    for topic in sorted({t for m in members for t in m.subscribed_topics if t in partition_counts}):
        subscribers = tuple(sorted(m.member_id for m in members if topic in m.subscribed_topics))
        subscribers = by_subscribers.setdefault(subscribers, subscribers)
        for index in range(partition_counts[topic]):
            eligible[(topic, index)] = subscribers
    return eligible


class _LeastLoaded:
    """Which of a set of candidates owns the fewest partitions (ties: the smallest member id), asked for every
    partition: a heap per distinct candidate set, where a scan of every candidate for every partition cost
    partitions x members (about 3 s for 1,000 members over 10,000 partitions, on each membership change).

    A member's entries go stale as its load moves; each move pushes its new load into every heap it is in, and a
    stale top is dropped when met, so the top is always the exact minimum the scan found."""

    def __init__(self, owned: Mapping[str, set[TopicPartition]]) -> None:
        self._owned = owned
        self._heaps: dict[int, list[tuple[int, str]]] = {}
        """By the ``id`` of the candidates tuple `_eligible` shares among a topic's partitions (hashing a tuple of a
        thousand ids for every partition cost most of an assignment)."""
        self._heaps_of: dict[str, list[list[tuple[int, str]]]] = {}

    def best(self, candidates: tuple[str, ...]) -> str:
        heap = self._heaps.get(id(candidates))
        if heap is None:
            heap = self._heaps[id(candidates)] = [(len(self._owned[member]), member) for member in candidates]
            heapq.heapify(heap)
            for member in candidates:
                self._heaps_of.setdefault(member, []).append(heap)
        while True:
            load, member = heap[0]
            if load == len(self._owned[member]):
                return member
            heapq.heappop(heap)  # stale: the member's current load was pushed when it moved

    def moved(self, member: str) -> None:
        """``member``'s load changed: its current load goes into every heap holding it."""
        entry = (len(self._owned[member]), member)
        for heap in self._heaps_of.get(member, ()):
            heapq.heappush(heap, entry)


class UniformAssignor:
    """Balanced within one partition per member where subscriptions allow, and sticky."""

    name = "uniform"

    def assign(self, members: Sequence[AssignorMember], partition_counts: Mapping[str, int],
               previous: Mapping[str, frozenset[TopicPartition]]) -> Assignment:
        eligible = _eligible(members, partition_counts)
        owned: dict[str, set[TopicPartition]] = {m.member_id: set() for m in members}
        owner: dict[TopicPartition, str] = {}
        distinct = {id(candidates): candidates for candidates in eligible.values()}  # shared tuples, by identity
        subscribed = {key: frozenset(candidates) for key, candidates in distinct.items()}
        for member_id in sorted(previous):
            if member_id not in owned:
                continue
            for partition in sorted(previous[member_id]):
                candidates = eligible.get(partition)
                if candidates is not None and member_id in subscribed[id(candidates)] and partition not in owner:
                    owner[partition] = member_id
                    owned[member_id].add(partition)
        least = _LeastLoaded(owned)
        for partition, candidates in eligible.items():
            if partition not in owner:
                chosen = least.best(candidates)
                owner[partition] = chosen
                owned[chosen].add(partition)
                least.moved(chosen)
        order = sorted(owner, key=lambda p: (p[0], -p[1]))
        moved = True
        while moved:
            moved = False
            for partition in order:
                current = owner[partition]
                best = least.best(eligible[partition])
                if len(owned[current]) > len(owned[best]) + 1:
                    owned[current].discard(partition)
                    owned[best].add(partition)
                    owner[partition] = best
                    least.moved(current)
                    least.moved(best)
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


ASSIGNORS: dict[str, Assignor] = {assignor.name: assignor for assignor in (UniformAssignor(), RangeAssignor())}
"""Every assignor there is, in the order Kafka 4.4 lists the supported ones (its HashMap's: uniform, range)."""
DEFAULT_ASSIGNORS = ("uniform", "range")
"""``group.consumer.assignors``' default: the assignors a member may name (``group.remote.assignor`` /
``server_assignor``), the first of them the default."""
_CLASS_NAMES = {"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
                "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range"}


def assignor_names(value: str) -> tuple[str, ...]:
    """The assignors ``group.consumer.assignors`` enables, by name, the default first: each entry an assignor's name
    or Kafka's class of it; raises `ValueError` for any other."""
    names: list[str] = []
    for entry in (part.strip() for part in value.split(",")):
        if not entry:
            continue
        name = _CLASS_NAMES.get(entry, entry)
        if name not in ASSIGNORS:
            raise ValueError(f"Invalid value {entry} for configuration group.consumer.assignors: Class cannot be found")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError("Configuration 'group.consumer.assignors' must not be empty.")
    return tuple(names)


def supported_listing(enabled: Sequence[str]) -> str:
    """The enabled assignors as Kafka 4.4's refusal lists them: in its HashMap's order, not the config's."""
    return ", ".join(name for name in ASSIGNORS if name in enabled)
