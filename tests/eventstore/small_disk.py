"""A real full disk for tests: a small tmpfs mounted over a test directory, and a file that fills it.

Mounting needs root and a sandbox that allows ``mount``; where either is missing the test is skipped
with the reason (CI runs as root on machines that allow it, so there it runs).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(path: Path, size_mb: int) -> Iterator[Path]:
    """``path`` as a fresh tmpfs of ``size_mb`` MiB for the duration; skips the test where it cannot mount."""
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill the disk needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (sandbox?): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory: Path, leave_bytes: int = 0) -> Path:
    """Write ``directory/filler`` until the file system has at most ``leave_bytes`` free; returns the file.

    Deleting the file is how a test frees the space again.
    """
    filler = directory / "filler"
    chunk = b"\0" * (64 * 1024)
    with open(filler, "wb") as handle:
        while (free := free_bytes(directory) - leave_bytes) > 0:
            try:
                handle.write(chunk[: min(len(chunk), free)])
                handle.flush()
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                break
    return filler


def free_bytes(directory: Path) -> int:
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize
