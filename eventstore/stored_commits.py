"""Writing what is staged: the group commit of one WriteBatch (`commit`), its rows put ahead a slice at a time
(`put_changed_rows`), the batch files written ahead on their thread and a commit pipelined in two parts
(`write_records_ahead`, `finish_sealed`), and after each write the tail cache and the commit listeners.

A mixin of `RocksEventStore`: what `append` staged (events, record batches, changed rows) goes to disk here, all of
it or none; a failed write drops it and reloads state (`reopen`), so memory never runs ahead of the disk.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from rocksdict import WriteBatch

from . import keys
from .batch_files import Placement
from .codec import TypeRegistry
from .interface import CommitListener, LoggedEvent
from .read_ahead import ReadAhead
from .store_errors import StoreFailed
from .stored_deletes import StoredDeletes
from .tail_cache import TailCache

if TYPE_CHECKING:
    from logwright.core.events import Event

log = logging.getLogger("logwright.eventstore.rocksdb")  # the store's messages, under the logger they always had

STATE_SEQUENCES_REFRESHED_EVERY = 4096
"""Events after which every projection's covered sequence is written again. A commit writes only the sequences of
the projections it changed (a share acknowledgement changes one or two of ~20): one that was not changed folded
none of the events since its sequence, so a restart refolding them from there finds nothing to change, and this
bound keeps that refold short (at most this many events)."""
_LISTENER_PLANS_KEPT = 256
"""Sets of event types whose concerned commit listeners are remembered (a commit's mix of types: few in practice)."""


@dataclass(slots=True)
class SealedCommit:
    """The first part of a pipelined commit (`write_records_ahead` with ``seal``): its WriteBatch, complete, waits
    for its batch files' writes on the writer thread while later staging goes into the next one."""

    batch: WriteBatch
    events: list[LoggedEvent]
    tail: list[tuple[int, int, int, bytes | memoryview | None]]
    pointers: dict[tuple[int, int], bytes]
    sequence: int


class StoredCommits(StoredDeletes):
    """The commit of what is staged (`RocksEventStore` inherits it)."""

    _types: TypeRegistry
    _sealed: SealedCommit | None
    _write_error: Exception | None
    _staged_aborts: dict[int, list[tuple[int, int, int, int]]]
    _pending_events: list[LoggedEvent]
    _pointers_written: dict[tuple[int, int], bytes]
    _dirty: dict[tuple[str, str], int]
    _rows_put_early: set[tuple[str, str]]
    _last_sequence: int
    _committed_sequence: int
    _sequence_keys: dict[str, bytes]
    _sequences_written_at: int
    _file_bytes_staged: int
    _tail: TailCache
    _read_ahead: ReadAhead
    _listeners: list[tuple[CommitListener, tuple[type[Event], ...] | None]]
    _concerned_listeners: dict[frozenset[type[Event]], tuple[CommitListener, ...]]
    _failed: BaseException | None

    if TYPE_CHECKING:  # the store's own, which these call
        def _check_writable(self) -> None: ...
        def reopen(self) -> bool: ...

    @property
    def file_write_ns_per_byte(self) -> float:
        """What writing a byte of batch files cost lately (`BatchFiles.write_ns_per_byte`)."""
        return self._files.write_ns_per_byte

    @property
    def file_bytes_staged(self) -> int:
        """Bytes of the record batches staged since the last commit (or write ahead) that go to batch files."""
        return self._file_bytes_staged

    def write_records_ahead(self, seal: bool = False) -> concurrent.futures.Future[tuple[int, int]] | None:
        """Start writing the staged record batches that go to files on the batch files' writer thread, and put
        their pointers into the WriteBatch now; the future of the writes (``None``: nothing to write, or the files
        could not be opened, which the commit raises). The commit waits for them before its WriteBatch, so a crash
        still leaves bytes no pointer names, never a pointer to missing bytes, and fails if they failed.

        For the broker's scheduled commit: writing 1 MB batches on the event loop kept it in writev while the
        connections beside the producer waited (`BatchFiles.write_ahead`). Without ``seal`` what is staged
        meanwhile joins the same commit, and the commit writes its batches itself, after these (each file's appends
        stay in order: every write waits for the one under way).

        ``seal`` pipelines the commit: everything staged so far (the changed rows encoded now) becomes a WriteBatch
        of its own that `finish_sealed` writes once these bytes are, and what is staged meanwhile goes into the
        next one, whose files can be written ahead in turn. Under a steady producer the remainder that joined the
        commit was as large as what went ahead, and when the host made every write slow the loop spent 58-69% of
        its time writing it (session 51). Not when this commit holds what must be done after its write in a
        commit of its own (files to drop, range deletes to count, staged aborts a read consults, a write error),
        nor while another part is sealed: then it is as without ``seal``. `sealed` says whether it sealed."""
        self._check_writable()
        staged = self._staged_records
        own = [(partition_id, base_offset, data) for partition_id, base_offset, data, placement in staged
               if placement is Placement.OWN]
        shared = [(partition_id, base_offset, data) for partition_id, base_offset, data, placement in staged
                  if placement is Placement.SHARED]
        if not own and not shared:
            return None
        try:
            own_pointers, shared_pointers, writing = self._files.write_ahead(own, shared)
        except OSError as error:  # a file could not be created or opened: the commit raises it
            self._write_error = error
            staged.clear()
            self._file_bytes_staged = 0
            return None
        put, records_cf, record_key = self._batch.put, self._cf["records"], keys.record_key
        written = self._pointers_written
        for (partition_id, base_offset, _), pointer in zip([*own, *shared], [*own_pointers, *shared_pointers],
                                                           strict=True):
            written[(partition_id, base_offset)] = pointer
            put(record_key(partition_id, base_offset), pointer, records_cf)
        if shared:
            index_cf = self._cf["index"]
            for key, value in self._files.shared_refs.take_rows():
                put(key, value, index_cf)
        self._staged_records = [record for record in staged if record[3] is Placement.INLINE]
        self._file_bytes_staged = 0
        if seal and self._can_seal():
            self._seal()
        return writing

    def _can_seal(self) -> bool:
        """Nothing staged needs the end of a full `commit` (see `write_records_ahead`)."""
        return (self._sealed is None and self._write_error is None and not self._staged_aborts
                and not self._covered_staged and not self._files_to_check and not self._shared_to_check
                and not self._files.has_planned())

    def _seal(self) -> None:
        """Make everything staged the sealed part of a pipelined commit and start an empty WriteBatch."""
        self._put_staged_records()  # the inline batches left (the file ones went ahead)
        if self._pending_events:
            self._write_staged_state(self._last_sequence)
        self._sealed = SealedCommit(self._batch, self._pending_events, self._pending_tail, self._pointers_written,
                                     self._last_sequence)
        self._batch = WriteBatch(raw_mode=True)
        self._pending_events, self._pending_tail, self._pointers_written = [], [], {}
        self._dirty.clear()
        self._rows_put_early.clear()

    @property
    def sealed(self) -> bool:
        """A part of a pipelined commit waits for its files' writes (`finish_sealed` writes it)."""
        return self._sealed is not None

    def finish_sealed(self) -> None:
        """Write the sealed part of a pipelined commit once its files' writes end (at once if they have), and tell the
        commit listeners; nothing when none is sealed. A failure is a failed commit's: everything staged since the
        last commit (this part and what was staged after it) is dropped, state reloads from disk, `StoreFailed`."""
        sealed = self._sealed
        if sealed is None:
            return
        self._sealed = None
        try:
            self._files.wait_for_writes()
            failure = self._files.take_write_failure()
            if failure is not None:
                raise failure
            self._db.write(sealed.batch, self._write_options)
        except Exception as error:
            self._fail_commit(error, len(sealed.events) + len(self._pending_events))
        self._committed_sequence = sealed.sequence
        self._committed(sealed.events, sealed.tail, sealed.pointers)

    def _put_staged_records(self) -> None:
        """Put the staged record batches into the WriteBatch, in the order they were staged.

        They go in after the small rows because the WriteBatch is one growing buffer: a small put after a
        1 MB batch reallocates and copies the whole megabyte (26-31 us, more with cold caches), while
        putting the batches last grows it once per batch at most.
        """
        staged = self._staged_records
        own = [(partition_id, base_offset, data) for partition_id, base_offset, data, placement in staged
               if placement is Placement.OWN]
        shared = [(partition_id, base_offset, data) for partition_id, base_offset, data, placement in staged
                  if placement is Placement.SHARED]
        try:
            pointers = iter(self._files.write(own) if own else ())
            shared_pointers = iter(self._files.write_shared(shared) if shared else ())
        except OSError as error:  # raised by the commit (this may run in `append`, before a range delete)
            self._write_error = error
            staged.clear()
            self._file_bytes_staged = 0
            return
        put, records_cf, record_key = self._batch.put, self._cf["records"], keys.record_key
        written = self._pointers_written
        for partition_id, base_offset, data, placement in staged:
            if placement is Placement.INLINE:  # bytes: a view (`StoredBatch`) is never this small
                put(record_key(partition_id, base_offset), bytes(data), records_cf)
            else:
                pointer = written[(partition_id, base_offset)] = next(
                    pointers if placement is Placement.OWN else shared_pointers)
                put(record_key(partition_id, base_offset), pointer, records_cf)
        if shared:
            index_cf = self._cf["index"]
            for key, value in self._files.shared_refs.take_rows():
                put(key, value, index_cf)
        staged.clear()
        self._file_bytes_staged = 0

    @property
    def changed_rows(self) -> int:
        """Entities changed since the last commit whose rows are not in its WriteBatch yet."""
        return len(self._dirty)

    def put_changed_rows(self, limit: int | None = None, defer_rows_changed_again: bool = False) -> None:
        """Put the rows of the entities changed since the last commit into its WriteBatch now, ahead of the commit;
        at most ``limit`` of them (the first changed first), the rest by a later call or the commit.

        For a long staging done a part at a time (`Broker.stage_over_turns`): the commit that ends it then encodes
        only the rows the last part changed, where 5,000 committed offsets' rows took it 15-31 ms at once; and for a
        commit of many rows a slice per turn (`Broker._scheduled_commit`). A row changed again before the commit is
        put again (a WriteBatch's later put wins), and the commit still writes all of it or none.

        ``defer_rows_changed_again`` (``limit`` does not apply then): a row already put ahead of this commit and changed
        since is left for a later call or the commit, which encode it once. A row every part changes (a group's head,
        listing every partition it committed so far) was encoded again after each part: 25 parts of 200 commits grew
        from 2.4 to 10 ms a turn as the head grew.
        """
        self._check_writable()
        dirty = self._dirty
        if defer_rows_changed_again and self._rows_put_early:
            part = {row: sequence for row, sequence in dirty.items() if row not in self._rows_put_early}
        elif limit is None or len(dirty) <= limit:
            part = dirty
        else:
            part = dict(itertools.islice(dirty.items(), limit))
        if not part:
            return
        self._put_changed_rows(self._last_sequence, part)
        self._rows_put_early.update(part)
        if part is dirty:
            dirty.clear()
            return
        for row in part:  # only once put: should encoding fail, the commit meets those rows again and fails whole
            del dirty[row]

    def _put_changed_rows(self, sequence: int, dirty: Mapping[tuple[str, str], int] | None = None) -> dict[str, None]:
        """The changed entities' rows (``dirty``'s, by default all of them), and the covered sequence of the projections
        they belong to; returns those."""
        state_cf = self._cf["state"]
        put, delete, encode, states = self._batch.put, self._batch.delete, self._types.encode, self._states
        changed: dict[str, None] = {}
        for (projection_name, entity), entity_sequence in (self._dirty if dirty is None else dirty).items():
            changed[projection_name] = None
            key = keys.state_key(projection_name, entity)
            value = states[projection_name].get(entity)
            if value is None:
                delete(key, state_cf)
            else:
                put(key, keys.encode_sequence(entity_sequence) + encode(value), state_cf)
        self._put_covered_sequences(changed, sequence)
        return changed

    def _put_covered_sequences(self, projection_names: Iterable[str], sequence: int) -> None:
        encoded, sequence_keys, meta_cf, put = keys.encode_sequence(sequence), self._sequence_keys, self._cf["meta"], \
            self._batch.put
        for projection_name in projection_names:
            put(sequence_keys[projection_name], encoded, meta_cf)

    def _write_staged_state(self, sequence: int, every_projection: bool = False) -> None:
        """The changed entities' rows, and the covered sequence of the projections they belong to (of every
        projection when ``every_projection`` or `STATE_SEQUENCES_REFRESHED_EVERY` events after the last time)."""
        changed = self._put_changed_rows(sequence)
        if every_projection or sequence - self._sequences_written_at >= STATE_SEQUENCES_REFRESHED_EVERY:
            self._put_covered_sequences((name for name in self._sequence_keys if name not in changed), sequence)
            self._sequences_written_at = sequence

    def commit(self) -> None:
        """Write what was staged; on failure drop it, reload state from disk (`reopen`) and raise `StoreFailed`.

        Raises `StoreLost` when the database cannot even be opened read-only again.
        """
        self._check_writable()
        self.finish_sealed()  # a pipelined commit's first part goes first
        if not self._pending_events and not self._staged_records and self._batch.is_empty():
            return
        pending = self._pending_events
        try:
            if pending:
                self._write_staged_state(self._last_sequence)
            self._put_staged_records()
            self._files.wait_for_writes()  # the writes ahead (`write_records_ahead`), before anything names them
            if self._write_error is None:
                self._write_error = self._files.take_write_failure()
            if self._write_error is not None:
                raise self._write_error
            self._db.write(self._batch, self._write_options)
        except Exception as error:
            self._fail_commit(error, len(pending))
        self._pending_events = []
        self._staged_aborts = {}
        self._batch = WriteBatch(raw_mode=True)
        self._dirty.clear()
        self._rows_put_early.clear()
        self._staged_partitions.clear()
        self._committed_sequence = self._last_sequence
        if self._covered_staged:
            self._flush_covered_rows()
        if self._files.has_planned() or self._files_to_check or self._shared_to_check:
            self._drop_dead_files()
        tail, self._pending_tail = self._pending_tail, []
        written, self._pointers_written = self._pointers_written, {}
        self._committed(pending, tail, written)

    def _fail_commit(self, error: Exception, events: int) -> NoReturn:
        """A commit's write failed: drop everything staged, reload state from disk, raise `StoreFailed`."""
        self._failed = error
        self._files.seal()  # a file may end in bytes of this commit: no pointer names them, append elsewhere
        log.error("writing to %s failed (%s): dropping %d staged events and reloading state from disk",
                  self.path, error, events)
        # The failed calls' frames hold column family handles in their locals (a value the codec could not
        # write failed inside `_put_changed_rows`), and a handle keeps the database and its LOCK open: reopening
        # then failed ("lock hold by current process") and the store stayed read-only for good.
        traceback.clear_frames(error.__traceback__)
        self.reopen()
        raise StoreFailed(f"writing to {self.path} failed: {error}; nothing it carried was kept") from error

    def _committed(self, pending: list[LoggedEvent], tail: list[tuple[int, int, int, bytes | memoryview | None]],
                   written: dict[tuple[int, int], bytes]) -> None:
        """After a commit's write: cache its batches' tail and tell the commit listeners."""
        for partition_id, base_offset, last_offset, data in tail:
            if data is None:
                self._tail.drop(partition_id)
                self._read_ahead.drop(partition_id)
            else:
                self._tail.add(partition_id, base_offset, last_offset, data, written.get((partition_id, base_offset)))
        if not self._listeners:
            return
        present = frozenset(type(logged.event) for logged in pending)
        concerned = self._concerned_listeners.get(present)
        if concerned is None:  # worked out once per set of event types: a commit of one append asked seven filters
            if len(self._concerned_listeners) >= _LISTENER_PLANS_KEPT:
                self._concerned_listeners.clear()
            concerned = self._concerned_listeners[present] = tuple(
                listener for listener, wanted in self._listeners
                if wanted is None or any(issubclass(event_type, wanted) for event_type in present))
        for listener in concerned:
            listener(pending)

    def add_commit_listener(self, listener: CommitListener,
                            event_types: Iterable[type[Event]] | None = None) -> None:
        """``listener`` gets every commit's events; with ``event_types``, only commits holding one of them (a
        commit of 5,000 offsets is not walked by every coordinator that follows topics and appends)."""
        self._listeners.append((listener, None if event_types is None else tuple(event_types)))
        self._concerned_listeners.clear()
