"""Where the batch files are and how they are read: their paths and listings, a batch or a run of adjacent batches
read by pointer, and the pieces a Fetch answer sends (`FileRange` for long runs, short runs gathered into one
buffer), through a bounded set of descriptors kept open for reading.

A mixin of `BatchFiles`, which appends, syncs and deletes the same files: every read needs only the root, the
descriptors it keeps and the drops under way, never the appending side's state.
"""

from __future__ import annotations

import ctypes
import os
import resource
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import cast

from logwright.core.errors import CorruptState

from .batch_pointers import LAST_OFFSET_DELTA, POINTER, SHARED, SHARED_POINTER, locate
from .file_drops import FileDrops
from .file_ranges import BatchPieces, FileRange

OPEN_FILES = max(64, min(4096, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4))
"""Descriptors kept open for appending, and as many for reading (least recently used closed first): a quarter
of the process's limit each, at most 4096. With 1,000 partitions written at once, 512 made every commit reopen
files (1,000 keyed partitions: 4.5 CPU s/GB at 512, 3.8 at 4096)."""
RANGES_OPEN = max(16, min(4096, resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 8))
"""`FileRange` descriptors open at once (answers being sent), at most: an eighth of the process's limit."""
_SUFFIX = ".batches"


class BatchFileReads:
    """The batch files' paths and reads (`BatchFiles` inherits them)."""

    root: str
    missing_ok: bool
    _reading: OrderedDict[tuple[int, int], int]
    _read_bases: dict[int, set[int]]
    _drops: FileDrops

    def _directory(self, partition_id: int) -> str:
        return os.path.join(self.root, str(partition_id))

    def _path(self, owner: int, base_offset: int) -> str:
        """A file of partition ``owner``, named by its base offset; or shared file number ``base_offset``."""
        directory = "shared" if owner == SHARED else str(owner)
        return os.path.join(self.root, directory, f"{base_offset:020d}{_SUFFIX}")

    def shared_files(self) -> list[int]:
        """The numbers of the shared files, ascending."""
        return self.file_bases(SHARED)

    def file_bases(self, partition_id: int) -> list[int]:
        """The base offsets naming a partition's files, ascending (the shared files' numbers for `SHARED`)."""
        directory = os.path.dirname(self._path(partition_id, 0))
        going = self._drops.pending()  # asked before the listing: see `FileDrops.pending`
        if directory in going:
            return []
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return []
        return sorted(int(name[: -len(_SUFFIX)]) for name in names
                      if name.endswith(_SUFFIX) and (not going or os.path.join(directory, name) not in going))

    def partitions(self) -> list[int]:
        going = self._drops.pending()
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return sorted(int(name) for name in names
                      if name.isdigit() and (not going or os.path.join(self.root, name) not in going))

    def file_size(self, partition_id: int, base_offset: int) -> int | None:
        try:
            return os.stat(self._path(partition_id, base_offset)).st_size
        except FileNotFoundError:
            return None

    def read(self, partition_id: int, pointer: bytes) -> bytes | None:
        """The batch ``pointer`` names; ``None`` only when ``missing_ok`` and its file is gone."""
        owner, base_offset, position, length = locate(partition_id, pointer)
        fd = self._reader(owner, base_offset)
        if fd is None:
            return None
        data = os.pread(fd, length, position)
        if len(data) != length:
            raise CorruptState(f"{self._path(owner, base_offset)} ends before the batch at {position} "
                               f"({length} bytes): was it cut short by a power loss without fsync?")
        return data

    def read_run(self, partition_id: int, pointers: Sequence[bytes]) -> list[bytes | None]:
        """The batches of ``pointers``, adjacent in one file (`follows`), read with one pread."""
        if len(pointers) == 1:
            return [self.read(partition_id, pointers[0])]
        owner, base_offset, start, _ = locate(partition_id, pointers[0])
        _, _, last_position, last_length = locate(partition_id, pointers[-1])
        fd = self._reader(owner, base_offset)
        if fd is None:
            return [None] * len(pointers)
        length = last_position + last_length - start
        data = os.pread(fd, length, start)
        if len(data) != length:
            raise CorruptState(f"{self._path(owner, base_offset)} ends before the batches at {start} "
                               f"({length} bytes): was it cut short by a power loss without fsync?")
        batches: list[bytes | None] = []
        for pointer in pointers:
            _, _, position, size = locate(partition_id, pointer)
            batches.append(data[position - start:position - start + size])
        return batches

    def pieces(self, partition_id: int, rows: Iterable[tuple[int, bytes, bytes | memoryview | None]], max_bytes: int,
               end_offset: int | None, ranges_from: int) -> BatchPieces:
        """The batches a read for a socket takes from ``rows`` (base offset, stored value: the batch or a pointer,
        and the batch's bytes when the caller has them already), the ones that follow the read's offset, chosen as
        `tail_cache.collect_batches` chooses (at least one, then more while they fit in ``max_bytes``, none based
        above ``end_offset``). A run of them adjacent in one file of at least ``ranges_from`` bytes becomes one
        `FileRange`; a shorter run is the bytes given, or read with one pread. The pieces say the offset after the
        last batch chosen (`BatchPieces.next_offset`), which bounds the aborted transactions a Fetch lists.

        One loop, each pointer unpacked once: an object per pointed batch, a generator between them and a
        second pass to find the runs cost 1.7 us a batch, 100 us of a 1 MB Fetch of 16 KB batches.
        """
        pieces = BatchPieces()
        reads: list[tuple[int, int, int, int]] = []
        run: list[bytes] = []
        run_bytes: list[bytes | memoryview | None] = []
        run_size = run_file = run_end = -1
        chosen = total = 0
        unpack, pointer_size = POINTER.unpack, POINTER.size
        unpack_shared, shared_size = SHARED_POINTER.unpack, SHARED_POINTER.size
        for base_offset, value, data in rows:
            if end_offset is not None and base_offset > end_offset:
                break
            size = len(value)
            pointed = size <= shared_size
            if size == pointer_size:
                file, position, length, last_delta = unpack(value)
            elif size == shared_size:
                file, position, length, last_delta = unpack_shared(value)
            else:
                length = size
                (last_delta,) = LAST_OFFSET_DELTA.unpack_from(value, 23)
            if chosen and total + length > max_bytes:
                break
            pieces.next_offset = base_offset + last_delta + 1
            chosen += 1
            total += length
            if run and not (pointed and size == run_size and file == run_file and position == run_end):
                self._add_run(pieces, reads, partition_id, run, run_bytes, ranges_from)
                run, run_bytes = [], []
            if pointed:
                run.append(value)
                run_bytes.append(data)
                run_size, run_file, run_end = size, file, position + length
            else:
                if reads:
                    self._gather(pieces, reads)
                pieces.append(value)
            if total >= max_bytes:
                break
        if run:
            self._add_run(pieces, reads, partition_id, run, run_bytes, ranges_from)
        if reads:
            self._gather(pieces, reads)
        return pieces

    def _add_run(self, pieces: BatchPieces, reads: list[tuple[int, int, int, int]], partition_id: int,
                 run: list[bytes], run_bytes: list[bytes | memoryview | None], ranges_from: int) -> None:
        """A run of adjacent batches as pieces: a `FileRange` when long, the bytes given when the caller has them all,
        else a read to gather (``reads``: owner, file, position, length)."""
        owner, base_offset, start, _ = locate(partition_id, run[0])
        _, _, last_position, last_length = locate(partition_id, run[-1])
        length = last_position + last_length - start
        if length < ranges_from or FileRange.open_now >= RANGES_OPEN:
            if None in run_bytes:
                reads.append((owner, base_offset, start, length))
                return
            if reads:
                self._gather(pieces, reads)
            pieces.extend(cast(list[bytes | memoryview], run_bytes))
            return
        fd = self._reader(owner, base_offset)
        if fd is None:
            return
        if os.fstat(fd).st_size < start + length:
            raise CorruptState(f"{self._path(owner, base_offset)} ends before the batches at {start} "
                               f"({length} bytes): was it cut short by a power loss without fsync?")
        if reads:
            self._gather(pieces, reads)
        pieces.append(FileRange(os.dup(fd), start, length))

    def _gather(self, pieces: BatchPieces, reads: list[tuple[int, int, int, int]]) -> None:
        """Read the short runs listed (consecutive in the answer, not in the files: a partition's batches in the
        shared file lie between other partitions') into one buffer, appended as one piece, and empty ``reads``.

        One read per run straight into its place: read into a bytes object each and joined with the answer's other
        small parts (`framing.Pieces`), every byte was copied twice in Python's memory, and the join of a 50 MB
        answer made the broker page-fault its way through a fresh 50 MB; a third of a Fetch's CPU when a consumer
        read 1,000 partitions that ProducerPerformance had filled 16 KB batch by batch. A run whose file is gone
        (``missing_ok``) is left out."""
        buffer = unfilled(sum(length for _, _, _, length in reads))  # every byte read over or cut off below
        view = memoryview(buffer)
        filled = 0
        try:
            for owner, base_offset, start, length in reads:
                fd = self._reader(owner, base_offset)  # asked now: a file opened for a later run may close this one's
                if fd is None:
                    continue
                if os.preadv(fd, [view[filled:filled + length]], start) != length:
                    raise CorruptState(f"{self._path(owner, base_offset)} ends before the batches at {start} "
                                       f"({length} bytes): was it cut short by a power loss without fsync?")
                filled += length
        finally:
            view.release()
            reads.clear()
        if filled < len(buffer):
            del buffer[filled:]
        if buffer:
            pieces.append(buffer)

    def _reader(self, partition_id: int, base_offset: int) -> int | None:
        key = (partition_id, base_offset)
        fd = self._reading.get(key)
        if fd is not None:
            self._reading.move_to_end(key)
            return fd
        path = self._path(partition_id, base_offset)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            if self.missing_ok:
                return None
            raise CorruptState(f"a stored batch points into {path}, which does not exist") from None
        self._reading[key] = fd
        self._read_bases.setdefault(partition_id, set()).add(base_offset)
        while len(self._reading) > OPEN_FILES:
            (closed_partition, closed_base), closed = self._reading.popitem(last=False)
            self._close_reader(closed_partition, closed_base, closed)
        return fd

    def _close_reader(self, partition_id: int, base_offset: int, fd: int) -> None:
        os.close(fd)
        bases = self._read_bases[partition_id]
        bases.discard(base_offset)
        if not bases:
            del self._read_bases[partition_id]


