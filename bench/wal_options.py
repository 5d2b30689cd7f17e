"""What a 1 MB commit costs in rocksdict, and what RocksDB options and the order of puts change about it.

The produce hot path for 1 KiB records (librdkafka sends ~1 MB batches) is dominated by the RocksDB write,
which holds the GIL (`rocksdict_gil.py`): the write-ahead log's software CRC32C, the copies into the WAL
buffer, the memtable and the page cache. Variants run alternately in fresh databases, ``--rounds`` times,
``--writes`` commits each (one ~1 MB value plus the small rows a produce commit carries); the figures are the
25th percentile and median of the calling thread's CPU time per commit, which other jobs on this shared
machine inflate less than wall time, and the whole process's CPU per MB (RocksDB's flush thread included).

    .venv/bin/python bench/wal_options.py [--rounds 5] [--writes 300] [--tmp-root DIR] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from rocksdict import DBCompressionType, Options, Rdict, WriteBatch, WriteOptions

VALUE_BYTES = 1_035_000
SMALL_ROWS = ((b"e" * 8, b"x" * 60), (b"i" * 16, b"o" * 8), (b"s" * 24, b"y" * 90), (b"m" * 20, b"q" * 8))
"""An event, a time-index entry, a projection state row and a covered-sequence row, as a produce commit has."""


def _options(configure: Callable[[Options], object]) -> Options:
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    configure(options)
    return options


VARIANTS: dict[str, tuple[Callable[[Options], object], bool]] = {
    "value first": (lambda o: None, False),
    "value last": (lambda o: None, True),
    "value last + recycle 4 WALs": (lambda o: o.set_recycle_log_file_num(4), True),
    "value last + no compression": (lambda o: o.set_compression_type(DBCompressionType.none()), True),
    "value last + blob files": (lambda o: (o.set_enable_blob_files(True), o.set_min_blob_size(4096)), True),
    "value last + pipelined write": (lambda o: o.set_enable_pipelined_write(True), True),
    "value last + 4 MB WAL buffer": (lambda o: o.set_writable_file_max_buffer_size(4 << 20), True),
}
"""name -> (options, whether the big value is put after the small rows). Blob files: values of 4 KiB and more."""


def run(configure: Callable[[Options], object], value_last: bool, writes: int, root: str | None) -> tuple[float, ...]:
    """(p25, median) thread CPU us per commit and process CPU ms per MB for one fresh database."""
    value = os.urandom(VALUE_BYTES)
    with tempfile.TemporaryDirectory(prefix="wal-options-", dir=root) as tmp:
        db = Rdict(str(Path(tmp) / "db"), _options(configure))
        options = WriteOptions()
        times = []
        process_started = time.process_time()
        for i in range(writes):
            started = time.thread_time()
            batch = WriteBatch(raw_mode=True)
            if not value_last:
                batch.put(i.to_bytes(8, "big"), value)
            for key, small in SMALL_ROWS:
                batch.put(key + i.to_bytes(8, "big"), small)
            if value_last:
                batch.put(i.to_bytes(8, "big"), value)
            db.write(batch, options)
            times.append(time.thread_time() - started)
        process = time.process_time() - process_started
        db.close()
    times.sort()
    return (times[len(times) // 4] * 1e6, times[len(times) // 2] * 1e6, process / (writes * VALUE_BYTES / 1e6) * 1e3)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--writes", type=int, default=300)
    parser.add_argument("--tmp-root", help="where the databases go (default: the system temp dir)")
    parser.add_argument("--only", help="comma-separated variant names")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(VARIANTS)
    results: dict[str, list[tuple[float, ...]]] = {name: [] for name in names}
    for round_number in range(args.rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            results[name].append(run(*VARIANTS[name], args.writes, args.tmp_root))
    print(f"{'variant':<28} {'commit p25 us':>14} {'commit median us':>17} {'process ms/MB':>14}   "
          f"(medians of {args.rounds} rounds x {args.writes} commits of {VALUE_BYTES:,} B)")
    for name, rows in results.items():
        p25, median, per_mb = (statistics.median(row[i] for row in rows) for i in range(3))
        print(f"{name:<28} {p25:14.0f} {median:17.0f} {per_mb:14.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
