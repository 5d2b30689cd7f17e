"""The offsets a transaction holds until it ends (TxnOffsetCommit), one per group and partition.

Each TxnOffsetCommit partition is one `TransactionalOffsetCommitted` event, folded into the transaction's state.
A tuple of the commits so far was searched and rebuilt for every one of them, so a TxnOffsetCommit of 5,000
partitions folded in 0.68 s, quadratic, on the event loop. A persistent map (`immutables.Map`, a hash array
mapped trie, as `CommittedPartitions` keeps a group's partitions) replaces an entry sharing all but a few nodes.
"""

from __future__ import annotations

from collections.abc import Iterable

from immutables import Map
from logwright.core.events import OffsetCommitted
from logwright.core.persistent_sorted import SortedPersistent

PendingKey = tuple[str, str, int]
"""Group, topic, partition."""


class PendingOffsets(SortedPersistent[PendingKey, OffsetCommitted, OffsetCommitted]):
    """An immutable set of a transaction's commits, the latest per (group, topic, partition), iterated sorted by it
    (the order it is stored and committed in; a store written before holds them in commit order)."""

    __slots__ = ()

    def __init__(self, commits: Iterable[OffsetCommitted] | Map[PendingKey, OffsetCommitted] = ()) -> None:
        super().__init__(commits if isinstance(commits, Map)
                         else Map(((commit.group, commit.topic, commit.partition), commit) for commit in commits))

    def with_commit(self, commit: OffsetCommitted) -> PendingOffsets:
        """The set with ``commit`` in place of any earlier commit of its group and partition."""
        return PendingOffsets(self._map.set((commit.group, commit.topic, commit.partition), commit))

    def ordered(self) -> tuple[OffsetCommitted, ...]:
        return tuple(commit for _, commit in sorted(self._map.items(), key=lambda item: item[0]))


NO_PENDING_OFFSETS = PendingOffsets()
