"""CPU per GB of storing record batches in RocksDB against in batch files (`eventstore/batch_files.py`).

Commits ``--count`` batches of ``--size`` bytes through `RocksEventStore`, once with every batch kept in RocksDB
and once with every batch in a file, then flushes RocksDB's memtables (so the SST writes are counted). CPU is
the whole process's (RocksDB's background threads included), from getrusage.

    .venv/bin/python bench/batch_files.py --size 1000000 --count 1000
"""

from __future__ import annotations

import argparse
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from logwright.core.events import RecordsAppended  # noqa: E402
from logwright.core.log.partition_log import append_batch, partition_key  # noqa: E402
from logwright.eventstore import batch_files  # noqa: E402
from logwright.eventstore.interface import StoredBatch  # noqa: E402
from logwright.eventstore.rocksdb import RocksEventStore  # noqa: E402

from tests.eventstore.support import fake_batch, new_topic  # noqa: E402


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(where: str, size: int, count: int) -> tuple[float, float]:
    """(wall seconds, CPU seconds) to commit ``count`` batches of ``size`` bytes kept ``where``."""
    batch_files.INLINE_BELOW = 2**31 if where == "rocksdb" else 0
    batch_files.SMALL_PARTITION_BYTES = 0
    directory = Path(tempfile.mkdtemp(prefix="batch-files-"))
    try:
        store = RocksEventStore(directory / "store")
        new_topic(store, "t", 1)
        store.commit()
        payload = b"x" * (size - 61)
        started, cpu = time.perf_counter(), _cpu_seconds()
        for _ in range(count):
            decided = append_batch(store.state("partitions", partition_key(0)), 1, 0, 0)
            data = fake_batch(decided.base_offset, 1, payload)
            store.append([RecordsAppended(0, decided.base_offset, 1, len(data), 0)],
                         [StoredBatch(0, decided.base_offset, data)])
            store.commit()
        store._db.flush()  # the memtable's bytes written to an SST count too
        elapsed, used = time.perf_counter() - started, _cpu_seconds() - cpu
        store.close()
        return elapsed, used
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--count", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    gigabytes = args.size * args.count / 1e9
    for where in ("rocksdb", "files"):
        runs = sorted(run(where, args.size, args.count) for _ in range(args.repeats))
        wall, cpu = runs[len(runs) // 2]
        print(f"{where:8} {args.size:>9} B x {args.count}: {gigabytes / wall:6.2f} GB/s, "
              f"{cpu / gigabytes:5.2f} CPU s/GB (median of {args.repeats})")


if __name__ == "__main__":
    main()
