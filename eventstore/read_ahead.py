"""Batches a RocksDB read loaded past its byte budget, kept for the read that starts at them.

A consumer reading on asks for ``max_bytes`` from the base offset after the last batch it got. With batches near that
budget (librdkafka's 1 MB batches against its 1 MiB per partition) a read takes one batch and loads the next only to
learn that it does not fit, so every such Fetch read two values from RocksDB and sent one (a 1 MB read: 2.4 ms). The
batch left over is the next read's first. Batches are immutable once committed except where the store drops a
partition's cached tail (truncation, deletion, a compaction rewrite), which drops them here too.
"""

from __future__ import annotations

READ_AHEAD_BYTES = 16 * 1024 * 1024
"""Default budget of the batches kept (all partitions together); the oldest go first."""


class ReadAhead:
    """(partition, base offset) -> a committed batch read but not returned; at most ``max_bytes`` of them."""

    def __init__(self, max_bytes: int = READ_AHEAD_BYTES) -> None:
        self._max_bytes = max_bytes
        self._batches: dict[tuple[int, int], bytes] = {}
        """Oldest first (insertion order): the eviction order."""
        self._bases: dict[int, set[int]] = {}
        """Each partition's keys in `_batches`: dropping a partition (once for each of a deleted topic's) walks its own
        batches, not every partition's."""
        self._bytes = 0

    def take(self, partition_id: int, base_offset: int) -> bytes | None:
        """The batch kept at ``base_offset``, which is forgotten (a consumer reads on past it)."""
        data = self._batches.pop((partition_id, base_offset), None)
        if data is not None:
            self._forget(partition_id, base_offset, data)
        return data

    def keep(self, partition_id: int, base_offset: int, data: bytes) -> None:
        if len(data) > self._max_bytes:
            return
        self.take(partition_id, base_offset)
        while self._batches and self._bytes + len(data) > self._max_bytes:
            (oldest_partition, oldest_base), oldest = _pop_first(self._batches)
            self._forget(oldest_partition, oldest_base, oldest)
        self._batches[(partition_id, base_offset)] = data
        self._bases.setdefault(partition_id, set()).add(base_offset)
        self._bytes += len(data)

    def drop(self, partition_id: int) -> None:
        """Forget the partition's batches: its stored ones changed (truncated, deleted, rewritten)."""
        for base_offset in self._bases.pop(partition_id, ()):
            self._bytes -= len(self._batches.pop((partition_id, base_offset)))

    def clear(self) -> None:
        self._batches.clear()
        self._bases.clear()
        self._bytes = 0

    def _forget(self, partition_id: int, base_offset: int, data: bytes) -> None:
        self._bytes -= len(data)
        bases = self._bases[partition_id]
        bases.discard(base_offset)
        if not bases:
            del self._bases[partition_id]


def _pop_first(batches: dict[tuple[int, int], bytes]) -> tuple[tuple[int, int], bytes]:
    key = next(iter(batches))
    return key, batches.pop(key)
