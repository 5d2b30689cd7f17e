"""Record batches kept in append-only files beside RocksDB, each named in RocksDB by a 20-byte pointer.

Why: every byte put into RocksDB is checksummed in software into its write-ahead log (the rocksdict wheel's
CRC32C, GIL held), copied into the memtable, then written again by every flush and compaction. Storing a 1 MB
batch that way costs ~1.7 CPU seconds per GB on this machine; appending it to a file costs ~0.2
(`bench/batch_files.py`). RocksDB keeps what must stay atomic with the events — the pointer — in the same
WriteBatch; the bytes are written to the file first, so a crash leaves bytes no pointer names (never a pointer
to missing bytes), and the file is fdatasynced before the WriteBatch when the store syncs its log.

Layout, Kafka's own: one directory per partition id, one file per run of batches, named by the base offset of
its first batch (`<root>/<partition id>/<base offset:020d>.batches`), so every batch in a file sits below the
next file's name and retention drops whole files. A file is appended to until it holds `FILE_ROLL_BYTES`. Small
batches stay in RocksDB (`INLINE_BELOW`): there a syscall per partition per commit costs more than the bytes.

A partition that has held little (`SMALL_PARTITION_BYTES`) has no directory of its own yet: its batches go to the
shared file every such partition appends to (`<root>/shared/<number:020d>.batches`, one writev a commit for all
of them, rolled at `SHARED_ROLL_BYTES`), named by a 24-byte pointer (`SHARED_POINTER`). Which partitions a shared
file holds, and between which base offsets, are rows beside the pointers (`shared_refs`): truncation and topic
deletion drop the rows they pass, and a file left without one is deleted. This is logwright's own: Kafka gives
every partition its own files from the first batch, which at 1,000 partitions cost more than the bytes.

A commit's file writes may also run on a thread of their own (`write_ahead`), so the event loop serves other
connections while the kernel takes the bytes: with the page cache dropped on this VM, a producer of 1 MB batches
kept the loop in writev 70% of the time and the consumers beside it starved (bench/results/history.md, session
51). Nothing else touches a descriptor while such a write is under way: every close and every other write waits for
it first (`wait_for_writes`), and the WriteBatch naming the bytes is written only after it (the store's commit).

A file is never truncated, and never appended to once another directory links it (`link_into`, for
checkpoints): an inode two stores share holds the same bytes for both. A name is only replaced when it holds
no committed batch (its base offset is the partition's next offset again after a crash): it is unlinked and
created anew, never truncated in place.
"""

from __future__ import annotations

import concurrent.futures
import enum
import errno
import os
import shutil
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .batch_file_reads import OPEN_FILES, BatchFileReads
from .batch_pointers import LAST_OFFSET_DELTA, POINTER, SHARED, SHARED_POINTER, file_of
from .file_drops import FileDrops
from .shared_refs import SharedRefs

INLINE_BELOW = 4096
"""Batches shorter than this stay in RocksDB."""
SMALL_PARTITION_BYTES = 256 * 1024
"""Larger batches go to the shared batch file while no more than this much of a partition's went there since the
store opened, unless it has a file of its own open for appending already (`BatchFiles.placement`). Creating a
partition's directory and first file took 0.3-1.3 ms of kernel time on this machine's ext4 (its directory allocator
slows as directories multiply: 60 us per mkdir among 10, 410 among 1,000); a fresh topic of 1,000 partitions spent
most of its first 100 MB of produce creating them."""
_clock_ns = time.perf_counter_ns
"""What writes are timed with (`BatchFiles.write_ns_per_byte`)."""
WRITE_COST_FROM_BYTES = 64 * 1024
"""Writes this large or larger update `BatchFiles.write_ns_per_byte` (a smaller one's cost is mostly the call's)."""
WRITE_COST_WEIGHT = 0.25
"""Weight of the latest write in `BatchFiles.write_ns_per_byte` (an exponential moving average)."""
FILE_ROLL_BYTES = 128 * 1024 * 1024
"""A partition's file takes no more appends once it holds this much."""
SHARED_ROLL_BYTES = 32 * 1024 * 1024
"""A shared file takes no more appends once it holds this much: smaller than a partition's, since a shared file
goes only when every partition in it has truncated past its batches there."""
_FileWrite = tuple[int, list[bytes | memoryview]]
"""A descriptor and the buffers to append to it (`BatchFiles.write_ahead`)."""


