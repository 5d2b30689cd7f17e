"""The two ways the benchmarks read a broker's CPU, side by side on the same runs: its cgroup's ``usage_usec``
(bench/cgroup_cpu.py, what `RunningPeer.cpu_seconds` reads where it can) and /proc's utime + stime of its process
group in 10 ms ticks (the fallback, and what every report before session 30 used).

If the two disagree by more than the ticks' rounding on a long phase, one of them misses something (a thread, a
child, a process that left the group). On short phases only the cgroup has the resolution to tell 0.4 from 0.5
s/GB.

    .venv/bin/python bench/cpu_instruments.py [--peers kafka,logwright] [--records 300000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402
from wire_workload import consume, create_topic, produce  # noqa: E402

RECORD_BYTES = 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default="kafka,logwright")
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    gigabytes = args.records * RECORD_BYTES / 1e9
    print("| broker | run | produce s/GB, cgroup | produce s/GB, ticks | consume s/GB, cgroup | consume s/GB, ticks |")
    print("|---|---|---|---|---|---|")
    for name in args.peers.split(","):
        with brokers.running(name, Path(tempfile.mkdtemp(prefix="cpu-instruments-"))) as broker:
            if broker.meter is None:
                sys.exit("no cgroup v2 group could be made here: there is nothing to compare /proc with")
            for repeat in range(args.repeats):
                topic = create_topic(broker.bootstrap, f"instruments-{repeat}", 1)
                readings = [(broker.cpu_seconds(), broker.proc_cpu_seconds())]
                produce(broker.bootstrap, topic, args.records, RECORD_BYTES)
                readings.append((broker.cpu_seconds(), broker.proc_cpu_seconds()))
                consume(broker.bootstrap, topic, args.records, RECORD_BYTES)
                readings.append((broker.cpu_seconds(), broker.proc_cpu_seconds()))
                cells = [f"{(after[i] - before[i]) / gigabytes:.2f}"
                         for before, after in zip(readings, readings[1:], strict=False) for i in (0, 1)]
                print(f"| {name} | {repeat + 1} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
