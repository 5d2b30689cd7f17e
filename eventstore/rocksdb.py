"""The RocksDB (rocksdict) event store: one database per data directory, five column families.

One request's effects — record batches, events and the projection states they change — go into one
WriteBatch, so a crash leaves all or none of them and projections never lag the log. Appends are
staged in memory and written by `commit`, once per event-loop turn (group commit); rocksdict holds the
GIL while it writes (`bench/rocksdict_gil.py`), and the RocksDB in its wheel computes the write-ahead
log's CRC32C in software (about 1 ms per MB here), so fewer, larger writes are what keeps the loop
responsive, and a writer thread would not overlap anything. Record batches of 4 KiB and more do not go through it
at all: their bytes are appended to `batch_files` first and the WriteBatch holds a pointer to them.

rocksdict 0.3.29 caveats honoured here: `ReadOptions.set_iterate_lower_bound` sets the upper bound, so
scans start with `seek`/`seek_for_prev` and only `set_iterate_upper_bound` is used; snapshot iteration
ignores the snapshot, so consistent readers use `checkpoint`.

This module opens, recovers, stages (`append`) and reloads; its mixins read (`stored_reads`), remove stored batches
(`stored_deletes`) and write what is staged (`stored_commits`); its errors are `store_errors`.
"""

from __future__ import annotations

import logging
import os
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, cast

from logwright.core import CORE_PROJECTIONS
from logwright.core.clock import Clock
from logwright.core.errors import CorruptState
from logwright.core.events import Event
from logwright.core.projection import Projection
from rocksdict import AccessType, Checkpoint, Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from . import keys
from .batch_files import BatchFiles, Placement
from .batch_pointers import LAST_OFFSET_DELTA
from .clock import SystemClock
from .codec import TypeRegistry, default_registry
from .interface import CommitListener, Durability, LoggedEvent, StoredBatch
from .read_ahead import ReadAhead
from .store_errors import ReadOnlyStore, StoreFailed, StoreLost
from .stored_commits import SealedCommit, StoredCommits
from .stored_deletes import PHYSICAL_EVENTS
from .stored_reads import stored_batches
from .tail_cache import TailCache

log = logging.getLogger(__name__)

TAIL_CACHE_BYTES = 64 * 1024 * 1024
"""Default budget of the in-memory cache of the newest committed batches (all partitions together)."""
WAL_FILES_RECYCLED = 4
"""Write-ahead log files kept for reuse once their memtable is flushed: a write then overwrites blocks the file
already has instead of extending a new file (1 MB commits, `bench/wal_options.py`: p25 1544 -> 1434 us).
RocksDB 9.8 keeps recycling with the point-in-time recovery used here (its records carry the log number, so
a reused file's old tail is never replayed); it refuses ``disable_wal`` writes, which the store never makes."""
WAL_BYTES_KEPT = 128 * 1024 * 1024
"""Write-ahead log kept before RocksDB flushes the column families that still need its oldest file. A log file can
be reused (`WAL_FILES_RECYCLED`) only once every family written in it is flushed, and the small families (events,
state, meta) fill their memtables rarely: by default (four times all write buffers) the log grew with the records,
600 MB of new log files for 600 MB produced, none reused, each write extending a fresh file (and a restart
replaying all of it)."""
INFO_LOGS_KEPT = 10
"""RocksDB's own LOG files kept: every open starts a new one, and a full disk is retried by reopening."""
_Fold = tuple[str, Callable[[Event], tuple[str, ...]], Callable[[Any, Event, str], Any], dict[str, Any]]


def _held_only(entity_keys: Callable[[Event], tuple[str, ...]],
               states: dict[str, Any]) -> Callable[[Event], tuple[str, ...]]:
    """``entity_keys`` narrowed to the entities ``states`` holds (the projection's own dict, kept for good)."""
    def held(event: Event) -> tuple[str, ...]:
        return tuple(key for key in entity_keys(event) if key in states)
    return held
"""A projection as the store folds it: name, entity keys, evolve, and its live entity states."""


def _state_sequence_key(projection: str) -> bytes:
    return keys.META_STATE_SEQUENCE + b"." + projection.encode()


