"""How Spark reads a data directory that a broker may be writing: never through the primary.

- Scans (the batch and streaming data sources) open a RocksDB *secondary instance* per task. A
  secondary sees everything the primary has written to its WAL when it opens; tasks read a sequence
  or offset range fixed by the driver, so every task sees the same events however late it starts
  (the log is append-only). The streaming source's offset polling keeps one secondary open and
  catches it up with the primary instead of opening one per poll.
- A secondary needs a scratch directory only for its info log, which RocksDB keeps open: the
  directory is removed as soon as the instance is open. Spark kills Python workers without running
  ``finally`` blocks (stopping a streaming query SIGTERMs its source runner, often while it polls),
  so a directory removed only after use would outlive every such kill; removed after opening, it can
  be left behind only by a kill during the open itself, and the next reader sweeps it.
- Tasks share one secondary per Python worker process (`shared_reader`): Spark reuses its workers, and
  opening an instance costs 0.3-0.6 s, more than reading 100 k events. The shared one catches up with
  the primary when a task asks for a sequence beyond what it has seen; ranges are bounded by the plan,
  so a reader that has seen more still returns exactly the planned events.
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

    A process killed while it opened a secondary leaves its directory; the next reader on the host
    sweeps it. The owner's pid is in the name.
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


def open_secondary(data_dir: str, scratch_dir: str | None = None) -> RocksEventStore:
    """A secondary instance of ``data_dir`` (log and records only) whose scratch directory is already gone."""
    if not os.path.isdir(data_dir):
        raise FileNotFoundError(f"no logwright data directory at {data_dir}")
    sweep_stale(scratch_dir)
    directory = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=scratch_dir)
    try:
        return RocksEventStore(data_dir, secondary=directory, load_state=False, projections=(),
                               types=replay_setup().types)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


_shared: dict[tuple[str, str | None], RocksEventStore] = {}


def shared_reader(data_dir: str, scratch_dir: str | None = None, last_sequence: int = 0) -> RocksEventStore:
    """This process's secondary instance of ``data_dir``, caught up when it has not seen ``last_sequence`` yet.

    Never closed by callers: it lives as long as the (reused) Spark worker, and a kill leaves nothing on disk.
    """
    key = (os.path.abspath(data_dir), scratch_dir)
    store = _shared.get(key)
    if store is None:
        store = _shared[key] = open_secondary(data_dir, scratch_dir)
    if store.last_sequence < last_sequence:
        store.catch_up()
    return store


def close_shared_readers() -> None:
    """Close this process's shared readers (tests; a Spark worker just exits)."""
    while _shared:
        _shared.popitem()[1].close()


@contextmanager
def secondary_store(data_dir: str, scratch_dir: str | None = None) -> Iterator[RocksEventStore]:
    """`open_secondary`, closed after use."""
    store = open_secondary(data_dir, scratch_dir)
    try:
        yield store
    finally:
        store.close()
