"""Stored batches on their way to a socket: a `FileRange` of a batch file, sent with sendfile(2), and `BatchPieces`,
what a read for a Fetch answer chose, in order.

Apart from `batch_files` because the server and the Fetch handler handle these pieces and nothing else of the files.
"""

from __future__ import annotations

import os

from logwright.core.errors import CorruptState


class FileRange:
    """Bytes of a batch file that a Fetch answer hands the socket with sendfile(2) instead of reading them into
    Python and writing them out again (`compat.server`). It holds its own descriptor, a dup of the reader's: a
    file that retention deletes, or a reader descriptor closed meanwhile, cannot pull the bytes away mid-send.
    Closed once sent; one dropped unsent closes when it is collected. At most `RANGES_OPEN` are open at once
    (``open_now``): past that, batches are read as before, so answers in flight never exhaust the descriptors."""

    __slots__ = ("fd", "offset", "length")
    open_now = 0

    def __init__(self, fd: int, offset: int, length: int) -> None:
        self.fd = fd
        self.offset = offset
        self.length = length
        FileRange.open_now += 1

    def __len__(self) -> int:
        return self.length

    def read(self) -> bytes:
        """The bytes themselves (for a transport without a socket to sendfile to)."""
        data = os.pread(self.fd, self.length, self.offset)
        if len(data) != self.length:
            raise CorruptState(f"a batch file ends before the {self.length} bytes at {self.offset}")
        return data

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            FileRange.open_now -= 1

    def __del__(self) -> None:
        self.close()


StoredPiece = bytes | bytearray | memoryview | FileRange
"""A piece of stored batches for a socket: bytes given or read (a `bytearray` gathers short runs; a `memoryview` is a
batch the tail cache holds in its request frame), or a file range."""


class BatchPieces(list[StoredPiece]):
    """What `BatchFiles.pieces` chose: the batches' bytes and file ranges, in order, and the offset after the last
    batch (-1: none chosen)."""

    __slots__ = ("next_offset",)

    def __init__(self) -> None:
        super().__init__()
        self.next_offset = -1
