"""Which partitions hold batches in which shared batch file: the rows that decide when a shared file may go.

Why: a shared file (`batch_files`) holds the first batches of many small partitions, so no one partition's
retention or deletion may delete it. Each (file, partition) pair that holds batches there has a row in the
``index`` column family, put in the WriteBatch that holds the batches' pointers, with the lowest and highest base
offset the partition has there. A truncation deletes the rows of its partition that it passed, a topic deletion
every row of its partitions, both in their own WriteBatch; a file left with no row is deleted once that WriteBatch
is durable. Rows, not a scan of every pointer at open: a restart reads one row per (file, partition) pair, not one
per stored batch.

Pure bookkeeping, no I/O: the store puts and deletes the rows this hands it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

SHARED_REF_KIND = b"S"
"""The ``index`` rows' kind byte (the time index's is ``T``)."""
_KEY = struct.Struct(">cQI")
_SPAN = struct.Struct(">QQ")
FIRST_KEY = SHARED_REF_KIND
END_KEY = b"T"
"""Every row sorts from `FIRST_KEY` (inclusive) to `END_KEY` (exclusive)."""


def ref_key(file: int, partition_id: int) -> bytes:
    return _KEY.pack(SHARED_REF_KIND, file, partition_id)


def parse_ref(key: bytes, value: bytes) -> tuple[int, int, int, int]:
    """(file, partition id, first base offset, last base offset) of a row."""
    _, file, partition_id = _KEY.unpack(key)
    first, last = _SPAN.unpack(value)
    return file, partition_id, first, last


class SharedRefs:
    """The rows, in memory: each shared file's partitions and the base offsets they span there."""

    def __init__(self) -> None:
        self._spans: dict[int, dict[int, tuple[int, int]]] = {}
        """file -> partition -> (first base offset, last base offset)"""
        self._files_of: dict[int, set[int]] = {}
        """partition -> the shared files it holds batches in"""
        self._changed: dict[tuple[int, int], None] = {}
        """(file, partition) pairs written since the last `take_rows`, in the order they were first written."""

    def load(self, rows: Iterable[tuple[bytes, bytes]]) -> None:
        """Replace everything with the stored rows (at open, and when a failed commit reloads the store)."""
        self._spans.clear()
        self._files_of.clear()
        self._changed.clear()
        for key, value in rows:
            file, partition_id, first, last = parse_ref(key, value)
            self._spans.setdefault(file, {})[partition_id] = (first, last)
            self._files_of.setdefault(partition_id, set()).add(file)

    def wrote(self, file: int, partition_id: int, base_offset: int) -> None:
        """A batch of ``partition_id`` based at ``base_offset`` was appended to ``file``."""
        partitions = self._spans.setdefault(file, {})
        span = partitions.get(partition_id)
        if span is None:
            partitions[partition_id] = (base_offset, base_offset)
            self._files_of.setdefault(partition_id, set()).add(file)
        elif base_offset > span[1]:
            partitions[partition_id] = (span[0], base_offset)
        else:
            partitions[partition_id] = (min(span[0], base_offset), span[1])
        self._changed[(file, partition_id)] = None

    def take_rows(self) -> list[tuple[bytes, bytes]]:
        """The rows to put for the pairs written since the last call (dropped ones excepted)."""
        rows = []
        for file, partition_id in self._changed:
            span = self._spans.get(file, {}).get(partition_id)
            if span is not None:
                rows.append((ref_key(file, partition_id), _SPAN.pack(*span)))
        self._changed.clear()
        return rows

    def drop_below(self, partition_id: int, first_kept: int) -> tuple[list[bytes], list[int]]:
        """A truncation of ``partition_id`` below ``first_kept``: the keys of the rows it passed (every batch they
        span is gone) and the files left without any row."""
        doomed = [file for file in self._files_of.get(partition_id, ())
                  if self._spans[file][partition_id][1] < first_kept]
        return self._drop(partition_id, doomed)

    def holds(self, partition_id: int) -> bool:
        """Whether the partition has batches in any shared file."""
        return bool(self._files_of.get(partition_id))

    def drop_partition(self, partition_id: int) -> tuple[list[bytes], list[int]]:
        """The partition is deleted: the keys of all its rows and the files left without any."""
        held = self._files_of.get(partition_id)
        return self._drop(partition_id, list(held)) if held else ([], [])

    def drop(self, file: int, partition_id: int) -> tuple[list[bytes], list[int]]:
        """The partition holds nothing in ``file`` any more (a compaction slice rewrote what it held there)."""
        return self._drop(partition_id, [file] if file in self._files_of.get(partition_id, ()) else [])

    def _drop(self, partition_id: int, files: list[int]) -> tuple[list[bytes], list[int]]:
        emptied = []
        for file in sorted(files):
            partitions = self._spans[file]
            del partitions[partition_id]
            if not partitions:
                del self._spans[file]
                emptied.append(file)
        held = self._files_of.get(partition_id)
        if held is not None:
            held.difference_update(files)
            if not held:
                del self._files_of[partition_id]
        return [ref_key(file, partition_id) for file in sorted(files)], emptied

    def span(self, file: int, partition_id: int) -> tuple[int, int] | None:
        return self._spans.get(file, {}).get(partition_id)

    def referenced(self, file: int) -> bool:
        return file in self._spans

    def files(self) -> set[int]:
        """Every file some row names."""
        return set(self._spans)

    def __len__(self) -> int:
        """How many rows there are."""
        return sum(len(partitions) for partitions in self._spans.values())
