"""The newest committed record batches of every partition, in memory, so that Fetch at the tail skips RocksDB.

A consumer that keeps up asks for what was committed a moment ago; opening a RocksDB iterator and
seeking it costs more than the rest of such a Fetch (0.1-0.8 ms, more over range tombstones). The
cache holds, per partition, a contiguous run of batches ending at the newest committed one, within one
byte budget for all partitions (oldest batches leave first), so a read that starts inside that run is
answered from memory exactly as the store would answer it, and any other read goes to RocksDB.
Retention and topic deletion drop a partition's run in the same step as they delete its batches.

A broker keeps a run for every partition appended to, so what a run costs the garbage collector counts: its offsets
are arrays of int64 (not tracked, where lists are) and a run whose last batch was evicted is forgotten, as a dropped
one is. 30,000 one-batch partitions were 150,000 tracked lists and runs, walked by every full collection.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field


@dataclass(slots=True)
class _Run:
    """One partition's cached batches, oldest first; entries before ``first`` are evicted."""

    partition_id: int
    bases: array[int] = field(default_factory=lambda: array("q"))
    lasts: array[int] = field(default_factory=lambda: array("q"))
    batches: list[bytes | memoryview] = field(default_factory=list)
    """A view is of a client's request frame (`record_batch.numbered`): the first `TailCache.read` copies it out."""
    stored: list[bytes] = field(default_factory=list)
    """Each batch as its row holds it: the pointer into its batch file, or the batch itself."""
    first: int = 0

    def batch_bytes(self, index: int) -> bytes:
        """The batch at ``index`` as bytes, a view copied out once (the frame is let go when no run holds it)."""
        batch = self.batches[index]
        if isinstance(batch, memoryview):
            batch = self.batches[index] = batch.tobytes()
        return batch

    def evict_oldest(self) -> int:
        size = len(self.batches[self.first])
        self.batches[self.first] = self.stored[self.first] = b""
        self.first += 1
        if self.first > 64 and self.first * 2 > len(self.bases):
            del self.bases[: self.first], self.lasts[: self.first], self.batches[: self.first]
            del self.stored[: self.first]
            self.first = 0
        return size

    def clear(self) -> int:
        """Evict every batch (the run was dropped); the bytes it held."""
        size = sum(len(batch) for batch in self.batches[self.first:])
        self.bases, self.lasts, self.batches, self.stored, self.first = array("q"), array("q"), [], [], 0
        return size


