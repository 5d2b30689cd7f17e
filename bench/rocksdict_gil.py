"""Does rocksdict release the GIL while it writes? A thread counts in a loop while the main thread writes.

If ``Rdict.write`` released the GIL, the counting thread would run on the other core for the whole write and
advance by about (its free rate x the write's duration); if the write holds it, the counter can only move at
the interpreter's switch points just before and after the call (a few ms' worth at most, whatever the write
lasts). ``flush_wal`` is measured the same way for comparison. Result on rocksdict 0.3.29 (2 cores):

    write  430 x 1 KiB, unsynced  1-3 ms      counter advanced 0           (expected ~10,000 if released)
    write  43,000 x 1 KiB          120-400 ms  advanced 60-170 thousand     (expected 1-3 million)
    flush_wal(sync=True) after an unsynced 44 MB write, on ext4: 40-200 ms, the counter keeps its free rate

So the write holds the GIL (rocksdict's ``Rdict::write`` has no ``allow_threads``; ``flush``, ``flush_wal``,
``compact_range`` and ``get_batch`` do), and a writer thread cannot overlap a commit with request handling.

    .venv/bin/python bench/rocksdict_gil.py [DIR]      # DIR: where the scratch database goes (e.g. /dev/shm)
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from rocksdict import Options, Rdict, WriteBatch, WriteOptions


class Counter(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.count = 0
        self.running = True

    def run(self) -> None:
        while self.running:
            self.count += 1

    def rate_per_s(self) -> float:
        before = self.count
        time.sleep(0.05)
        return (self.count - before) / 0.05


def during(counter: Counter, call: Callable[[], object]) -> tuple[float, int]:
    """Seconds the call took and how far the counter moved meanwhile."""
    before = counter.count
    started = time.perf_counter()
    call()
    return time.perf_counter() - started, counter.count - before


def main(directory: str | None) -> None:
    path = tempfile.mkdtemp(dir=directory)
    db = Rdict(path, Options(raw_mode=True))
    value = os.urandom(1024)
    counter = Counter()
    counter.start()
    try:
        for sync in (False, True):
            options = WriteOptions()
            options.sync = sync
            for records in (430, 43_000):
                batch = WriteBatch(raw_mode=True)
                for _ in range(records):
                    batch.put(os.urandom(16), value)
                rate = counter.rate_per_s()
                seconds, moved = during(counter, lambda b=batch, o=options: db.write(b, o))  # type: ignore[misc]
                print(f"write {records:6} x 1 KiB sync={sync!s:5}: {seconds * 1e3:7.1f} ms, counter moved {moved:9,}"
                      f" (~{rate * seconds:11,.0f} if the GIL were released)")
        batch = WriteBatch(raw_mode=True)
        for _ in range(43_000):
            batch.put(os.urandom(16), value)
        db.write(batch, WriteOptions())  # unsynced: the fsync below has 44 MB to write (on a disk, not tmpfs)
        rate = counter.rate_per_s()
        seconds, moved = during(counter, lambda: db.flush_wal(True))
        print(f"flush_wal(sync=True): {seconds * 1e3:7.1f} ms, counter moved {moved:9,} (~{rate * seconds:11,.0f})")
    finally:
        counter.running = False
        counter.join()
        db.close()
        shutil.rmtree(path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
