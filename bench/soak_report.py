"""bench/soak.py's results: the table over time, the summary, the verdict, and bench/results/soak.md."""

from __future__ import annotations

import math
import platform
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from soak_probe import BrokerReading

BROKER_PROBLEM_MARKS = (" ERROR ", " CRITICAL ", "Traceback")


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass(frozen=True, slots=True)
class Row:
    at: float
    """``time.monotonic()`` of the reading."""
    phase: str
    broker: BrokerReading
    window: dict[str, float]


@dataclass(slots=True)
class Run:
    args: dict[str, Any]
    load_started: float
    """``time.monotonic()`` of the first record offered: the origin of the table's times."""
    rows: list[Row]
    before: BrokerReading
    loaded: BrokerReading
    after: BrokerReading
    back_after_s: float | None
    drain_s: float
    produced: int
    consumed: int
    missing: int
    duplicates: int
    redelivered: int
    errors: dict[str, int]
    first_errors: list[str]
    broker_log_problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.errors and not self.broker_log_problems

    def load_rows(self) -> list[Row]:
        return [row for row in self.rows if row.phase == "load"]


def broker_log_problems(log_path: Path, keep: int = 10) -> list[str]:
    """ERROR or CRITICAL lines and tracebacks the broker logged (its WARNINGs are not counted)."""
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    found = [line for line in lines if any(mark in line for mark in BROKER_PROBLEM_MARKS)]
    return found[:keep] + ([f"... and {len(found) - keep} more"] if len(found) > keep else [])


