"""A FUSE file system that loses what was not fsynced when its process dies: a simulated power cut.

Run as ``python -m tests.integration.power_cut_fs BACKING MOUNTPOINT``. Every path under MOUNTPOINT is
BACKING's, but data written to a file stays in this process's memory (where readers see it) until the
file is fsynced; only then is it written to BACKING and fsynced there. SIGKILL the process and unmount,
and BACKING holds exactly what a machine would keep after losing power with those writes still in its
page cache. Names (create, rename, unlink, mkdir) reach BACKING at once, as a journalling file system
keeps them; ``fallocate`` is accepted and ignored. This is the idea behind LazyFS, written anew and
reduced to what a RocksDB directory needs.

Looking up the name `SYNC_ALL` (``os.stat(MOUNTPOINT / SYNC_ALL)``, which then fails) writes back every
file, as the kernel's periodic writeback would have done long before a cut: tests use it once the
broker has started, so the cut falls on what the broker wrote since.
"""

from __future__ import annotations

import errno
import os
import sys
from dataclasses import dataclass
from typing import Any

import mfusepy

SYNC_ALL = ".power-cut-fs-sync-all"


@dataclass
class _File:
    """A file's content as programs see it, and where the part not yet written to the backing file starts."""

    content: bytearray
    dirty_from: int | None = None

    def touch(self, offset: int) -> None:
        self.dirty_from = offset if self.dirty_from is None else min(self.dirty_from, offset)


class PowerCutFS(mfusepy.Operations):  # type: ignore[misc]
    use_ns = True

    def __init__(self, backing: str) -> None:
        self.backing = backing
        self.files: dict[str, _File] = {}
        """Files written since this process started (their content in memory, synced or not)."""

    def _real(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    def _file(self, path: str) -> _File:
        file = self.files.get(path)
        if file is None:
            with open(self._real(path), "rb") as handle:
                file = self.files[path] = _File(bytearray(handle.read()))
        return file

    def _write_back(self, path: str, file: _File) -> None:
        if file.dirty_from is None:
            return
        descriptor = os.open(self._real(path), os.O_WRONLY)
        try:
            os.pwrite(descriptor, bytes(file.content[file.dirty_from:]), file.dirty_from)
            os.ftruncate(descriptor, len(file.content))
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        file.dirty_from = None

    # -- names: straight to the backing directory --------------------------------------------------

    def getattr(self, path: str, fh: Any = None) -> dict[str, Any]:
        if path == "/" + SYNC_ALL:
            for name, file in list(self.files.items()):
                self._write_back(name, file)
            raise mfusepy.FuseOSError(errno.ENOENT)
        try:
            stat = os.lstat(self._real(path))
        except OSError as error:
            raise mfusepy.FuseOSError(error.errno) from None
        attributes = {key: getattr(stat, key) for key in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size",
                                                         "st_atime_ns", "st_mtime_ns", "st_ctime_ns")}
        for key in ("st_atime", "st_mtime", "st_ctime"):
            attributes[key] = attributes.pop(key + "_ns")
        file = self.files.get(path)
        if file is not None:
            attributes["st_size"] = len(file.content)
        return attributes

    def readdir(self, path: str, fh: Any) -> list[str]:
        return [".", "..", *os.listdir(self._real(path))]

    def mkdir(self, path: str, mode: int) -> int:
        os.mkdir(self._real(path), mode)
        return 0

    def rmdir(self, path: str) -> int:
        os.rmdir(self._real(path))
        return 0

    def create(self, path: str, mode: int, fi: Any = None) -> int:
        os.close(os.open(self._real(path), os.O_WRONLY | os.O_CREAT, mode))
        self.files[path] = _File(bytearray())
        return 0

    def unlink(self, path: str) -> int:
        os.unlink(self._real(path))
        self.files.pop(path, None)
        return 0

    def rename(self, old: str, new: str) -> int:
        os.rename(self._real(old), self._real(new))
        moved = self.files.pop(old, None)
        self.files.pop(new, None)
        if moved is not None:
            self.files[new] = moved
        return 0

    def chmod(self, path: str, mode: int) -> int:
        os.chmod(self._real(path), mode)
        return 0

    def utimens(self, path: str, times: Any = None) -> int:
        return 0

    def statfs(self, path: str) -> dict[str, int]:
        stats = os.statvfs(self.backing)
        return {key: getattr(stats, key) for key in ("f_bsize", "f_frsize", "f_blocks", "f_bfree", "f_bavail",
                                                     "f_files", "f_ffree", "f_favail", "f_flag", "f_namemax")}

    # -- data: in memory until fsync ---------------------------------------------------------------

    def open(self, path: str, flags: int) -> int:
        return 0

    def read(self, path: str, size: int, offset: int, fh: Any) -> bytes:
        file = self.files.get(path)
        if file is not None:
            return bytes(file.content[offset:offset + size])
        descriptor = os.open(self._real(path), os.O_RDONLY)
        try:
            return os.pread(descriptor, size, offset)
        finally:
            os.close(descriptor)

    def write(self, path: str, data: bytes, offset: int, fh: Any) -> int:
        file = self._file(path)
        if offset > len(file.content):
            file.content.extend(bytes(offset - len(file.content)))
        file.content[offset:offset + len(data)] = data
        file.touch(offset)
        return len(data)

    def truncate(self, path: str, length: int, fh: Any = None) -> int:
        file = self._file(path)
        if length < len(file.content):
            del file.content[length:]
        else:
            file.content.extend(bytes(length - len(file.content)))
        file.touch(length)
        return 0

    def fallocate(self, path: str, mode: int, offset: int, size: int, fh: Any) -> int:
        return 0

    def fsync(self, path: str, datasync: int, fh: Any) -> int:
        file = self.files.get(path)
        if file is not None:
            self._write_back(path, file)
        return 0

    def fsyncdir(self, path: str, datasync: int, fh: Any) -> int:
        return 0

    def flush(self, path: str, fh: Any) -> int:
        return 0

    def release(self, path: str, fh: Any) -> int:
        return 0


def main() -> None:
    backing, mountpoint = sys.argv[1:3]
    mfusepy.FUSE(PowerCutFS(os.path.abspath(backing)), mountpoint, foreground=True, nothreads=True)


if __name__ == "__main__":
    main()
