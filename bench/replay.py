"""Replay speed: `logwright check` (one process) against `logwright replay --spark` on each master, same log.

Writes a log of ``--events`` events through `RocksEventStore` (produced batches round-robin over
``--partitions`` partitions of one topic, with a consumer group's offset commit every ``--commit-every``
batches), then runs the commands one after the other as a user would, in the same run (on a shared machine
only ratios measured together mean something), and prints events/s of each, each replay's speed relative
to `check`, and local[2] against local[1] (how the replay scales with cores). Times include process start
(and for Spark the session start, 10-50 s on 2 cores), which is what a user waits for; the replay's own
line gives the time after its session started.

    .venv/bin/python bench/replay.py [--events 1000000] [--partitions 8] [--spark local[1] local[2]] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from logwright.core.config.configs import default_registry as default_configs
from logwright.core.events import OffsetCommitted
from logwright.core.log.catalog import COUNTER_KEY, create_topic, topic_key
from logwright.core.log.partition_log import append_batch, partition_key
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore
from rich.console import Console
from rich.table import Table

LOGWRIGHT = str(Path(sys.executable).with_name("logwright"))
_TICKS = os.sysconf("SC_CLK_TCK")
_BATCH = bytes(61) + b"x" * 100  # a 61-byte header the store never parses for appends, then "records"


def write_log(path: Path, events: int, partitions: int, commit_every: int) -> int:
    store = RocksEventStore(path)
    try:
        store.append([create_topic(None, store.state("catalog", COUNTER_KEY), "bench", partitions, (),
                                   b"bench".ljust(16, b"\x00"), default_configs())])
        partition_ids = store.state("catalog", topic_key("bench")).partition_ids
        produced = 0
        while store.last_sequence < events:
            partition_id = partition_ids[produced % partitions]
            decided = append_batch(store.state("partitions", partition_key(partition_id)), 10, len(_BATCH), produced)
            store.append([decided], [StoredBatch(partition_id, decided.base_offset, _BATCH)])
            produced += 1
            if produced % commit_every == 0 and store.last_sequence < events:
                store.append([OffsetCommitted("bench-group", "bench", produced % partitions, decided.base_offset)])
            if produced % 1000 == 0:
                store.commit()
        store.commit()
        return store.last_sequence
    finally:
        store.close()


def tree_cpu_seconds(root: int) -> dict[int, float]:
    """CPU seconds (user + system) so far of ``root`` and every process below it, by pid, from /proc."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = (int(fields[11]) + int(fields[12])) / _TICKS
    tree = {root}
    grew = True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        grew = bool(below)
        tree |= below
    return {pid: times[pid] for pid in tree if pid in times}


def timed(*args: str) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds of the command and every process under it (Spark's JVM and Python workers,
    sampled from /proc every 0.2 s, so a process living less than that is missed), and its last line.
    CPU time is what the machine's load does not change: on a shared machine wall times alone say little."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:  # pipes could fill and block
        process = subprocess.Popen([LOGWRIGHT, *args], stdout=out, stderr=err, text=True)
        seen: dict[int, float] = {}
        while process.poll() is None:
            seen |= tree_cpu_seconds(process.pid)
            time.sleep(0.2)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if process.returncode != 0:
        raise SystemExit(f"logwright {' '.join(args)} failed ({process.returncode}):\n{stdout}\n{stderr}")
    return elapsed, sum(seen.values()), stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--commit-every", type=int, default=10)
    parser.add_argument("--spark", nargs="+", default=["local[1]", "local[2]"], help="Spark masters to replay on")
    parser.add_argument("--keep", type=Path, help="write (or reuse) the log here instead of a temporary directory")
    args = parser.parse_args()
    console = Console()
    root = args.keep or Path(tempfile.mkdtemp(prefix="logwright-bench-replay-"))
    data = root / "data"
    try:
        if not data.exists():
            started = time.perf_counter()
            total = write_log(data, args.events, args.partitions, args.commit_every)
            console.print(f"wrote {total:,} events in {time.perf_counter() - started:.1f} s")
        console.print(f"load average before: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")
        check_s, check_cpu, check_out = timed("check", "--data-dir", str(data))
        events = int(check_out.split(": ")[1].split()[0])
        table = Table("command", "seconds", "CPU seconds", "events/s", "speed / check", "output")
        table.add_row("logwright check", f"{check_s:.1f}", f"{check_cpu:.1f}", f"{events / check_s:,.0f}", "1.00",
                      check_out)
        replays: dict[str, float] = {}
        for master in args.spark:
            replay_s, replay_cpu, replay_out = timed("replay", "--data-dir", str(data), "--spark", master)
            replays[master] = replay_s
            table.add_row(f"logwright replay --spark {master}", f"{replay_s:.1f}", f"{replay_cpu:.1f}",
                          f"{events / replay_s:,.0f}", f"{check_s / replay_s:.2f}", replay_out)
        console.print(table)
        console.print(f"load average after: {' '.join(f'{load:.1f}' for load in os.getloadavg())}")
        if {"local[1]", "local[2]"} <= replays.keys():
            console.print(f"scaling, local[2] / local[1] speed: {replays['local[1]'] / replays['local[2]']:.2f}")
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
