"""Produce and consume throughput over the Kafka wire: logwright beside Tansu, in one run, same clients.

Each peer is started fresh (``bench/brokers.py``: logwright on a temp data dir with its default
durability, Tansu with memory storage). For every repeat and record size a new one-partition topic is
filled by a librdkafka producer (``acks=all``) and read back from offset 0 by a librdkafka consumer; the
peers take turns within a repeat, in an order that rotates, so drift on this shared machine does not
favour one of them. The table shows medians of msg/s and MB/s (value bytes) and the ratio of logwright
to the reference peer; every single run is kept in the JSON output.

    .venv/bin/python bench/produce_consume.py [--repeats 5] [--records 100:500000,1024:100000]
        [--scale 0.2] [--peers logwright,tansu] [--profile out.svg|out.prof|out.txt] [--tmp-root /dev/shm]
        [--markdown report.md] [--json runs.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402 - bench/ is a folder of scripts, not a package
from wire_workload import Measurement, librdkafka_version, produce_then_consume  # noqa: E402

DEFAULT_RECORDS = "100:500000,1024:100000"


@dataclass(frozen=True, slots=True)
class Run:
    """One timed workload: which peer, produce or consume, and what it measured."""

    peer: str
    workload: str
    repeat: int
    measurement: Measurement


def parse_records(spec: str, scale: float) -> dict[int, int]:
    """``"100:300000,1024:60000"`` -> {record bytes: record count}, counts multiplied by ``scale``."""
    sizes: dict[int, int] = {}
    for item in spec.split(","):
        size, _, count = item.partition(":")
        sizes[int(size)] = max(1, int(int(count) * scale))
    return sizes


def run_once(peer: brokers.RunningPeer, record_bytes: int, records: int, repeat: int) -> list[Run]:
    produced, consumed = produce_then_consume(peer.bootstrap, record_bytes, records)
    return [Run(peer.name, "produce", repeat, produced), Run(peer.name, "consume", repeat, consumed)]


def measure(names: list[str], sizes: dict[int, int], repeats: int, workdir: Path,
            options: dict[str, dict[str, str]], say: Callable[[str], None]) -> list[Run]:
    """Start every peer, run all repeats with the peers taking turns, stop every peer."""
    runs: list[Run] = []
    with brokers.running_all(names, workdir, options, say) as started:
        for repeat in range(repeats):
            for record_bytes, records in sizes.items():
                for peer in brokers.in_turn(started, repeat):
                    new = run_once(peer, record_bytes, records, repeat)
                    runs += new
                    say(f"#{repeat + 1} {peer.name:10} {record_bytes:5} B  " + "  ".join(
                        f"{r.workload} {r.measurement.msg_per_s:9,.0f} msg/s {r.measurement.mb_per_s:6.1f} MB/s"
                        for r in new))
    return runs


def _median(runs: list[Run], peer: str, workload: str, record_bytes: int) -> tuple[float, float, str]:
    chosen = [r.measurement for r in runs
              if r.peer == peer and r.workload == workload and r.measurement.record_bytes == record_bytes]
    if not chosen:
        return float("nan"), float("nan"), ""
    spread = f"{min(m.mb_per_s for m in chosen):.1f}–{max(m.mb_per_s for m in chosen):.1f}"
    return (statistics.median(m.msg_per_s for m in chosen), statistics.median(m.mb_per_s for m in chosen),
            spread)


def markdown(runs: list[Run], names: list[str], sizes: dict[int, int], subject: str, reference: str,
             repeats: int) -> str:
    """Medians per workload and size, the MB/s range over repeats, and subject/reference ratios."""
    header = ["workload", "record"]
    for name in names:
        header += [f"{name} msg/s", f"{name} MB/s", f"{name} MB/s range"]
    ratio = subject in names and reference in names and subject != reference
    if ratio:
        header.append(f"{subject}/{reference}")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for workload in ("produce", "consume"):
        for record_bytes, records in sizes.items():
            row = [workload, f"{record_bytes} B × {records:,}"]
            medians = {}
            for name in names:
                msgs, mbs, spread = _median(runs, name, workload, record_bytes)
                medians[name] = msgs
                row += [f"{msgs:,.0f}", f"{mbs:.1f}", spread]
            if ratio:
                row.append(f"{medians[subject] / medians[reference]:.2f}")
            lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    lines.append(f"Medians of {repeats} repeats; librdkafka {librdkafka_version()}, acks=all, one partition, "
                 "MB/s counts value bytes (10^6).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default="logwright,tansu", help="comma-separated names from bench/brokers.py")
    parser.add_argument("--records", default=DEFAULT_RECORDS, help="SIZE:COUNT,... record bytes and counts")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every record count")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--durability", default="wal", choices=["wal", "fsync"], help="logwright's")
    parser.add_argument("--profile", help="profile logwright: a .prof (cProfile), .svg or .txt (py-spy) path")
    parser.add_argument("--reference", default="tansu", help="the peer ratios are taken against")
    parser.add_argument("--tmp-root", type=Path, help="where the peers' work dirs go (e.g. /dev/shm: logwright "
                        "on tmpfs, to separate the broker's cost from this disk's)")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--json", type=Path, help="write every run here")
    args = parser.parse_args(argv)

    from rich.console import Console  # noqa: PLC0415

    console = Console(stderr=True)
    names = [n for n in args.peers.split(",") if n]
    sizes = parse_records(args.records, args.scale)
    logwright_options = {"durability": args.durability}
    if args.profile:
        logwright_options["profile"] = str(Path(args.profile).resolve())
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="logwright-bench-", dir=args.tmp_root) as tmp:
        runs = measure(names, sizes, args.repeats, Path(tmp), {"logwright": logwright_options},
                       lambda text: console.print(text, highlight=False))
    table = markdown(runs, names, sizes, "logwright", args.reference, args.repeats)
    console.print(f"took {time.monotonic() - began:.0f} s", highlight=False)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    if args.json:
        args.json.write_text(json.dumps([{**asdict(r), "mb_per_s": r.measurement.mb_per_s,
                                          "msg_per_s": r.measurement.msg_per_s} for r in runs], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
