"""The event store's read side: record batches for Fetch and scans, the aborted-transaction index, the event log and
stored projection rows, each read from RocksDB (and the batch files its pointers name) without writing anything.

A mixin of `RocksEventStore` rather than an object of its own: every read goes through the store's current views,
tail cache and staged aborts, which a reopen after a failed commit replaces, and callers keep calling the store's own
methods, with no extra call on Fetch's path. The write side (`rocksdb`) keeps what a commit changes; this module
only names the attributes it reads.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any, cast

from rocksdict import Rdict, ReadOptions

from . import keys
from .batch_files import BatchFiles
from .batch_pointers import SHARED, follows, is_pointer, last_offset_delta, locate, stored_length
from .codec import TypeRegistry, event_tag
from .file_ranges import BatchPieces
from .interface import LoggedEvent
from .read_ahead import ReadAhead
from .tail_cache import TailCache, collect_batches

FILE_RANGES_FROM = 16 * 1024
"""A run of file batches this long or longer is sent from the file (`read_batch_pieces`): below it, opening a
range (a dup and an fstat) and a sendfile cost more than reading the bytes. Read, a run's bytes are copied twice (into
the answer's buffer, then into the socket), sent from the file once: a consumer of 1,000 keyed partitions, whose runs
in the shared file are ~40 KB, took 0.47 broker CPU s/GB at 16 KiB against 0.53-0.58 at 64 KiB (session 75)."""

COALESCED_READ_BYTES = 1024 * 1024
"""The most one read of adjacent batches from a batch file takes when the caller gives no budget (scans)."""


class BoundedIterator:
    """A rocksdict iterator together with its ReadOptions.

    rocksdict 0.3.29 does not keep the ReadOptions (and so the upper-bound slice) alive for the
    iterator's lifetime: once the options object is collected, seeks silently find nothing. Holding
    both here is the fix; `tests/eventstore/test_rocksdict_quirks.py` notices when upstream fixes it.
    """

    __slots__ = ("options", "iterator")

    def __init__(self, view: Rdict, upper_bound: bytes) -> None:
        self.options = ReadOptions()
        self.options.set_iterate_upper_bound(upper_bound)
        self.iterator = view.iter(self.options)

    def valid(self) -> bool:
        return bool(self.iterator.valid())

    def seek(self, key: bytes) -> None:
        self.iterator.seek(key)

    def seek_for_prev(self, key: bytes) -> None:
        self.iterator.seek_for_prev(key)

    def next(self) -> None:
        self.iterator.next()

    def key(self) -> bytes:
        return bytes(self.iterator.key())

    def value(self) -> bytes:
        return bytes(self.iterator.value())


def iterator_items(iterator: BoundedIterator) -> Iterator[tuple[bytes, bytes]]:
    while iterator.valid():
        yield iterator.key(), iterator.value()
        iterator.next()


def stored_batches(iterator: BoundedIterator, files: BatchFiles,
                    run_bytes: int = COALESCED_READ_BYTES) -> Iterator[tuple[int, bytes]]:
    """(base offset, batch) from the iterator's position on, read as they are asked for; a batch kept in a file
    (`batch_files`) is read from it, one a reader finds deleted by the primary (truncated) is skipped.

    Batches that follow each other in one file are read with one pread, up to ``run_bytes`` (the caller's budget:
    a Fetch of 16 KB batches read 64 of them a call, one syscall each)."""
    peeked: bytes | None = None  # the value a run looked at and did not take: not read twice
    while iterator.valid():
        partition_id, base_offset = keys.parse_record_key(iterator.key())
        value = iterator.value() if peeked is None else peeked
        peeked = None
        iterator.next()
        if not is_pointer(value):
            yield base_offset, value
            continue
        run = [(base_offset, value)]
        total = stored_length(value)
        while total < run_bytes and iterator.valid():
            following = iterator.value()
            if not follows(run[-1][1], following):
                peeked = following
                break
            run.append((keys.parse_record_key(iterator.key())[1], following))
            total += stored_length(following)
            iterator.next()
        for (base, _), data in zip(run, files.read_run(partition_id, [pointer for _, pointer in run]), strict=True):
            if data is not None:
                yield base, data


def batch_last_offset(iterator: BoundedIterator) -> int:
    """The last offset of the stored batch under the iterator, from its RecordBatch v2 header (or pointer)."""
    return keys.parse_record_key(iterator.key())[1] + last_offset_delta(iterator.value())


class StoredReads:
    """The reads `RocksEventStore` answers from its stored rows (`EventStore`'s read methods, and `check`'s)."""

    _views: dict[str, Rdict]
    _files: BatchFiles
    _tail: TailCache
    _read_ahead: ReadAhead
    _staged_aborts: dict[int, list[tuple[int, int, int, int]]]
    _aborting: set[int] | None
    _types: TypeRegistry
    _committed_sequence: int

    def _bounded_iterator(self, family: str, upper_bound: bytes) -> BoundedIterator:
        return BoundedIterator(self._views[family], upper_bound)

    def _partition_iterator(self, partition_id: int) -> BoundedIterator:
        return self._bounded_iterator("records", keys.record_key(partition_id + 1, 0))

    def read_batches(
        self, partition_id: int, start_offset: int, max_bytes: int, end_offset: int | None = None
    ) -> list[bytes]:
        cached = self._tail.read(partition_id, start_offset, max_bytes, end_offset)
        if cached is not None:
            return cached
        keep = functools.partial(self._read_ahead.keep, partition_id)
        ahead = self._read_ahead.take(partition_id, start_offset)
        if ahead is not None:
            return collect_batches(self._batches_after(partition_id, start_offset, ahead), max_bytes, end_offset, keep)
        iterator = self._iterator_at(partition_id, start_offset)
        return collect_batches(stored_batches(iterator, self._files, max_bytes), max_bytes, end_offset, keep)

    def _iterator_at(self, partition_id: int, start_offset: int) -> BoundedIterator:
        """The partition's records iterator on the batch holding ``start_offset`` (or the first one after it)."""
        iterator = self._partition_iterator(partition_id)
        start_key = keys.record_key(partition_id, start_offset)
        iterator.seek(start_key)
        if iterator.valid() and iterator.key() == start_key:
            # a consumer reading on asks for the base offset of the next batch: no seek_for_prev, which over
            # 1 MB batches made a whole read 9.4 ms instead of 2.3 (median, alternated in one process)
            return iterator
        iterator.seek_for_prev(start_key)
        if not iterator.valid() or keys.parse_record_key(iterator.key())[0] != partition_id:
            iterator.seek(start_key)
        elif batch_last_offset(iterator) < start_offset:
            iterator.next()
        return iterator

    def read_batch_pieces(
        self, partition_id: int, start_offset: int, max_bytes: int, end_offset: int | None = None,
        ranges_from: int = FILE_RANGES_FROM, first_within: int | None = None,
    ) -> BatchPieces:
        """`read_batches` for an answer to a socket: a run of batches adjacent in one batch file, of at least
        ``ranges_from`` bytes, comes as a `FileRange` (sent with sendfile, never read into Python), from the tail
        cache too (it knows where its batches' files hold them); the caller closes the ranges it does not send.

        ``first_within``: no pieces at all when the first batch is longer than this, found out by one lookup where
        it can be (in the tail cache, or the row of a batch starting at ``start_offset``). A Fetch whose budget ran low
        asks every partition after it for what still fits, in Kafka's order, and for most nothing does: an iterator,
        the first run's range or read and its close cost ~12 us a partition, the lookup ~3.5 (a Fetch of 10,000
        partitions whose first 4,772 filled the answer: 243 ms, 215-232 so; session 75)."""
        if first_within is not None:
            first = self._tail.first_stored(partition_id, start_offset)
            if first is None:
                first = self._views["records"].get(keys.record_key(partition_id, start_offset))
            if first is not None and stored_length(first) > first_within:
                return BatchPieces()
        rows: Iterator[tuple[int, bytes, bytes | memoryview | None]] | None
        rows = self._tail.stored(partition_id, start_offset)
        if rows is None:
            rows = self._rows_from(partition_id, start_offset)
        return self._files.pieces(partition_id, rows, max_bytes, end_offset, ranges_from)

    def _rows_from(self, partition_id: int, start_offset: int) -> Iterator[tuple[int, bytes, None]]:
        """(base offset, stored value, ``None``: the bytes of a batch in a file are not read) of the partition's
        batches from the one holding ``start_offset`` on.

        A consumer reading on asks for the base offset of the next batch: that case takes rocksdict's ``items``,
        one native call per row where the iterator's valid/key/value/next were four (the 68 rows of a 1 MB Fetch of
        16 KB batches: 12 us through ``items``, 31 through the iterator). Any other offset is found by
        `_iterator_at`.
        """
        options = ReadOptions()  # held by this frame while ``rows`` lives (see `BoundedIterator`)
        options.set_iterate_upper_bound(keys.record_key(partition_id + 1, 0))
        start_key = keys.record_key(partition_id, start_offset)
        rows = cast(Iterator[tuple[bytes, bytes]],  # raw mode: bytes keys and values
                    self._views["records"].items(from_key=start_key, read_opt=options))
        first = next(rows, None)
        if first is None or first[0] != start_key:
            rows = iterator_items(self._iterator_at(partition_id, start_offset))
        else:
            yield start_offset, first[1], None
        parse_record_key = keys.parse_record_key
        for key, value in rows:
            yield parse_record_key(key)[1], value, None

    def _batches_after(self, partition_id: int, base_offset: int, first: bytes) -> Iterator[tuple[int, bytes]]:
        """``first`` (the batch at ``base_offset``, kept by `ReadAhead`), then the stored batches after it, the
        iterator made only if more are asked for."""
        yield base_offset, first
        iterator = self._partition_iterator(partition_id)
        iterator.seek(keys.record_key(partition_id, base_offset + 1))
        yield from stored_batches(iterator, self._files)

    def seek_index(self, start_key: bytes, upper_bound: bytes) -> tuple[bytes, bytes] | None:
        """The first ``index`` entry at or after ``start_key`` and below ``upper_bound``."""
        iterator = self._bounded_iterator("index", upper_bound)
        iterator.seek(start_key)
        return (iterator.key(), iterator.value()) if iterator.valid() else None

    def aborted(self, partition_id: int, start_offset: int, end_offset: int) -> list[tuple[int, int, int]]:
        """(producer id, first offset, marker offset) of the indexed aborted transactions with records in
        ``start_offset..end_offset - 1``, in the order of their markers, staged ones too (a transaction's records are
        stable once its marker is staged: `_staged_aborts`).

        Kafka's `TransactionIndex.collectAbortedTxns`: from the first marker at ``start_offset`` or later, up to and
        including the first whose last stable offset reaches ``end_offset`` (every transaction that started before
        that had ended when its marker was written, so none past it can overlap the read). Aborts from markers
        written before the index are in the partition's `PartitionTransactions.aborted` instead."""
        found: list[tuple[int, int, int]] = []
        if start_offset >= end_offset or (self._aborting is not None and partition_id not in self._aborting):
            return found
        iterator = self._bounded_iterator("index", keys.aborted_key(partition_id + 1, 0))
        iterator.seek(keys.aborted_key(partition_id, max(start_offset, 0)))
        while iterator.valid():
            producer_id, first_offset, marker_offset, last_stable_offset = keys.parse_aborted(iterator.key(),
                                                                                              iterator.value())
            if first_offset < end_offset:
                found.append((producer_id, first_offset, marker_offset))
            if last_stable_offset >= end_offset:
                return found
            iterator.next()
        for marker_offset, producer_id, first_offset, last_stable_offset in self._staged_aborts.get(partition_id, ()):
            if marker_offset < start_offset:  # staged markers follow every committed one: the rest, in order
                continue
            if first_offset < end_offset:
                found.append((producer_id, first_offset, marker_offset))
            if last_stable_offset >= end_offset:
                break
        return found

    def _load_aborting(self, follows_primary: bool) -> None:
        """Which partitions have indexed aborts (`_aborting`), one seek per such partition: a read_committed Fetch
        looks up every partition it reads in, and a partition no transaction ever aborted in (most of them) needs no
        iterator. ``follows_primary`` (a secondary instance, whose primary indexes aborts it does not see staged):
        ``None``, every lookup goes to the index."""
        if follows_primary:
            self._aborting = None
            return
        aborting: set[int] = set()
        iterator = self._bounded_iterator("index", keys.ABORTED_KIND_END)
        iterator.seek(keys.aborted_key(0, 0))
        while iterator.valid():
            partition_id = keys.parse_aborted_partition(iterator.key())
            aborting.add(partition_id)
            iterator.seek(keys.aborted_key(partition_id + 1, 0))
        self._aborting = aborting

    def aborted_rows(self) -> Iterator[tuple[int, int, int, int, int]]:
        """Every indexed aborted transaction, by partition and marker: (partition id, producer id, first offset,
        marker offset, last stable offset); for `check`."""
        iterator = self._bounded_iterator("index", keys.ABORTED_KIND_END)
        iterator.seek(keys.ABORTED_KIND)
        while iterator.valid():
            key = iterator.key()
            producer_id, first_offset, marker_offset, last_stable_offset = keys.parse_aborted(key, iterator.value())
            yield keys.parse_time_index_key(key)[0], producer_id, first_offset, marker_offset, last_stable_offset
            iterator.next()

    def broken_batch_pointers(self, max_reported: int = 50) -> list[str]:
        """Every stored batch a pointer names that its file does not hold (missing file, or a file ending before
        the batch does), and every batch in a shared file that no `shared_refs` row covers (the file could be
        deleted under it), for `check`: the pointers are read, the batches are not."""
        sizes: dict[tuple[int, int], int | None] = {}
        broken: list[str] = []
        iterator = self._bounded_iterator("records", b"\xff" * 13)
        iterator.seek(b"")
        refs = self._files.shared_refs
        for key, value in iterator_items(iterator):
            if not is_pointer(value):
                continue
            partition_id, base_offset = keys.parse_record_key(key)
            owner, file, position, length = locate(partition_id, value)
            name = f"the shared batch file {file}" if owner == SHARED else f"the batch file {file}"
            if (owner, file) not in sizes:
                sizes[(owner, file)] = self._files.file_size(owner, file)
            size = sizes[(owner, file)]
            if size is None or size < position + length:
                broken.append(f"records/{partition_id}/{base_offset}: {name} "
                              + ("is missing" if size is None else f"ends at {size}, before {position + length}"))
            elif owner == SHARED:
                span = refs.span(file, partition_id)
                if span is None or not span[0] <= base_offset <= span[1]:
                    broken.append(f"records/{partition_id}/{base_offset}: {name} holds it, but no row says so")
        return broken[:max_reported]

    def read_events(self, from_sequence: int = 1, to_sequence: int | None = None,
                    tags: frozenset[int] | None = None) -> Iterator[LoggedEvent]:
        """Committed events in sequence order, ``to_sequence`` inclusive; with ``tags``, only events of those type
        tags (the others are not decoded: `event_tag`)."""
        last = self._committed_sequence if to_sequence is None else min(to_sequence, self._committed_sequence)
        options = ReadOptions()  # held by this frame while ``rows`` lives (see `BoundedIterator`)
        options.set_iterate_upper_bound(keys.event_key(last + 1))
        rows = cast(Iterator[tuple[bytes, bytes]],  # raw mode: bytes keys and values; one native call a row
                    self._views["events"].items(from_key=keys.event_key(max(from_sequence, 1)), read_opt=options))
        for key, value in rows:
            if tags is not None and (tag := event_tag(value)) is not None and tag not in tags:
                continue
            time_ms, event = self._types.decode_event(value, f"column family 'events' key {key.hex()}")
            yield LoggedEvent(keys.parse_event_key(key), time_ms, event)

    def stored_states(self, projection: str | None = None) -> Iterator[tuple[str, str, int, bytes]]:
        """Raw ``state`` rows (projection, entity, covered sequence, encoded state) for `check`.

        With ``projection``, only that projection's rows (a bounded scan: Spark reads one per task).
        """
        rows: Iterable[tuple[Any, Any]]
        if projection is None:
            rows = self._views["state"].items()
        else:
            prefix = keys.state_key(projection, "")
            iterator = self._bounded_iterator("state", prefix[:-1] + b"\x01")
            iterator.seek(prefix)
            rows = iterator_items(iterator)
        for key, value in rows:
            projection_name, entity = keys.parse_state_key(cast(bytes, key))
            yield projection_name, entity, keys.decode_sequence(value), value[8:]
