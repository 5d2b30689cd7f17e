"""What removing stored batches does to the store: retention's truncation (`truncate`, as DeleteRecords and the
retention passes ask), a compaction slice's rewrite (`rewrite_batches`), and the rows, range deletes and batch files
a truncation, a topic deletion or an indexed abort changes in the WriteBatch of its event (`_physical_effects`);
then, once that commit is written, the files it left unreachable handed to the drops' thread, and the flush that
keeps range-deleted rows from slowing later seeks.

A mixin of `RocksEventStore`: these run inside its append and commit, on its WriteBatch and staged state. The
methods of the store they call are declared below for the type checker only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from logwright.core.events import Event, LogTruncated, TopicDeleted
from logwright.core.events.compaction import PartitionCompacted
from logwright.core.events.transactions import TransactionMarkerWritten
from logwright.core.log.partition_log import empty_partition, partition_key, truncate
from rocksdict import Rdict, WriteBatch, WriteOptions

from . import keys, shared_refs
from .batch_files import Placement
from .batch_pointers import file_of, is_pointer, is_shared, stored_length
from .interface import Durability, StoredBatch
from .stored_reads import BoundedIterator, StoredReads, batch_last_offset, iterator_items

log = logging.getLogger(__name__)

POINT_DELETES_UP_TO = 64
"""A truncation deletes the batches below its new log start one key each up to this many, in one range delete past
it. Each range delete in the memtable makes the next iterator fragment all of them again: seeks after n of them cost
~0.8n us here (`bench/results/write_path.md`), so DeleteRecords of 5,000 one-batch partitions spent ~1 s seeking and
every read after a retention pass over many partitions paid it too. A point delete costs a seek nothing."""
PHYSICAL_EVENTS: tuple[type[Event], ...] = (TransactionMarkerWritten, LogTruncated, TopicDeleted)
"""The events (and their subclasses) whose append removes or indexes stored rows besides their own
(`_physical_effects`)."""
FLUSHED_AFTER_COVERING = 20_000
"""Stored batches a commit's range deletes may cover, summed since the last flush, before the records and index
families are flushed (in the background: the call takes ~0.2 ms). Until a flush drops them, the covered rows stay in
the memtable, and a `seek_for_prev` (or a step back) from a key they precede walks every one of them: ~0.7 us each
here, so with a deleted 5,000-partition topic before it, the first truncation of a later partition took 3.4 ms per
such topic and grew with each (DeleteRecords' longest stop read 8-48 ms after 0-5 deleted topics); 200,000 covered
rows made one seek 82 ms, 0.06 ms once flushed. A topic deletion always flushes (its partitions' batch counts are
gone by the time it is staged); a truncation counts the batches it range-deletes, so a retention pass does not make
a file per commit."""


class StoredDeletes(StoredReads):
    """Truncation, compaction rewrites and deletions of stored batches (`RocksEventStore` inherits them)."""

    path: str
    durability: Durability
    _db: Rdict
    _cf: dict[str, Any]
    _batch: WriteBatch
    _write_options: WriteOptions
    _states: dict[str, dict[str, Any]]
    _staged_records: list[tuple[int, int, bytes | memoryview, Placement]]
    _staged_partitions: set[int]
    _truncating: dict[int, tuple[int, list[bytes] | None]]
    _pending_tail: list[tuple[int, int, int, bytes | memoryview | None]]
    _files_to_check: list[tuple[int, int]]
    _shared_to_check: list[tuple[int, int]]
    _covered_staged: int
    _covered_unflushed: int
    _aborting: set[int] | None

    if TYPE_CHECKING:  # the store's own, which these call
        def state(self, projection: str, entity: str) -> Any: ...
        def append(self, events: Sequence[Event], batches: Sequence[StoredBatch] = (),
                   index_entries: Sequence[tuple[bytes, bytes]] = ()) -> int: ...
        def commit(self) -> None: ...
        def _put_staged_records(self) -> None: ...

    def _load_shared_refs(self) -> None:
        """The rows naming what each shared batch file holds (`shared_refs`), into the batch files' memory."""
        iterator = self._bounded_iterator("index", shared_refs.END_KEY)
        iterator.seek(shared_refs.FIRST_KEY)
        self._files.load_shared_refs(iterator_items(iterator))

    def truncate(self, partition_id: int, log_start_offset: int, reason: str = "delete-records") -> int | None:
        """Retention by offset: move the log start and delete the whole batches below it, as one event.

        Returns the event's sequence, or ``None`` when the log start does not move. Raises
        `OffsetOutOfRange` beyond the end of the log. A partition without a row is an empty one (the store cannot
        tell it from an unknown one: the catalog can, and the broker asks for its own partitions only), whose log
        start never moves.
        """
        if partition_id in self._staged_partitions:  # the scan below reads committed rows: let it see these
            self.commit()
        state = self.state("partitions", partition_key(partition_id))
        if state is None:
            truncate(empty_partition(partition_id), log_start_offset)  # past its end: OffsetOutOfRange
            return None
        if truncate(state, log_start_offset) is None:
            return None
        target = state.next_offset if log_start_offset == -1 else log_start_offset
        iterator = self._partition_iterator(partition_id)
        first_kept = self._first_batch_to_keep(partition_id, target, iterator)
        removed_batches = removed_bytes = 0
        doomed: list[bytes] = []
        # from the first batch kept by now (point deletes below it are not walked over again)
        iterator.seek(keys.record_key(partition_id,
                                      self._first_batch_to_keep(partition_id, state.log_start_offset, iterator)))
        while iterator.valid() and keys.parse_record_key(key := iterator.key())[1] < first_kept:
            removed_batches += 1
            removed_bytes += stored_length(iterator.value())
            if removed_batches <= POINT_DELETES_UP_TO:
                doomed.append(key)
            iterator.next()
        event = truncate(state, log_start_offset, removed_batches, removed_bytes, reason)
        if event is None:
            return None
        self._truncating[partition_id] = (first_kept, doomed if removed_batches <= POINT_DELETES_UP_TO else None)
        try:
            return self.append([event])
        finally:
            self._truncating.pop(partition_id, None)

    def rewrite_batches(self, event: PartitionCompacted, rewritten: Sequence[StoredBatch],
                        deleted: Sequence[int]) -> int:
        """Stage a compaction slice: ``rewritten`` batches replace the stored ones at their base offsets and the
        batches at ``deleted`` base offsets go, in the WriteBatch of ``event``; returns its sequence.

        What was staged before is committed first (as `truncate` does), so a truncation or topic deletion staged
        earlier in this turn cannot be undone by a rewritten batch put after its range delete; one staged later
        deletes after the rewrite. The partition's cached tail is dropped: it may hold the old bytes.
        """
        self.commit()
        records_cf, stored = self._cf["records"], self._views["records"]
        for base_offset in (*deleted, *(batch.base_offset for batch in rewritten)):
            old = stored.get(keys.record_key(event.partition_id, base_offset))
            if old is not None and is_pointer(old):
                checks = self._shared_to_check if is_shared(old) else self._files_to_check
                checks.append((event.partition_id, file_of(old)))
        for base_offset in deleted:
            self._batch.delete(keys.record_key(event.partition_id, base_offset), records_cf)
        for batch in rewritten:  # kept in RocksDB: a file only ever holds batches at or past its name
            self._staged_records.append((batch.partition_id, batch.base_offset, batch.data, Placement.INLINE))
        self._staged_partitions.add(event.partition_id)
        self._pending_tail.append((event.partition_id, 0, 0, None))
        return self.append([event])

    def _physical_effects(self, event: Event) -> None:
        """Retention and topic deletion remove stored batches in the same WriteBatch as their event, and the aborted
        transactions whose markers they take (`aborted`); an indexed abort adds its row there. Only for
        `PHYSICAL_EVENTS`: the store's append asks nothing of any other."""
        records_cf, index_cf = self._cf["records"], self._cf["index"]
        if isinstance(event, TransactionMarkerWritten):
            if event.indexed_abort:
                self._batch.put(keys.aborted_key(event.partition_id, event.offset),
                                keys.aborted_value(event.producer_id, event.first_offset, event.last_stable_offset),
                                index_cf)
                self._staged_aborts.setdefault(event.partition_id, []).append(
                    (event.offset, event.producer_id, event.first_offset, event.last_stable_offset))
                if self._aborting is not None:  # staged, not committed: a set too large is only a lookup more
                    self._aborting.add(event.partition_id)
            return
        if isinstance(event, LogTruncated | TopicDeleted):
            self._put_staged_records()  # a range delete must follow the batches staged before it
        if isinstance(event, LogTruncated):
            # the keys `truncate` read from committed rows: none of this partition's are staged (it committed those)
            found = self._truncating.pop(event.partition_id, None)
            first_kept, doomed = (
                found if found is not None else (self._first_batch_to_keep(event.partition_id, event.log_start_offset),
                                                 None))
            self._staged_partitions.add(event.partition_id)
            self._pending_tail.append((event.partition_id, 0, 0, None))
            self._batch.delete_range(keys.aborted_key(event.partition_id, 0),  # markers below the new log start
                                     keys.aborted_key(event.partition_id, max(event.log_start_offset, 0)), index_cf)
            state = self._states.get("partitions", {}).get(partition_key(event.partition_id))
            everything = state is not None and first_kept >= state.next_offset
            for key in self._files.plan_drop_below(event.partition_id, first_kept, everything):
                self._batch.delete(key, index_cf)
            if doomed is None:
                self._batch.delete_range(
                    keys.record_key(event.partition_id, 0), keys.record_key(event.partition_id, first_kept), records_cf
                )
                self._covered_staged += max(event.removed_batches, 1)
            else:
                for key in doomed:
                    self._batch.delete(key, records_cf)
        elif isinstance(event, TopicDeleted):
            self._staged_partitions.update(event.partition_ids)
            self._pending_tail.extend((partition_id, 0, 0, None) for partition_id in event.partition_ids)
            for key in self._files.plan_drop_partitions(event.partition_ids):
                self._batch.delete(key, index_cf)
            self._covered_staged += FLUSHED_AFTER_COVERING
            for first, last in _runs(event.partition_ids):
                self._batch.delete_range(keys.record_key(first, 0), keys.record_key(last + 1, 0), records_cf)
                self._batch.delete_range(
                    keys.time_index_key(first, 0), keys.time_index_key(last + 1, 0), index_cf
                )
                self._batch.delete_range(keys.aborted_key(first, 0), keys.aborted_key(last + 1, 0), index_cf)

    def _first_batch_to_keep(self, partition_id: int, log_start_offset: int,
                             iterator: BoundedIterator | None = None) -> int:
        """Base offset of the batch holding ``log_start_offset`` (or the one after, if none holds it); ``iterator``, the
        partition's, is moved."""
        if iterator is None:
            iterator = self._partition_iterator(partition_id)
        iterator.seek_for_prev(keys.record_key(partition_id, log_start_offset))
        if iterator.valid():
            found_partition, base_offset = keys.parse_record_key(iterator.key())
            if found_partition == partition_id:
                return base_offset if batch_last_offset(iterator) >= log_start_offset else log_start_offset
        return log_start_offset

    def _flush_covered_rows(self) -> None:
        """Count what the commit's range deletes covered; past `FLUSHED_AFTER_COVERING`, have RocksDB flush the
        families they were in, which drops the covered rows from what iterators walk."""
        self._covered_unflushed += self._covered_staged
        self._covered_staged = 0
        if self._covered_unflushed < FLUSHED_AFTER_COVERING:
            return
        self._covered_unflushed = 0
        try:
            self._views["records"].flush(False)
            self._views["index"].flush(False)
        except Exception as error:  # written already; only later seeks stay slower until RocksDB flushes on its own
            log.warning("flushing %s after range deletes failed: %s", self.path, error)

    def _drop_dead_files(self) -> None:
        """Delete the batch files the commit just made unreachable: those truncation and topic deletion doomed,
        and those a compaction slice took the last pointer out of. They go on the drops' thread (`FileDrops`), after
        the log is synced there (when commits do not sync it), so a power loss cannot bring back a pointer into a
        deleted file; the sync took 5-35 ms here, and on the loop every connection waited for it."""
        db = self._db
        sync = None if self.durability is Durability.FSYNC else lambda: db.flush_wal(True)
        try:
            if self._shared_to_check:
                self._drop_emptied_shared_refs()
            self._files.drop_planned(sync)  # first: the listings below leave these files out
            checks, self._files_to_check = self._files_to_check, []
            for partition_id, base_offset in dict.fromkeys(checks):
                bases = self._files.file_bases(partition_id)
                later = [base for base in bases if base > base_offset]
                end = later[0] if later else 2**63
                iterator = self._bounded_iterator("records", keys.record_key(partition_id, end))
                iterator.seek(keys.record_key(partition_id, base_offset))
                self._files.doom_if_unreferenced(partition_id, base_offset,
                                                 (value for _, value in iterator_items(iterator)))
            self._files.drop_planned(sync)
        except OSError as error:  # the space comes back at the next open (`drop_orphans`) or truncation
            log.warning("deleting batch files of %s failed: %s", self.path, error)

    def _drop_emptied_shared_refs(self) -> None:
        """The `shared_refs` rows of the (partition, shared file) pairs a compaction slice took the last pointer out
        of, deleted in a WriteBatch of their own (the file goes with the last row)."""
        checks, self._shared_to_check = self._shared_to_check, []
        batch, index_cf = WriteBatch(raw_mode=True), self._cf["index"]
        for partition_id, number in dict.fromkeys(checks):
            span = self._files.shared_refs.span(number, partition_id)
            if span is None:
                continue
            iterator = self._bounded_iterator("records", keys.record_key(partition_id, span[1] + 1))
            iterator.seek(keys.record_key(partition_id, span[0]))
            if not any(is_shared(value) and file_of(value) == number for _, value in iterator_items(iterator)):
                for key in self._files.drop_shared_ref(number, partition_id):
                    batch.delete(key, index_cf)
        if batch.is_empty():
            return
        try:
            self._db.write(batch, self._write_options)
        except Exception as error:  # kept: the rows stay (and the file with them) until a later truncation
            log.warning("deleting shared batch file rows of %s failed: %s", self.path, error)
            self._files.cancel_planned()
            self._load_shared_refs()


def _runs(partition_ids: Iterable[int]) -> list[tuple[int, int]]:
    """The runs of consecutive ids among ``partition_ids``, as (first, last): a topic's partitions are numbered
    together at its creation, so deleting a topic of 5,000 partitions puts two range tombstones, not 10,000 (each
    one a cost to every later read that crosses it)."""
    runs: list[tuple[int, int]] = []
    for partition_id in sorted(partition_ids):
        if runs and runs[-1][1] + 1 == partition_id:
            runs[-1] = (runs[-1][0], partition_id)
        else:
            runs.append((partition_id, partition_id))
    return runs