UNFILLED_FROM = 32 * 1024
"""`unfilled` takes its memory as malloc gives it from this size on (below it zeroing costs less than the C call)."""
_new_bytearray = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_ssize_t)(
    ("PyByteArray_FromStringAndSize", ctypes.pythonapi))


def unfilled(size: int) -> bytearray:
    """A ``bytearray`` of ``size`` bytes its caller reads over before anyone sees them.

    ``bytearray(size)`` zeroes every byte first, which for the short runs a Fetch of 1,000 partitions gathers
    (`BatchFiles._gather`) was a pass over the whole answer's memory for bytes overwritten at once: 3.5% of the
    broker's CPU over the wire (perf, session 58), 2% of a read of 1,000 partitions' 96 KB each in process (55.2 ms
    against 56.3, medians of 8). From `UNFILLED_FROM` bytes the buffer comes from CPython's
    ``PyByteArray_FromStringAndSize(NULL, size)`` through ctypes (0.3 us for 100 KB against 1.4 zeroed), whose bytes
    are whatever malloc's memory held: the caller must fill or cut off every byte before the buffer leaves it.
    ``size`` is the broker's own (the lengths its pointers name), never a client's."""
    if size < UNFILLED_FROM:
        return bytearray(size)
    buffer: bytearray = _new_bytearray(None, size)
    return buffer