def _ms(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def table(run: Run) -> list[str]:
    header = ["t (s)", "phase", "RSS MiB", "fds (sockets / store / other)", "connections", "tasks", "produced",
              "consumed", "produce p50 / p99 ms", "e2e p50 / p99 ms", "broker / client CPU %",
              "broker / client run-queue wait %", "client loop lag p99 ms", "broker Python blocks (k)", "errors"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in run.rows:
        b, w = row.broker, row.window
        cells = [f"{row.at - run.load_started:.0f}", row.phase, f"{b.rss_mib:.1f}",
                 f"{b.fds} ({b.sockets} / {b.store_files} / {b.other_fds})", str(b.connections), str(b.tasks),
                 f"{w['produced']:.0f}", f"{w['consumed']:.0f}", f"{_ms(w['produce p50'])} / {_ms(w['produce p99'])}",
                 f"{_ms(w['e2e p50'])} / {_ms(w['e2e p99'])}", f"{w['broker cpu %']:.0f} / {w['client cpu %']:.0f}",
                 f"{w['broker wait %']:.0f} / {w['client wait %']:.0f}",
                 _ms(w["loop lag p99"]), f"{b.python_blocks / 1000:.0f}", f"{w['errors']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def progress(row: Row, origin: float) -> str:
    """One line per sample while the run goes on."""
    b, w = row.broker, row.window
    return (f"{row.at - origin:6.0f} s {row.phase:6} RSS {b.rss_mib:6.1f} MiB, {b.connections} connections, "
            f"{b.tasks} tasks, {b.fds} fds; {w['produced']:.0f} produced, {w['consumed']:.0f} consumed; produce p99 "
            f"{_ms(w['produce p99'])} ms, e2e p99 {_ms(w['e2e p99'])} ms; {w['errors']:.0f} errors")


def _spread(values: list[float]) -> str:
    kept = [v for v in values if not math.isnan(v)]
    if not kept:
        return "–"
    return f"first {_ms(kept[0])}, last {_ms(kept[-1])}, best {_ms(min(kept))}, worst {_ms(max(kept))}"


def summary(run: Run) -> str:
    load = run.load_rows()
    rss = [row.broker.rss_mib for row in load]
    half = load[len(load) // 2:] if load else []
    b, x, a = run.before, run.loaded, run.after
    back = (f"back within {run.back_after_s:.1f} s" if run.back_after_s is not None
            else f"NOT back after {run.args['grace']:g} s")
    lines = [
        f"verdict: {'PASS' if run.passed else 'FAIL'} ({sum(run.errors.values())} errors, "
        f"{len(run.broker_log_problems)} broker log problems)",
        f"records: {run.produced:,} produced (acks=all), {run.consumed:,} consumed, {run.missing} lost, "
        f"{run.duplicates} duplicates, {run.redelivered} share redeliveries; drained in {run.drain_s:.1f} s",
        f"connections at peak: {max((row.broker.connections for row in load), default=0)} "
        f"(of which one is the probe's)",
        f"broker RSS MiB: before {b.rss_mib:.1f}, under load {min(rss, default=math.nan):.1f}–"
        f"{max(rss, default=math.nan):.1f}, over the second half of the load "
        f"{half[0].broker.rss_mib if half else math.nan:.1f} -> {half[-1].broker.rss_mib if half else math.nan:.1f}, "
        f"after the clients left {a.rss_mib:.1f}; broker Python blocks (k) before {b.python_blocks / 1000:.0f}, "
        f"last load sample {x.python_blocks / 1000:.0f}, after {a.python_blocks / 1000:.0f}",
        f"produce p99 ms per window: {_spread([row.window['produce p99'] for row in load])}",
        f"end-to-end p99 ms per window: {_spread([row.window['e2e p99'] for row in load])}",
        f"client loop lag p99 ms per window: {_spread([row.window['loop lag p99'] for row in load])}",
        f"CPU % of one core under load: broker {_spread([row.window['broker cpu %'] for row in load])}; client "
        f"{_spread([row.window['client cpu %'] for row in load])}",
        f"run-queue wait % of the event loop threads (runnable, no CPU free): broker "
        f"{_spread([row.window['broker wait %'] for row in load])}; client "
        f"{_spread([row.window['client wait %'] for row in load])}",
        f"after the clients left ({back}): connections {b.connections} -> {x.connections} -> {a.connections}, "
        f"tasks {b.tasks} -> {x.tasks} -> {a.tasks}, sockets {b.sockets} -> {x.sockets} -> {a.sockets}, other fds "
        f"{b.other_fds} -> {x.other_fds} -> {a.other_fds} (before -> last load sample -> after); store files "
        f"{b.store_files} -> {x.store_files} -> {a.store_files}",
    ]
    if run.errors:
        lines.append("errors: " + ", ".join(f"{kind} {count}" for kind, count in sorted(run.errors.items())))
        lines += [f"  {text}" for text in run.first_errors]
    lines += [f"broker log: {line}" for line in run.broker_log_problems]
    if a.tasks != b.tasks and min(a.tasks, b.tasks) >= 0:
        grown = {name: count - b.tasks_by_coroutine.get(name, 0) for name, count in a.tasks_by_coroutine.items()
                 if count != b.tasks_by_coroutine.get(name, 0)}
        lines.append(f"tasks that differ from before: {grown}")
    return "\n".join(lines)


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=False).stdout.strip() or "?"
    except OSError:
        return "?"


def _load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def write(run: Run, path: Path) -> None:
    args = run.args
    method = (
        f"One logwright broker (`wal` durability, a fresh data dir) and one asyncio client process with "
        f"{args['client_connections']} connections: {args['producers']} aiokafka producers (one connection each, "
        f"acks=all, linger 0) offering {args['rate']:g} records/s of {args['record_bytes']} B in all, each paced "
        f"from a phase of its own; {args['classic_consumers']} aiokafka classic consumer-group members (two "
        "connections each: leader and coordinator) in groups of 3 on 3-partition topics, committing every second; "
        f"{args['share_consumers']} share-group consumers of the bundled `logwright.client` (one connection "
        "each) in groups of 4 on 4-partition topics, acknowledging every record (grouped acks). Every group reads "
        "its own topic and producers go round the topics, so each record is consumed once. Consumers join "
        f"before the first record; then {args['duration']:g} s of producing, sampled every {args['interval']:g} s: "
        "broker RSS (/proc VmRSS), its descriptors by kind (/proc fd: sockets, the store's files, the rest), its "
        "open connections and asyncio tasks (LogwrightBrokerStats, key 32007, over the probe's own connection), "
        "and in that window the produce latency (send() to acknowledgement) and end-to-end latency (send() to "
        "the consumer holding the record) p50/p99, nearest rank, plus the client event loop's lag (every client "
        "shares it: a high lag means the client side, not the broker, was behind), the CPU of broker and client "
        "(% of one core) and how long each one's event-loop thread was runnable with no CPU free (/proc schedstat "
        "run-queue wait: latency the shared machine caused). Then producers stop, the rest "
        "is consumed, classic members commit and leave, share consumers flush acknowledgements and leave, and the "
        f"broker gets {args['grace']:g} s to come back to its connections, tasks, sockets and other descriptors "
        "from before the clients came; then every classic group's committed offsets and every share group's cursor "
        "must be at the end of what was produced. The store's open files (RocksDB tables and WAL) are shown apart, "
        "they follow the data. RSS is expected to rise for the first minutes and then level off: the store keeps "
        "the newest batches in memory up to 64 MiB of batch bytes (eventstore/tail_cache.py; in a 40 s trace with "
        "tracemalloc the growing Python allocations were its batches and their offsets) and RocksDB fills a "
        "memtable of up to 64 MiB per column family before it flushes one to a table file. Any error fails the "
        "run: a failed send, commit or acknowledgement, a consumer that died, a record lost or delivered twice, "
        "an ERROR logged by a client, an ERROR or traceback in the broker's log."
    )
    text = [
        "# Soak: connections producing and consuming with share groups and commits",
        "",
        f"`python bench/soak.py --duration {args['duration']:g} --connections {args['connections']} --rate "
        f"{args['rate']:g}` at {_commit()}, Python {platform.python_version()}, load average at the end "
        f"{_load_average()} (2 shared cores).",
        "",
        "## Method",
        "",
        method,
        "",
        "## Summary",
        "",
        "```",
        summary(run),
        "```",
        "",
        "## Over time",
        "",
        *table(run),
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(text))