class RocksEventStore(StoredCommits):
    """`EventStore` on rocksdict. Not thread-safe: one writer (the event loop) owns it."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        durability: Durability | str = Durability.WAL,
        projections: Sequence[Projection[Any]] = CORE_PROJECTIONS,
        types: TypeRegistry | None = None,
        clock: Clock | None = None,
        read_only: bool = False,
        secondary: str | os.PathLike[str] | None = None,
        load_state: bool = True,
        tail_cache_bytes: int = TAIL_CACHE_BYTES,
    ) -> None:
        """``secondary`` opens a RocksDB secondary instance (read-only, its own directory there) that
        follows a running primary through `catch_up`; ``load_state=False`` skips loading and refolding
        projection state, for readers that only scan the log and the records (Spark). ``tail_cache_bytes``
        bounds the newest committed batches kept in memory for `read_batches` (`tail_cache`)."""
        self.path = os.fspath(path)
        self.durability = Durability(durability)
        self.secondary = os.fspath(secondary) if secondary is not None else None
        self.read_only = read_only or self.secondary is not None
        self._load_state = load_state
        self._types = types or default_registry()
        self._clock: Clock = clock or SystemClock()
        self._projections = list(projections)
        names = [projection.name for projection in self._projections]
        if len(set(names)) != len(names):
            raise ValueError(f"projection names must be unique: {names}")
        self._db = self._open()
        self._files = BatchFiles(os.path.join(self.path, "batches"), writable=not self.read_only,
                                 sync=self.durability is Durability.FSYNC, missing_ok=self.read_only)
        self._cf = {name: self._db.get_column_family_handle(name) for name in keys.COLUMN_FAMILIES}
        self._views = {name: self._db.get_column_family(name) for name in keys.COLUMN_FAMILIES}
        self._write_options = WriteOptions()
        self._write_options.sync = self.durability is Durability.FSYNC
        self._states: dict[str, dict[str, Any]] = {projection.name: {} for projection in self._projections}
        self._folds: list[_Fold] = [
            (projection.name, projection.entity_keys, projection.evolve, self._states[projection.name])
            for projection in self._projections
        ]
        self._folds_by_type: dict[type[Event], tuple[list[_Fold], bool]] = {}
        """Per event type, the folds it goes through and whether it removes or indexes stored rows
        (`_physical_effects`): worked out once, where each append of an offset commit or a batch asked three
        ``isinstance`` checks (~0.7 us an event)."""
        self._listeners: list[tuple[CommitListener, tuple[type[Event], ...] | None]] = []
        self._concerned_listeners: dict[frozenset[type[Event]], tuple[CommitListener, ...]] = {}
        """The listeners a commit of these event types concerns, in the order they were added (`_committed`)."""
        self._batch = WriteBatch(raw_mode=True)
        self._staged_records: list[tuple[int, int, bytes | memoryview, Placement]] = []
        """Record batches (partition, base offset, bytes, where they go) not yet put into ``_batch``: they go in
        last (`_put_staged_records`)."""
        self._truncating: dict[int, tuple[int, list[bytes] | None]] = {}
        """What `truncate` found for the `LogTruncated` it appends, for `_physical_effects`: the first batch kept and,
        when there are few, the keys of those below it."""
        self._staged_partitions: set[int] = set()
        """Partitions whose stored batches this turn's WriteBatch changes (appended, truncated, rewritten, deleted):
        `truncate` commits first only for one of them. A DeleteRecords of 9,000 partitions committed before each
        one (each commit then holding the previous partition's truncation) and stalled the loop 4.4 s."""
        self._write_error: Exception | None = None
        """A batch file write that failed before the commit: the commit fails with it."""
        self._file_bytes_staged = 0
        """Bytes of the staged record batches that go to files (`write_records_ahead`)."""
        self._files_to_check: list[tuple[int, int]] = []
        """(partition, file) a compaction slice took pointers out of: deleted after its commit if none is left."""
        self._shared_to_check: list[tuple[int, int]] = []
        """(partition, shared file) a compaction slice took pointers out of: its row goes if none is left."""
        self._dirty: dict[tuple[str, str], int] = {}
        self._rows_put_early: set[tuple[str, str]] = set()
        """Rows `put_changed_rows` put into the WriteBatch ahead of its commit (cleared with it): one changed again
        is left for the commit when a call asks for that (``defer_rows_changed_again``)."""
        self._sequence_keys = {projection.name: _state_sequence_key(projection.name)
                               for projection in self._projections}
        self._sequences_written_at = 0
        """The sequence at which every projection's covered sequence was last written (`_write_staged_state`)."""
        self._pending_events: list[LoggedEvent] = []
        self._tail_cache_bytes = tail_cache_bytes
        self._tail = TailCache(tail_cache_bytes)
        self._read_ahead = ReadAhead()
        self._pending_tail: list[tuple[int, int, int, bytes | memoryview | None]] = []
        """(partition, base offset, last offset, batch) to cache once written, or a partition to drop (batch None)."""
        self._aborting: set[int] | None = None
        """Partitions with indexed aborts, committed or staged (`_load_aborting`); ``None``: not known."""
        self._staged_aborts: dict[int, list[tuple[int, int, int, int]]] = {}
        """Indexed aborts staged and not committed yet, by partition: (marker, producer id, first offset, last stable
        offset). The partition's last stable offset moves past a transaction as its marker is staged, so a Fetch
        reading up to it must list the abort before its row is written (`aborted`)."""
        self._pointers_written: dict[tuple[int, int], bytes] = {}
        """(partition, base offset) -> pointer of each batch this commit writes to a file, for the tail cache."""
        self._sealed: SealedCommit | None = None
        """The part of a pipelined commit waiting for its files' writes (`write_records_ahead`, `finish_sealed`)."""
        self._failed: BaseException | None = None
        self._reload_listeners: list[Callable[[], None]] = []
        self._covered_staged = 0
        """Stored batches the staged range deletes cover (`stored_deletes.FLUSHED_AFTER_COVERING`)."""
        self._covered_unflushed = 0
        try:
            self._last_sequence = self._find_last_sequence()
            self._committed_sequence = self._last_sequence
            self._recover()
            self._load_shared_refs()
            self._load_aborting(self.secondary is not None)
            self._drop_orphan_files()
        except BaseException as error:
            self._release()
            traceback.clear_frames(error.__traceback__)  # their locals hold views too: release the LOCK now
            raise

    # -- opening and recovery -------------------------------------------------------------------

    def _open(self, read_only: bool | None = None, create: bool = True) -> Rdict:
        """``create=False`` (a reopen) refuses a directory without a database rather than start an empty one."""
        read_only = self.read_only if read_only is None else read_only
        options = Options(raw_mode=True)
        options.create_if_missing(create and not read_only)
        options.create_missing_column_families(not read_only)
        options.set_keep_log_file_num(INFO_LOGS_KEPT)
        families = {name: Options(raw_mode=True) for name in keys.COLUMN_FAMILIES}
        if not read_only:
            options.set_recycle_log_file_num(WAL_FILES_RECYCLED)
            options.set_max_total_wal_size(WAL_BYTES_KEPT)
        if self.secondary is not None:
            options.set_max_open_files(-1)  # RocksDB requires it of secondary instances
            access = AccessType.secondary(self.secondary)
            return Rdict(self.path, options, column_families=families, access_type=access)
        if read_only:
            return Rdict(self.path, options, column_families=families, access_type=AccessType.read_only(False))
        if create:
            os.makedirs(self.path, exist_ok=True)
        return Rdict(self.path, options, column_families=families)

    def _find_last_sequence(self) -> int:
        iterator = self._views["events"].iter(ReadOptions())
        iterator.seek_to_last()
        return keys.parse_event_key(iterator.key()) if iterator.valid() else 0

    def _recover(self, writable: bool | None = None) -> None:
        """Load every projection's state, then fold any log tail a projection does not yet cover (and write
        what was folded, when ``writable``)."""
        writable = not self.read_only if writable is None else writable
        meta = self._views["meta"]
        version = meta.get(keys.META_FORMAT_VERSION)
        if version is not None and keys.decode_sequence(version) > keys.FORMAT_VERSION:
            raise CorruptState(f"{self.path} was written by a newer logwright (format {keys.decode_sequence(version)})")
        if writable and (version is None or keys.decode_sequence(version) < keys.FORMAT_VERSION):
            meta[keys.META_FORMAT_VERSION] = keys.encode_sequence(keys.FORMAT_VERSION)  # before a newer row is put
        if not self._load_state:
            return
        replaced = {name for projection in self._projections for name in projection.replaces} - set(self._states)
        if writable and replaced:
            self._delete_replaced_projections(replaced)
        for key, value in self._views["state"].items():
            projection_name, entity = keys.parse_state_key(cast(bytes, key))
            if projection_name in replaced:
                continue
            if projection_name not in self._states:
                log.warning("state of unknown projection %r is ignored (a plugin is missing?)", projection_name)
                continue
            where = f"column family 'state' key {key!r}"
            if len(value) < 8:
                raise CorruptState(f"cannot decode the value at {where}: {len(value)} bytes is too short")
            self._states[projection_name][entity] = self._types.decode(value[8:], where)
        covered = {}
        for projection in self._projections:
            raw = meta.get(_state_sequence_key(projection.name))
            covered[projection.name] = keys.decode_sequence(raw) if raw is not None else 0
            if covered[projection.name] > self._last_sequence:
                raise CorruptState(
                    f"projection {projection.name!r} covers sequence {covered[projection.name]} "
                    f"but the event log ends at {self._last_sequence}"
                )
        start = min(covered.values(), default=self._last_sequence) + 1
        self._sequences_written_at = start - 1
        if start > self._last_sequence:
            return
        log.info("replaying events %d..%d into projections", start, self._last_sequence)
        for logged in self.read_events(start, tags=self._tags_folded_by(
                [projection for projection in self._projections if covered[projection.name] < self._last_sequence])):
            folds = [fold for fold in self._folds if logged.sequence > covered[fold[0]]]
            self._fold(folds, logged.event, logged.sequence)
        if writable:
            self._write_staged_state(self._last_sequence, every_projection=True)
            self._db.write(self._batch, self._write_options)
            self._batch = WriteBatch(raw_mode=True)
        self._dirty.clear()
        self._rows_put_early.clear()

    def _tags_folded_by(self, projections: Sequence[Projection[Any]]) -> frozenset[int] | None:
        """The event tags a refold of ``projections`` must read; ``None`` (every event) when one may fold any."""
        if any(projection.handles is None for projection in projections):
            return None
        return self._types.event_tags(kind for projection in projections for kind in projection.handles or ())

    def _drop_orphan_files(self) -> None:
        """A writable open deletes batch files no commit reached (see `BatchFiles.drop_orphans`); it needs the
        partitions' next offsets, so a store opened without them (no state, no partitions projection) skips it."""
        if self.read_only or not self._load_state or "partitions" not in self._states:
            return
        next_offsets = {int(entity): state.next_offset for entity, state in self._states["partitions"].items()
                        if entity.isdigit() and hasattr(state, "next_offset")}
        self._files.drop_orphans(next_offsets)

    def _delete_replaced_projections(self, names: set[str]) -> None:
        """Delete the rows and covered sequences of projections another one replaces (`Projection.replaces`)."""
        state_cf, meta_cf = self._cf["state"], self._cf["meta"]
        batch = WriteBatch(raw_mode=True)
        for name in sorted(names):
            prefix = keys.state_key(name, "")
            iterator = self._bounded_iterator("state", prefix[:-1] + b"\x01")
            iterator.seek(prefix)
            if iterator.valid() or self._views["meta"].get(_state_sequence_key(name)) is not None:
                log.info("deleting the rows of projection %r, which another one replaces", name)
                batch.delete_range(prefix, prefix[:-1] + b"\x01", state_cf)
                batch.delete(_state_sequence_key(name), meta_cf)
        if not batch.is_empty():
            self._db.write(batch, self._write_options)

    # -- writing --------------------------------------------------------------------------------

    def catch_up(self) -> int:
        """A secondary instance: apply what the primary wrote since; returns the new last sequence."""
        if self.secondary is None:
            raise ReadOnlyStore(f"only a secondary instance catches up, {self.path} is not opened as one")
        self._db.try_catch_up_with_primary()
        self._read_ahead.clear()  # the primary may have truncated or rewritten what it holds
        self._last_sequence = self._committed_sequence = self._find_last_sequence()
        return self._last_sequence

    @property
    def last_sequence(self) -> int:
        return self._last_sequence

    @property
    def committed_sequence(self) -> int:
        return self._committed_sequence

    def _check_writable(self) -> None:
        if self._failed is not None:
            raise StoreFailed(f"the store at {self.path} refuses writes until it can be reopened for writing: "
                              f"{self._failed}") from self._failed
        if self.read_only:
            raise ReadOnlyStore(f"the store at {self.path} was opened read-only")

    def _folds_for(self, event_type: type[Event]) -> list[_Fold]:
        """The folds of the projections that declare (or may) fold ``event_type``; for one it only deletes from
        (`Projection.removed_by`), a fold over the entities it holds."""
        by_name = {projection.name: projection for projection in self._projections}
        folds = []
        for fold in self._folds:
            projection = by_name[fold[0]]
            if not projection.may_fold(event_type):
                continue
            if any(issubclass(event_type, removing) for removing in projection.removed_by):
                fold = (fold[0], _held_only(fold[1], fold[3]), fold[2], fold[3])
            folds.append(fold)
        return folds

    def _fold(self, folds: list[_Fold], event: Event, sequence: int) -> None:
        """Evolve the entities ``event`` names in each of ``folds``; one call per event keeps appends cheap. An entity
        whose evolve returns the very state it was given is not rewritten (nor does its projection need a newer
        covered sequence: refolding that event from there leaves it as it is)."""
        dirty = self._dirty
        for name, entity_keys, evolve, states in folds:
            for entity in entity_keys(event):
                old_state = states.get(entity)
                new_state = evolve(old_state, event, entity)
                if new_state is old_state:  # left as it was: no row to write (a group's head on most commits)
                    continue
                if new_state is None:
                    states.pop(entity, None)
                else:
                    states[entity] = new_state
                dirty[(name, entity)] = sequence

    def append(
        self,
        events: Sequence[Event],
        batches: Sequence[StoredBatch] = (),
        index_entries: Sequence[tuple[bytes, bytes]] = (),
    ) -> int:
        self._check_writable()
        time_ms = self._clock.now_ms()
        put, encode_event, events_cf = self._batch.put, self._types.encode_event, self._cf["events"]
        for event in events:
            sequence = self._last_sequence = self._last_sequence + 1
            put(keys.event_key(sequence), encode_event(time_ms, event), events_cf)
            planned = self._folds_by_type.get(type(event))
            if planned is None:
                planned = self._folds_by_type[type(event)] = (self._folds_for(type(event)),
                                                              issubclass(type(event), PHYSICAL_EVENTS))
            self._fold(planned[0], event, sequence)
            if planned[1]:
                self._physical_effects(event)
            self._pending_events.append(LoggedEvent(sequence, time_ms, event))
        placement = self._files.placement
        staged_partitions = self._staged_partitions
        for batch in batches:
            staged_partitions.add(batch.partition_id)
            where = placement(batch.partition_id, len(batch.data))
            self._staged_records.append((batch.partition_id, batch.base_offset, batch.data, where))
            if where is not Placement.INLINE:
                self._file_bytes_staged += len(batch.data)
            (last_delta,) = LAST_OFFSET_DELTA.unpack_from(batch.data, 23)
            self._pending_tail.append((batch.partition_id, batch.base_offset, batch.base_offset + last_delta,
                                       batch.data))
        for key, value in index_entries:
            put(key, value, self._cf["index"])
        return self._last_sequence

    def scan_batches(self, partition_id: int, start_offset: int, end_offset: int) -> Iterator[tuple[int, bytes]]:
        """Committed (base offset, batch) with base offsets in ``start_offset..end_offset - 1``, read lazily from
        RocksDB (not the tail cache): for a whole-log pass such as compaction."""
        iterator = self._bounded_iterator("records", keys.record_key(partition_id, max(end_offset, 0)))
        iterator.seek(keys.record_key(partition_id, max(start_offset, 0)))
        yield from stored_batches(iterator, self._files)

    # -- failure and recovery -------------------------------------------------------------------

    @property
    def failed(self) -> BaseException | None:
        """Why writes are refused (the write error, or the last failed reopen), or ``None`` when writable."""
        return self._failed

    def add_reload_listener(self, listener: Callable[[], None]) -> None:
        """``listener`` runs after `reopen` replaced every projection's state with what is on disk."""
        self._reload_listeners.append(listener)

    def reopen(self) -> bool:
        """Drop everything staged, close the database, open it again and reload every projection from disk.

        Returns ``True`` when it opened for writing (the store is healthy again). When it cannot (a disk
        still full needs room to flush the write-ahead log on open), it opens read-only so reads go on,
        and writes stay refused until a later `reopen`. Raises `StoreLost` if not even that opens.
        """
        if self.read_only:
            raise ReadOnlyStore(f"the store at {self.path} was opened read-only")
        self._discard_staged()
        self._release()
        try:
            self._reload(writable=True)
            self._failed = None
        except Exception as error:
            log.warning("cannot reopen %s for writing (%s); serving reads from a read-only view", self.path, error)
            self._failed = error
            self._release()
            try:
                self._reload(writable=False)
            except Exception as lost:
                raise StoreLost(f"cannot open {self.path} again, not even read-only: {lost}") from lost
        log.log(logging.WARNING if self._failed else logging.INFO, "reopened %s at event %d (%s)", self.path,
                self._last_sequence, "writable" if self._failed is None else "read-only")
        for listener in self._reload_listeners:
            listener()
        return self._failed is None

    def _discard_staged(self) -> None:
        self._files.wait_for_writes()  # what they wrote no pointer will name, as bytes a crash left
        if self._files.take_write_failure() is not None:
            self._files.seal()  # a file may end short of what was planned for it: append elsewhere
        self._batch = WriteBatch(raw_mode=True)
        self._sealed = None
        self._covered_staged = 0
        self._staged_records.clear()
        self._file_bytes_staged = 0
        self._staged_partitions.clear()
        self._files.cancel_planned()
        self._files_to_check.clear()
        self._shared_to_check.clear()
        self._write_error = None
        self._pending_events = []
        self._pending_tail = []
        self._staged_aborts = {}
        self._pointers_written = {}
        self._dirty.clear()
        self._rows_put_early.clear()
        self._tail = TailCache(self._tail_cache_bytes)
        self._read_ahead.clear()

    def _reload(self, writable: bool) -> None:
        """Open the database and replace the projections' states (in place: the folds hold the dicts)."""
        self._db = self._open(read_only=not writable, create=False)
        self._cf = {name: self._db.get_column_family_handle(name) for name in keys.COLUMN_FAMILIES}
        self._views = {name: self._db.get_column_family(name) for name in keys.COLUMN_FAMILIES}
        self._last_sequence = self._committed_sequence = self._find_last_sequence()
        for states in self._states.values():
            states.clear()
        self._recover(writable)
        self._load_shared_refs()
        self._load_aborting(self.secondary is not None)
        if writable:
            self._drop_orphan_files()

    # -- reading --------------------------------------------------------------------------------

    def state(self, projection: str, entity: str) -> Any:
        return self._states[projection].get(entity)

    def entities(self, projection: str) -> Mapping[str, Any]:
        return MappingProxyType(self._states[projection])

    @property
    def projections(self) -> tuple[Projection[Any], ...]:
        return tuple(self._projections)

    @property
    def types(self) -> TypeRegistry:
        return self._types

    def checkpoint(self, path: str) -> None:
        """RocksDB's checkpoint, then the batch files linked beside it (none deleted in between: deletions run in
        `commit`, on this thread)."""
        Checkpoint(self._db).create_checkpoint(path)
        self._files.link_into(os.path.join(path, "batches"))

    def flush_wal(self) -> None:
        self._db.flush_wal(True)

    def wait_for_dropped_files(self) -> None:
        """Return once the batch files earlier commits made unreachable are deleted: they go on a thread of their own
        (`FileDrops`), after the commit is answered."""
        self._files.wait_for_drops()

    def close(self) -> None:
        """Commit what is staged and write every projection's covered sequence, so the next open refolds nothing."""
        if not self.read_only and self._failed is None:
            if self._sealed is not None or self._pending_events or self._staged_records or not self._batch.is_empty():
                self.commit()
            if self._failed is None and self._sequences_written_at < self._committed_sequence:
                self._write_every_sequence()
        self._files.close()
        self._release()

    def _write_every_sequence(self) -> None:
        """Every projection covers the committed sequence (each commit wrote the rows it changed): say so."""
        try:
            self._write_staged_state(self._committed_sequence, every_projection=True)
            self._db.write(self._batch, self._write_options)
        except Exception as error:  # the next open refolds the events since the sequences written last
            log.warning("closing %s: the projections' covered sequences were not written: %s", self.path, error)
        self._batch = WriteBatch(raw_mode=True)

    def _release(self) -> None:
        """Close the database. Column family views keep it (and its LOCK) open, so they go first.

        After a failed write RocksDB's close reports the writer's earlier error but still lets go; its
        background work is cancelled first, or close waits a second for RocksDB's own retry of the error.
        """
        self._files.wait_for_drops()  # their thread syncs this database's log first
        self._views.clear()
        self._cf.clear()
        try:
            if self._failed is not None:
                self._db.cancel_all_background(False)
            self._db.close()
        except Exception as error:
            log.warning("closing %s: %s", self.path, error)
