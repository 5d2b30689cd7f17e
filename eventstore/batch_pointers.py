"""The pointer a RocksDB row holds in place of a record batch kept in a batch file (`batch_files`), and what a
stored value says about its batch whichever it is: the batch's bytes themselves, or a pointer to them.

Apart from the files because every reader of stored rows needs the format (the store's reads and writes, `check`'s
pointer walk), and none of them the files' descriptors.
"""

from __future__ import annotations

import struct

POINTER = struct.Struct(">QIIi")
"""File (its base offset), position, length, last offset delta: 20 bytes, shorter than any RecordBatch v2 (61+),
so a value's length says which it is."""
SHARED_POINTER = struct.Struct(">QQIi")
"""Into a shared file: its number, position, length, last offset delta (24 bytes)."""
SHARED = -1
"""The owner the shared files are kept under where files are keyed (owner, name): no partition has this id."""
LAST_OFFSET_DELTA = struct.Struct(">i")
"""A RecordBatch v2 header's last offset delta, at byte 23."""


def is_pointer(value: bytes) -> bool:
    return len(value) <= SHARED_POINTER.size


def is_shared(value: bytes) -> bool:
    return len(value) == SHARED_POINTER.size


def stored_length(value: bytes) -> int:
    """The batch's length, whether ``value`` is the batch or a pointer to it."""
    size = len(value)
    if size == POINTER.size:
        return int(POINTER.unpack(value)[2])
    if size == SHARED_POINTER.size:
        return int(SHARED_POINTER.unpack(value)[2])
    return size


def last_offset_delta(value: bytes) -> int:
    """The batch's last offset delta, from the batch header or from the pointer."""
    size = len(value)
    if size == POINTER.size:
        return int(POINTER.unpack(value)[3])
    if size == SHARED_POINTER.size:
        return int(SHARED_POINTER.unpack(value)[3])
    return int(LAST_OFFSET_DELTA.unpack_from(value, 23)[0])


def locate(partition_id: int, pointer: bytes) -> tuple[int, int, int, int]:
    """(owner, file, position, length) of a pointer of ``partition_id``'s: the owner is the partition for its own
    files, `SHARED` for a shared one."""
    if len(pointer) == SHARED_POINTER.size:
        file, position, length, _ = SHARED_POINTER.unpack(pointer)
        return SHARED, file, position, length
    file, position, length, _ = POINTER.unpack(pointer)
    return partition_id, file, position, length


def follows(pointer: bytes, value: bytes) -> bool:
    """``value`` points at the bytes right after ``pointer``'s, in the same file."""
    if len(value) != len(pointer) or not is_pointer(value):
        return False
    _, file, position, length = locate(0, pointer)
    _, next_file, next_position, _ = locate(0, value)
    return bool(next_file == file and next_position == position + length)


def file_of(value: bytes) -> int:
    """The file a pointer points into: the base offset naming its partition's file, or the shared file's number."""
    return locate(0, value)[1]