class Placement(enum.IntEnum):
    """Where a batch about to be stored goes (`BatchFiles.placement`)."""

    INLINE = 0
    """its bytes in RocksDB"""
    SHARED = 1
    """the shared file"""
    OWN = 2
    """its partition's own file"""


@dataclass(slots=True)
class _Appending:
    base_offset: int
    fd: int
    size: int


class BatchFiles(BatchFileReads):
    """The batch files under ``root``. ``writable`` stores append and delete; ``sync`` fdatasyncs what a commit
    wrote before its WriteBatch; ``missing_ok`` (a read-only or secondary reader) answers ``None`` for a file the
    primary already deleted (its batches were truncated), where the primary itself raises `CorruptState`."""

    def __init__(self, root: str, *, writable: bool, sync: bool, missing_ok: bool) -> None:
        self.root = root
        self.writable = writable
        self.sync = sync
        self.missing_ok = missing_ok
        self._appending: OrderedDict[int, _Appending] = OrderedDict()
        self._reading: OrderedDict[tuple[int, int], int] = OrderedDict()
        self._read_bases: dict[int, set[int]] = {}
        """The files of each partition open in `_reading`: forgetting a partition (once for each of a deleted topic's)
        looks at its own, not at every open file."""
        self._doomed: set[tuple[int, int]] = set()
        self._doomed_partitions: set[int] = set()
        self._small_bytes: dict[int, int] = {}
        """Bytes of batches of `INLINE_BELOW` or more each partition put in the shared file (`placement`)."""
        self.shared_refs = SharedRefs()
        self._shared: _Appending | None = None
        """The shared file open for appending (its number is ``base_offset``)."""
        self._next_shared = 1
        self._doomed_shared: set[int] = set()
        self._writer: concurrent.futures.ThreadPoolExecutor | None = None
        self._writing: concurrent.futures.Future[tuple[int, int]] | None = None
        """The writes `write_ahead` started, until `wait_for_writes` has seen them end."""
        self.write_ns_per_byte = 0.0
        """What writing a byte (and syncing it, with ``sync``) cost lately, on either thread, from the writes of
        `WRITE_COST_FROM_BYTES` or more: the broker writes a commit's files ahead only when they would take long
        (`broker_commits.WRITE_AHEAD_AFTER_NS`). Wall time, not the broker clock: it measures, nothing waits on it."""
        self._planning = False
        self._closing_later: list[int] = []
        """Descriptors closed while a write ahead was planned or under way: closed once it has ended."""
        self.write_failure: Exception | None = None
        """Why a write ahead failed, until the store's commit takes it (`take_write_failure`) and fails with it."""
        self._drops = FileDrops()
        """The files `drop_planned` handed over, deleted on a thread once the log is synced: left out of listings."""
        if writable:
            os.makedirs(root, exist_ok=True)

    # -- writing ----------------------------------------------------------------------------------

    def placement(self, partition_id: int, size: int) -> Placement:
        """Where a batch of ``size`` bytes about to be staged goes: RocksDB when small, the shared file while its
        partition has no file open for appending and put no more than `SMALL_PARTITION_BYTES` there (since the
        store opened), else the partition's own file."""
        if size < INLINE_BELOW:
            return Placement.INLINE
        if partition_id in self._appending:
            return Placement.OWN
        kept = self._small_bytes.get(partition_id, 0) + size
        if kept > SMALL_PARTITION_BYTES:
            return Placement.OWN
        self._small_bytes[partition_id] = kept
        return Placement.SHARED

    def write(self, batches: Sequence[tuple[int, int, bytes | memoryview]], io: list[_FileWrite] | None = None
              ) -> list[bytes]:
        """Append ``(partition id, base offset, batch)`` (each partition's in offset order); their pointers, in the
        same order. One writev per partition; with ``sync`` each file written is fdatasynced before returning.
        ``io``: the writes are only planned, added there for `write_ahead` to run."""
        if io is None:
            self.wait_for_writes()
        elapsed = written = 0
        by_partition: dict[int, list[int]] = {}
        for index, (partition_id, _, _) in enumerate(batches):
            by_partition.setdefault(partition_id, []).append(index)
        pointers: list[bytes] = [b""] * len(batches)
        for partition_id, indexes in by_partition.items():
            file = self._file_for(partition_id, batches[indexes[0]][1])
            position = file.size
            for index in indexes:
                _, _, data = batches[index]
                (delta,) = LAST_OFFSET_DELTA.unpack_from(data, 23)
                pointers[index] = POINTER.pack(file.base_offset, position, len(data), delta)
                position += len(data)
            buffers = [batches[index][2] for index in indexes]
            file.size = position
            if io is not None:
                io.append((file.fd, buffers))
                continue
            started = _clock_ns()  # the write alone: opening a new file is the loop's work either way
            _write_all(file.fd, buffers)
            if self.sync:
                os.fdatasync(file.fd)
            elapsed += _clock_ns() - started
            written += sum(len(buffer) for buffer in buffers)
        if written:
            self._measured(elapsed, written)
        return pointers

    def write_shared(self, batches: Sequence[tuple[int, int, bytes | memoryview]], io: list[_FileWrite] | None = None
                     ) -> list[bytes]:
        """Append ``(partition id, base offset, batch)`` to the shared file with one writev, each partition's
        together (a read of them is one pread); their pointers, in the given order. The rows naming what the file
        now holds wait in `shared_refs` for the same WriteBatch (`SharedRefs.take_rows`). ``io``: as `write`."""
        if io is None:
            self.wait_for_writes()
        file = self._shared_file()
        order = sorted(range(len(batches)), key=lambda index: batches[index][0])  # stable: offsets stay in order
        pointers: list[bytes] = [b""] * len(batches)
        position = file.size
        wrote = self.shared_refs.wrote
        for index in order:
            partition_id, base_offset, data = batches[index]
            (delta,) = LAST_OFFSET_DELTA.unpack_from(data, 23)
            pointers[index] = SHARED_POINTER.pack(file.base_offset, position, len(data), delta)
            position += len(data)
            wrote(file.base_offset, partition_id, base_offset)
        buffers = [batches[index][2] for index in order]
        file.size = position
        if io is not None:
            io.append((file.fd, buffers))
            return pointers
        started = _clock_ns()
        _write_all(file.fd, buffers)
        if self.sync:
            os.fdatasync(file.fd)
        self._measured(_clock_ns() - started, sum(len(buffer) for buffer in buffers))
        return pointers

    def write_ahead(self, own: Sequence[tuple[int, int, bytes | memoryview]],
                    shared: Sequence[tuple[int, int, bytes | memoryview]]
                    ) -> tuple[list[bytes], list[bytes], concurrent.futures.Future[tuple[int, int]]]:
        """`write` ``own`` and `write_shared` ``shared`` on the writer thread: their pointers now, and the future of
        the writes (fdatasynced with ``sync``). Until it ends, closing a descriptor waits for it (`wait_for_writes`),
        and so does any other write. A failure is kept in `write_failure` for the commit."""
        self.wait_for_writes()
        io: list[_FileWrite] = []
        self._planning = True
        try:
            own_pointers = self.write(own, io) if own else []
            shared_pointers = self.write_shared(shared, io) if shared else []
        finally:
            self._planning = False
        if self._writer is None:
            self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="logwright-batch-files")
        self._writing = self._writer.submit(_perform, io, self.sync)
        return own_pointers, shared_pointers, self._writing

    def _measured(self, elapsed_ns: int, written: int) -> None:
        if written >= WRITE_COST_FROM_BYTES:
            self.write_ns_per_byte += (elapsed_ns / written - self.write_ns_per_byte) * WRITE_COST_WEIGHT

    def wait_for_writes(self) -> None:
        """Wait until the writes ahead have ended (at once when none is under way); then close the descriptors closed
        meanwhile. A failure goes to `write_failure`."""
        writing, self._writing = self._writing, None
        if writing is not None:
            try:
                self._measured(*writing.result())
            except Exception as error:  # noqa: BLE001 - the commit fails with it (`take_write_failure`)
                if self.write_failure is None:
                    self.write_failure = error
        closing, self._closing_later = self._closing_later, []
        for fd in closing:
            os.close(fd)

    def take_write_failure(self) -> Exception | None:
        failure, self.write_failure = self.write_failure, None
        return failure

    def _close(self, fd: int) -> None:
        """Close an appending descriptor, once no write ahead planned or under way can still use it."""
        if self._planning or self._writing is not None:
            self._closing_later.append(fd)
        else:
            os.close(fd)

    def _shared_file(self) -> _Appending:
        """The shared file to append to: the open one, or a new one (an existing one is never appended to again
        once closed: after a crash its end may hold bytes no pointer names)."""
        file = self._shared
        if file is not None:
            if file.size < SHARED_ROLL_BYTES:
                return file
            self._seal_shared()
        directory = os.path.dirname(self._path(SHARED, 0))
        if not os.path.isdir(directory):
            os.makedirs(directory, exist_ok=True)
            if self.sync:
                _fsync_directory(self.root)
        number = self._next_shared
        self._next_shared += 1
        fd = os.open(self._path(SHARED, number), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                     0o644)
        if self.sync:
            _fsync_directory(directory)
        self._shared = _Appending(number, fd, 0)
        return self._shared

    def _seal_shared(self) -> None:
        file, self._shared = self._shared, None
        if file is not None:
            self._close(file.fd)
            if not self.shared_refs.referenced(file.base_offset):
                self._doomed_shared.add(file.base_offset)

    def load_shared_refs(self, rows: Iterable[tuple[bytes, bytes]]) -> None:
        """The stored `shared_refs` rows (at open, and when a failed commit reloads the store); the next shared file
        is numbered past every one on disk or named."""
        self.shared_refs.load(rows)
        self._doomed_shared.clear()
        self._next_shared = max([self._next_shared, *(number + 1 for number in self.shared_files()),
                                 *(number + 1 for number in self.shared_refs.files())])

    def _file_for(self, partition_id: int, base_offset: int) -> _Appending:
        """The partition's file to append to: the open one, its newest file reopened, or a new one named by
        ``base_offset``."""
        file = self._appending.get(partition_id)
        if file is not None:
            self._appending.move_to_end(partition_id)
            if file.size < FILE_ROLL_BYTES:
                return file
            self._close_appending(partition_id)
        else:
            bases = self.file_bases(partition_id)
            if bases and bases[-1] < base_offset and (partition_id, bases[-1]) not in self._doomed:
                reopened = self._reopen(partition_id, bases[-1])
                if reopened is not None:
                    return reopened
        return self._create(partition_id, base_offset)

    def _reopen(self, partition_id: int, base_offset: int) -> _Appending | None:
        fd = os.open(self._path(partition_id, base_offset), os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        status = os.fstat(fd)
        if status.st_nlink > 1 or status.st_size >= FILE_ROLL_BYTES:  # shared with a checkpoint, or full
            os.close(fd)
            return None
        return self._remember(partition_id, _Appending(base_offset, fd, status.st_size))

    def _create(self, partition_id: int, base_offset: int) -> _Appending:
        directory = self._directory(partition_id)
        if not os.path.isdir(directory):
            os.makedirs(directory, exist_ok=True)
            if self.sync:
                _fsync_directory(self.root)
        path = self._path(partition_id, base_offset)
        try:  # a file of this name holds no committed batch (see the module docstring): replace, never truncate
            os.unlink(path)
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        if self.sync:
            _fsync_directory(directory)
        return self._remember(partition_id, _Appending(base_offset, fd, 0))

    def _remember(self, partition_id: int, file: _Appending) -> _Appending:
        self._appending[partition_id] = file
        while len(self._appending) > OPEN_FILES:
            self._close_appending(next(iter(self._appending)))
        return file

    def _close_appending(self, partition_id: int) -> None:
        file = self._appending.pop(partition_id, None)
        if file is not None:
            self._close(file.fd)

    def seal(self) -> None:
        """Stop appending to the files open now (before they are linked elsewhere, or after a failed write)."""
        self.wait_for_writes()
        for partition_id in list(self._appending):
            self._close_appending(partition_id)
        self._seal_shared()

    # -- deleting ---------------------------------------------------------------------------------

    def plan_drop_below(self, partition_id: int, first_kept: int, everything: bool) -> list[bytes]:
        """Doom the files holding only batches below ``first_kept`` (every file of the partition when
        ``everything``: the truncation passed the end of the log), deleted by `drop_planned` once the truncation's
        WriteBatch is durable. Batches written after this in the same commit go to a new file. Returns the keys of
        the `shared_refs` rows the truncation passed, for its WriteBatch to delete."""
        bases = self.file_bases(partition_id)
        pairs = zip(bases, bases[1:], strict=False)
        dead = bases if everything else [base for base, after in pairs if after <= first_kept]
        for base_offset in dead:
            self._forget(partition_id, base_offset)
            self._doomed.add((partition_id, base_offset))
        return self._doom_shared(*self.shared_refs.drop_below(partition_id, first_kept))

    def plan_drop_partitions(self, partition_ids: Iterable[int]) -> list[bytes]:
        """Doom the partitions' files; the keys of their `shared_refs` rows, for the deletion's WriteBatch. Most of a
        topic's partitions hold no file open and nothing in a shared file: asking each everything took 10 ms of a
        5,000-partition deletion's turn."""
        doomed = self._doomed_partitions
        keys: list[bytes] = []
        for partition_id in partition_ids:
            doomed.add(partition_id)
            if partition_id in self._appending or partition_id in self._read_bases:
                self._forget(partition_id, None)
            if self.shared_refs.holds(partition_id):
                keys.extend(self._doom_shared(*self.shared_refs.drop_partition(partition_id)))
        return keys

    def drop_shared_ref(self, file: int, partition_id: int) -> list[bytes]:
        """The partition holds nothing in shared ``file`` any more: the key of its row, to delete."""
        return self._doom_shared(*self.shared_refs.drop(file, partition_id))

    def _doom_shared(self, row_keys: list[bytes], emptied: list[int]) -> list[bytes]:
        """Doom the shared files left without a row (the one open for appending once it is sealed)."""
        appending = self._shared.base_offset if self._shared is not None else None
        self._doomed_shared.update(file for file in emptied if file != appending)
        return row_keys

    def drop_planned(self, before: Callable[[], None] | None = None) -> bool:
        """Delete what was doomed since the last call, on the drops' thread once ``before`` (the log's sync) has
        returned (`FileDrops`); whether there was anything. Their descriptors are closed now, and listings leave
        them out from now on."""
        if not self._doomed and not self._doomed_partitions and not self._doomed_shared:
            return False
        files: list[str] = []
        trees: list[str] = []
        for partition_id, base_offset in sorted(self._doomed):
            self._forget(partition_id, base_offset)
            files.append(self._path(partition_id, base_offset))
        with_files = set(self.partitions()) if len(self._doomed_partitions) > 1 else self._doomed_partitions
        for partition_id in sorted(self._doomed_partitions):
            self._forget_partition(partition_id)
            if partition_id in with_files:
                trees.append(self._directory(partition_id))
        for number in sorted(self._doomed_shared):
            if not self.shared_refs.referenced(number):
                self._forget(SHARED, number)
                files.append(self._path(SHARED, number))
        self.cancel_planned()
        self._drops.drop(files, trees, before)
        return True

    def wait_for_drops(self) -> None:
        """Return once the files handed over for deletion are gone (or their sync failed and they stay)."""
        self._drops.wait()

    def has_planned(self) -> bool:
        return bool(self._doomed or self._doomed_partitions or self._doomed_shared)

    def cancel_planned(self) -> None:
        """The commit that would have made the deletions durable failed: keep the files (a failed commit reloads
        `shared_refs` from disk, so a shared file it doomed is named again)."""
        self._doomed.clear()
        self._doomed_partitions.clear()
        self._doomed_shared.clear()

    def doom_if_unreferenced(self, partition_id: int, base_offset: int, referenced: Iterable[bytes]) -> None:
        """Doom a partition's file no pointer in ``referenced`` (the rows that could name it) points into any
        more: `drop_planned` deletes it."""
        size = POINTER.size
        if not any(len(value) == size and file_of(value) == base_offset for value in referenced):
            self._doomed.add((partition_id, base_offset))

    def _forget_partition(self, partition_id: int) -> None:
        """Close every descriptor of a deleted partition and forget its shared-file allowance."""
        self._forget(partition_id, None)
        self._small_bytes.pop(partition_id, None)

    def _unlink(self, owner: int, base_offset: int) -> None:
        self._forget(owner, base_offset)
        try:
            os.unlink(self._path(owner, base_offset))
        except FileNotFoundError:
            pass

    def _forget(self, partition_id: int, base_offset: int | None) -> None:
        """Close the descriptors of a file (of every file of the partition when ``base_offset`` is None)."""
        appending = self._appending.get(partition_id)
        if appending is not None and base_offset in (None, appending.base_offset):
            self._close_appending(partition_id)
        bases = [base_offset] if base_offset is not None else list(self._read_bases.get(partition_id, ()))
        for base in bases:
            fd = self._reading.pop((partition_id, base), None)
            if fd is not None:
                self._close_reader(partition_id, base, fd)

    def drop_orphans(self, next_offsets: Mapping[int, int]) -> None:
        """At a writable open: delete the directories of partitions that no longer exist (a topic deletion that
        stopped before its files went), files whose name is at or past the partition's next offset (written by
        a commit that never reached RocksDB) and shared files no `shared_refs` row names (the same, or emptied
        by a commit that was durable before they were deleted)."""
        for partition_id in self.partitions():
            next_offset = next_offsets.get(partition_id)
            if next_offset is None:
                self._forget_partition(partition_id)
                shutil.rmtree(self._directory(partition_id), ignore_errors=True)
                continue
            for base_offset in self.file_bases(partition_id):
                if base_offset >= next_offset:
                    self._unlink(partition_id, base_offset)
        for number in self.shared_files():
            if not self.shared_refs.referenced(number):
                self._unlink(SHARED, number)

    # -- copies -----------------------------------------------------------------------------------

    def link_into(self, root: str) -> None:
        """Every file, hard-linked (copied across file systems) under ``root``: a checkpoint's batches. The files
        open for appending are sealed first, so no store appends to an inode it shares."""
        self.seal()
        for owner in [*self.partitions(), SHARED]:
            bases = self.file_bases(owner)
            if not bases:
                continue
            target = os.path.join(root, os.path.basename(os.path.dirname(self._path(owner, 0))))
            os.makedirs(target, exist_ok=True)
            for base_offset in bases:
                source = self._path(owner, base_offset)
                destination = os.path.join(target, os.path.basename(source))
                try:
                    os.link(source, destination)
                except OSError as error:
                    if error.errno != errno.EXDEV:
                        raise
                    shutil.copyfile(source, destination)

    def close(self) -> None:
        self.seal()
        self._drops.close()
        if self._writer is not None:
            self._writer.shutdown()
            self._writer = None
        while self._reading:
            os.close(self._reading.popitem()[1])
        self._read_bases.clear()


def _perform(io: list[_FileWrite], sync: bool) -> tuple[int, int]:
    """The writer thread's part of `BatchFiles.write_ahead` (writev and fdatasync release the GIL); the time it took
    (ns) and the bytes it wrote."""
    started = _clock_ns()
    for fd, buffers in io:
        _write_all(fd, buffers)
    if sync:
        for fd in dict.fromkeys(fd for fd, _ in io):
            os.fdatasync(fd)
    return _clock_ns() - started, sum(len(buffer) for _, buffers in io for buffer in buffers)


_IOV_MAX = 1024
"""Buffers one writev may take on Linux."""


def _write_all(fd: int, buffers: list[bytes | memoryview]) -> None:
    """writev until every byte is written (a short write continues where it stopped)."""
    for start in range(0, len(buffers), _IOV_MAX):
        _write_some(fd, buffers[start:start + _IOV_MAX])


def _write_some(fd: int, buffers: list[bytes | memoryview]) -> None:
    total = sum(len(buffer) for buffer in buffers)
    written = os.writev(fd, buffers)
    while written < total:
        remaining: list[bytes | memoryview] = []
        skipped = 0
        for buffer in buffers:
            if skipped + len(buffer) <= written:
                skipped += len(buffer)
                continue
            start = max(written - skipped, 0)
            remaining.append(memoryview(buffer)[start:])
            skipped += len(buffer)
        done = os.writev(fd, remaining)
        if done <= 0:
            raise OSError(errno.EIO, "writev wrote nothing")
        written += done


def _fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
