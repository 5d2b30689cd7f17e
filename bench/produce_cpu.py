"""Produce-only A/B of logwright builds: the broker's CPU seconds per GB produced, and the client's, alternated.

Wire throughput on this shared 2-core machine swings by 2x between identical runs; the CPU a broker spends per
GB moves far less, and it is what the client loses on two cores. Each variant is a Python interpreter (a
worktree's venv runs that worktree's code); every round starts each variant's broker fresh, in a rotating
order, fills a fresh one-partition topic with a librdkafka producer (acks=all, the bench's producer settings;
a warm-up of a fifth first), having dropped the page cache (`compare_api.release_page_cache`), and reads the
broker's per-thread CPU from /proc before and after.

    .venv/bin/python bench/produce_cpu.py before=../main/.venv/bin/python after=.venv/bin/python \\
        [--rounds 8] [--records 300000] [--size 1024] [--json runs.json]

Printed per run and as medians: MB/s, broker CPU s/GB (all threads, the event-loop thread alone, and the kernel's
part of all threads), the client's CPU s/GB, and the client loop share, the part of the run the client's produce()
loop took (near 1: the client is the limit; lower: it waited for the broker's acknowledgements).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import brokers
from compare_api import release_page_cache
from confluent_kafka import Producer
from wire_workload import PRODUCER_CONFIG, create_topic, delete_topic, produce

_TICK = os.sysconf("SC_CLK_TCK")


def broker_cpu(pgid: int) -> tuple[float, float, float]:
    """(all threads, the main thread, the kernel's part of all threads) CPU seconds of the broker's process group so
    far: the kernel's part is where the page cache's first-touch faults land (bench/results/session40.md)."""
    total = main = system = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) != pgid:
                continue
            for task in (stat.parent / "task").iterdir():
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                seconds = (int(fields[11]) + int(fields[12])) / _TICK
                total += seconds
                system += int(fields[12]) / _TICK
                main += seconds if task.name == stat.parent.name else 0.0
        except (OSError, IndexError, ValueError):
            continue
    return total, main, system


def timed_produce(bootstrap: str, topic: str, records: int, size: int) -> tuple[float, float, float]:
    """(seconds until all acknowledged, seconds of the produce() loop, client CPU seconds)."""
    failures: list[object] = []
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG})
    producer.list_topics(topic, timeout=30)
    value = bytes(size)
    before = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=lambda error, _m: error and failures.append(error))
                break
            except BufferError:
                producer.poll(0.01)
    loop_s = time.perf_counter() - started
    if producer.flush(120) or failures:
        raise RuntimeError(f"produce to {topic}: {len(failures)} failed ({failures[:1]}) or unsent")
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    return seconds, loop_s, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="+", help="NAME=PYTHON, two or more")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=1024, help="record bytes")
    parser.add_argument("--tmp-root", help="where the data dirs go (default: the temp dir)")
    parser.add_argument("--json", type=Path, help="write every run here")
    args = parser.parse_args(argv)
    variants = [(name, os.path.abspath(python)) for name, python in (spec.split("=", 1) for spec in args.variants)]
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in variants}
    gb = args.records * args.size / 1e9
    with tempfile.TemporaryDirectory(prefix="produce-cpu-", dir=args.tmp_root) as tmp:
        os.chdir(tmp)  # `python -m logwright` puts its working directory first on sys.path: not a worktree's code
        for round_number in range(args.rounds):
            for name, python in brokers.in_turn(variants, round_number):
                with brokers.running("logwright", Path(tmp) / f"{name}-{round_number}", python=python) as broker:
                    warm_up = create_topic(broker.bootstrap, "warm-up")
                    produce(broker.bootstrap, warm_up, args.records // 5, args.size)
                    delete_topic(broker.bootstrap, warm_up)
                    topic = create_topic(broker.bootstrap, "cpu")
                    release_page_cache()  # the earlier rounds' files kept: new pages would cost the host's faults
                    load = os.getloadavg()[0]
                    cpu_before, main_before, system_before = broker_cpu(broker.process.pid)
                    seconds, loop_s, client_cpu = timed_produce(broker.bootstrap, topic, args.records, args.size)
                    cpu_after, main_after, system_after = broker_cpu(broker.process.pid)
                run = {"MB/s": args.records * args.size / seconds / 1e6, "broker s/GB": (cpu_after - cpu_before) / gb,
                       "event loop s/GB": (main_after - main_before) / gb,
                       "broker system s/GB": (system_after - system_before) / gb, "client s/GB": client_cpu / gb,
                       "client loop share": loop_s / seconds, "load": load}
                runs[name].append(run)
                print(f"#{round_number} {name:<12} " + "  ".join(f"{key} {value:.2f}" for key, value in run.items()),
                      flush=True)
    print(f"medians of {args.rounds} rounds, {args.records:,} records of {args.size} B:")
    for name, rows in runs.items():
        print(f"  {name:<12} " + "  ".join(f"{key} {statistics.median(row[key] for row in rows):.2f}"
                                           for key in rows[0]))
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