class TailCache:
    """Not thread-safe: the store's writer (the event loop) adds, reads and drops."""

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self.size_bytes = 0
        self._runs: dict[int, _Run] = {}
        self._order: deque[_Run] = deque()
        """The run of each cached batch, in the order they were added: eviction order. A dropped run is emptied
        and its entries left in place (they evict nothing), so a drop costs its own batches rather than a pass over
        every partition's: deleting a topic of 3,000 partitions took 0.44 s of the event loop that way. They are
        swept out once they outnumber the live entries (`_sweep`)."""
        self._live = 0
        """Cached batches: the entries of `_order` that are not left over from a dropped run."""

    def add(self, partition_id: int, base_offset: int, last_offset: int, batch: bytes | memoryview,
            pointer: bytes | None = None) -> None:
        """Record a batch just committed; it must follow the partition's previous one. ``pointer``: where its batch
        file holds it, if one does."""
        if len(batch) > self.budget_bytes:
            self.drop(partition_id)
            return
        run = self._runs.get(partition_id)
        if run is None:
            run = self._runs[partition_id] = _Run(partition_id)
        elif run.first < len(run.bases) and run.lasts[-1] + 1 != base_offset:
            self.drop(partition_id)
            run = self._runs[partition_id] = _Run(partition_id)
        run.bases.append(base_offset)
        run.lasts.append(last_offset)
        run.batches.append(batch)
        run.stored.append(bytes(batch) if pointer is None else pointer)  # no copy of bytes; a view is never inline
        self._order.append(run)
        self._live += 1
        self.size_bytes += len(batch)
        while self.size_bytes > self.budget_bytes:
            oldest = self._order.popleft()
            if oldest.first < len(oldest.bases):
                self.size_bytes -= oldest.evict_oldest()
                self._live -= 1
                if oldest.first == len(oldest.bases) and self._runs.get(oldest.partition_id) is oldest:
                    del self._runs[oldest.partition_id]  # its last batch: no entry of it is left in the order

    def drop(self, partition_id: int) -> None:
        """Forget a partition's batches (its log was truncated or its topic deleted)."""
        run = self._runs.pop(partition_id, None)
        if run is not None:
            self._live -= len(run.bases) - run.first
            self.size_bytes -= run.clear()
            if len(self._order) > 2 * self._live + 1024:
                self._sweep()

    def _sweep(self) -> None:
        """Take the entries of dropped runs out of the eviction order, keeping the others' order (each live batch has
        exactly one entry: it is added with one, and an eviction takes one with it)."""
        live = {id(run) for run in self._runs.values()}
        self._order = deque(run for run in self._order if id(run) in live)

    def read(self, partition_id: int, start_offset: int, max_bytes: int, end_offset: int | None) -> list[bytes] | None:
        """`RocksEventStore.read_batches` from memory, or ``None`` when ``start_offset`` is before the cached run."""
        found = self._find(partition_id, start_offset)
        if found is None:
            return None
        run, index = found
        return collect_batches(((run.bases[i], run.batch_bytes(i)) for i in range(index, len(run.bases))), max_bytes,
                               end_offset)

    def stored(self, partition_id: int, start_offset: int) -> Iterator[tuple[int, bytes, bytes | memoryview]] | None:
        """(base offset, stored value, batch) of the cached batches from the one holding ``start_offset`` on, the
        stored value of a batch in a file being its pointer (what RocksDB's rows hold, without the seek): a read
        for a socket sends a long run of those with sendfile. Copying a 1 MB answer out of this cache into the
        socket cost the broker 600-800 us of CPU; sending the same batches from the page cache, 280-380.
        ``None`` when ``start_offset`` is before the cached run."""
        found = self._find(partition_id, start_offset)
        if found is None:
            return None
        run, index = found
        bases, stored, batches = run.bases, run.stored, run.batches
        return ((bases[i], stored[i], batches[i]) for i in range(index, len(bases)))

    def first_stored(self, partition_id: int, start_offset: int) -> bytes | None:
        """The stored value (`stored`) of the cached batch a read from ``start_offset`` starts with, or ``None`` when
        ``start_offset`` is before the cached run."""
        found = self._find(partition_id, start_offset)
        if found is None:
            return None
        run, index = found
        return run.stored[index] if index < len(run.bases) else None

    def _find(self, partition_id: int, start_offset: int) -> tuple[_Run, int] | None:
        """The partition's run and the index of its batch holding ``start_offset`` (or the first after it), or
        ``None`` when the run does not reach back to ``start_offset``."""
        run = self._runs.get(partition_id)
        if run is None or run.first == len(run.bases) or start_offset < run.bases[run.first]:
            return None
        index = bisect_right(run.bases, start_offset, run.first) - 1
        if run.lasts[index] < start_offset:
            index += 1
        return run, index


def collect_batches(batches: Iterable[tuple[int, bytes]], max_bytes: int, end_offset: int | None,
                    left_over: Callable[[int, bytes], None] | None = None) -> list[bytes]:
    """What `read_batches` returns from the (base offset, batch) pairs that follow the fetch offset: at least
    one batch, then more while they fit in ``max_bytes``, none based above ``end_offset``. ``left_over`` gets the
    batch that was read but did not fit."""
    chosen: list[bytes] = []
    total = 0
    for base_offset, data in batches:
        if end_offset is not None and base_offset > end_offset:
            break
        if chosen and total + len(data) > max_bytes:
            if left_over is not None:
                left_over(base_offset, data)
            break
        chosen.append(data)
        total += len(data)
        if total >= max_bytes:
            break
    return chosen
