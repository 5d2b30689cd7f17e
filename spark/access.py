"""How Spark reads a data directory that a broker may be writing: never through the primary.

- Scans (the batch and streaming data sources) open a RocksDB *secondary instance* per task, in a
  scratch directory of their own that is deleted when the task ends. A secondary sees everything
  the primary has written to its WAL when it opens; tasks read a sequence or offset range fixed by
  the driver, so every task sees the same events however late it starts (the log is append-only).
- `replay` compares events with projection state, which must be cut at one moment: its driver reads
  the last sequence and every state row from one secondary instance (frozen until it catches up),
  and tasks refold events up to that sequence. A RocksDB checkpoint would not do: made from a
  secondary or read-only instance it leaves out what is only in the WAL (measured, rocksdict 0.3.29).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from logwright.eventstore.rocksdb import RocksEventStore

from .registry import replay_setup

_PREFIX = "logwright-secondary-"


def sweep_stale(scratch_dir: str | None = None) -> list[str]:
    """Remove secondary directories whose process is gone; returns them.

    Spark kills Python workers without running ``finally`` blocks (a stopped streaming query ends its
    source runner mid-poll), so a directory can outlive its task; the next reader on the host sweeps it.
    The owner's pid is in the name.
    """
    parent = scratch_dir or tempfile.gettempdir()
    removed = []
    for name in os.listdir(parent) if os.path.isdir(parent) else ():
        if not name.startswith(_PREFIX):
            continue
        pid = name[len(_PREFIX):].partition("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
            removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def secondary_store(data_dir: str, scratch_dir: str | None = None) -> Iterator[RocksEventStore]:
    """A secondary instance of ``data_dir`` (log and records only), removed with its directory after."""
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(f"no logwright data directory at {data_dir}")
    sweep_stale(scratch_dir)
    directory = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=scratch_dir)
    try:
        store = RocksEventStore(data_dir, secondary=directory, load_state=False, projections=(),
                                types=replay_setup().types)
        try:
            yield store
        finally:
            store.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
