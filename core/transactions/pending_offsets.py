"""The offsets a transaction holds until it ends (TxnOffsetCommit), one per group and partition.

Each TxnOffsetCommit partition is one `TransactionalOffsetCommitted` event, folded into the transaction's state.
A tuple of the commits so far was searched and rebuilt for every one of them, so a TxnOffsetCommit of 5,000
partitions folded in 0.68 s, quadratic, on the event loop. A persistent map (`immutables.Map`, a hash array
mapped trie, as `CommittedPartitions` keeps a group's partitions) replaces an entry sharing all but a few nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from immutables import Map
from logwright.core.events import OffsetCommitted

PendingKey = tuple[str, str, int]
"""Group, topic, partition."""


class PendingOffsets:
    """An immutable set of a transaction's commits, the latest per (group, topic, partition), iterated sorted by it
    (the order it is stored and committed in)."""

    __slots__ = ("_map", "_sorted")

    def __init__(self, commits: Iterable[OffsetCommitted] | Map[PendingKey, OffsetCommitted] = ()) -> None:
        self._map: Map[PendingKey, OffsetCommitted] = (
            commits if isinstance(commits, Map)
            else Map(((commit.group, commit.topic, commit.partition), commit) for commit in commits))
        self._sorted: tuple[OffsetCommitted, ...] | None = None

    def with_commit(self, commit: OffsetCommitted) -> PendingOffsets:
        """The set with ``commit`` in place of any earlier commit of its group and partition."""
        return PendingOffsets(self._map.set((commit.group, commit.topic, commit.partition), commit))

    def sorted(self) -> tuple[OffsetCommitted, ...]:
        """Sorted once per set, when first asked (to encode it, or to commit the transaction)."""
        if self._sorted is None:
            self._sorted = tuple(commit for _, commit in sorted(self._map.items(), key=lambda item: item[0]))
        return self._sorted

    def codec_plain(self) -> tuple[OffsetCommitted, ...]:
        """What the codec stores: the commits, sorted (a store written before holds them in commit order)."""
        return self.sorted()

    def __iter__(self) -> Iterator[OffsetCommitted]:
        return iter(self.sorted())

    def __len__(self) -> int:
        return len(self._map)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PendingOffsets) and self._map == other._map

    def __hash__(self) -> int:
        return hash(self._map)

    def __repr__(self) -> str:
        return f"PendingOffsets({self.sorted()!r})"


NO_PENDING_OFFSETS = PendingOffsets()
