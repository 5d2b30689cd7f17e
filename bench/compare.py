"""Apache Kafka, Tansu and logwright side by side: the same workloads, one session, one report and one plot.

Each workload (compare_api.Workload, listed through WORKLOAD_MODULES) measures every peer it supports once
per repeat; the rounds go repeat by repeat over all workloads and the peers take turns in an order that
rotates, so the drift of this shared machine is spread over everyone. The shared brokers (bench/brokers.py)
start on first use and are stopped at the end, however the run ends. Results: ``OUT.md`` (a table per
workload: median (min–max) per broker, ratios to Kafka, the targets), ``OUT.png`` (ratios to Kafka) and
``OUT.json`` (every sample, so ``--from-json`` rebuilds the report without measuring again).

    make bench-compare [BENCH_ARGS="--quick"]  # every workload 5 times (3 times, most: 33 min); --quick < 3 min
    .venv/bin/python bench/compare.py --small --only curve,perf_tools,groups,connections  # every point, small sizes
    .venv/bin/python bench/compare.py [--quick|--small] [--repeats 5] [--scale 1.0] [--only latency,memory]
    .venv/bin/python bench/compare.py --name "curve: 1 KiB keyed records, 1,000 partitions"  # one point
        [--peers kafka,tansu,logwright] [--durability wal|fsync] [--tmp-root /dev/shm]
        [--out bench/results/compare] [--from-json bench/results/compare.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gc
import importlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402
from compare_api import (  # noqa: E402
    PEER_NAMES,
    QUIET_GIVE_UP_S,
    QUIET_SHARE,
    QUIET_WINDOW_S,
    Context,
    NotApplicable,
    OwnRatio,
    Workload,
    release_page_cache,
)
from compare_report import Sample, markdown  # noqa: E402

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"

WORKLOAD_MODULES = ("throughput", "curves", "perf_tools", "idempotent_produce", "scale_curves", "idle_consumers",
                    "latency", "memory", "share_consume", "share_under_load", "startup", "admin_pauses")
"""Modules of bench/ that define ``WORKLOADS: list[Workload]`` (and may define ``OWN_RATIOS: tuple[OwnRatio, ...]``);
the report follows this order."""


def load_workloads(only: Sequence[str] = ()) -> list[Workload]:
    """Every registered workload, or those whose module or name contains one of ``only``."""
    found: list[Workload] = []
    for module in WORKLOAD_MODULES:
        for workload in importlib.import_module(module).WORKLOADS:
            if not only or any(word in module or word in workload.name for word in only):
                found.append(workload)
    return found


def load_own_ratios(workloads: Sequence[Workload]) -> list[OwnRatio]:
    """The modules' ``OWN_RATIOS`` whose two workloads are both among ``workloads``."""
    names = {workload.name for workload in workloads}
    return [own for module in WORKLOAD_MODULES for own in getattr(importlib.import_module(module), "OWN_RATIOS", ())
            if own.of in names and own.to in names]


def measure_one(workload: Workload, ctx: Context, peer: str, repeat: int) -> Sample:
    """One call of ``measure``, once the other shared brokers are quiet and the page cache dropped
    (`release_page_cache`): a value per metric, or n/a, or the failure, never an exception."""
    waited = ctx.quiesce(peer)
    dropped = workload.drop_page_cache and release_page_cache()
    load = os.getloadavg()[0]
    # What this process keeps (modules, the samples so far) frozen: the groups', connections' and Metadata clients
    # time requests in this process, and a full collection during a measurement walks only what it made since
    gc.collect()
    gc.freeze()
    try:
        values = {key: float(value) for key, value in workload.measure(ctx, peer).items()}
    except NotApplicable as exc:
        return Sample(workload.name, peer, repeat, not_applicable=str(exc), load=load, quiet_wait_s=waited,
                      page_cache_dropped=dropped)
    except Exception as exc:  # noqa: BLE001 - a failed repeat is reported, the session goes on
        return Sample(workload.name, peer, repeat, error=f"{type(exc).__name__}: {exc}"[:400], load=load,
                      quiet_wait_s=waited, page_cache_dropped=dropped)
    return Sample(workload.name, peer, repeat, values, load=load, quiet_wait_s=waited, page_cache_dropped=dropped)


def run(workloads: Sequence[Workload], ctx: Context, repeats: int, names: Sequence[str],
        samples: list[Sample]) -> None:
    """Warm-ups, then round after round: every workload, every supported peer in a rotating order.

    Samples are appended as they come, so an interrupted session still reports what it measured.
    """
    for workload in workloads:
        if workload.warmup:
            warm = dataclasses.replace(ctx, scale=ctx.scale * workload.warmup_scale)
            for peer in workload.peers(tuple(names)):
                sample = measure_one(workload, warm, peer, -1)
                ctx.say(f"warm-up {workload.name} {peer}: {'ok' if sample.values else sample.error}")
    rounds = max((min(repeats, w.repeats or repeats) for w in workloads), default=0)
    for repeat in range(rounds):
        for workload in workloads:
            if repeat >= min(repeats, workload.repeats or repeats):
                continue
            for peer in brokers.in_turn(workload.peers(tuple(names)), repeat):
                sample = measure_one(workload, ctx, peer, repeat)
                samples.append(sample)
                shown = ", ".join(f"{k} {v:,.1f}" for k, v in sample.values.items())
                ctx.say(f"#{repeat + 1} {workload.name} | {peer}: "
                        f"{shown or sample.error or sample.not_applicable} (load {sample.load:.1f}, "
                        f"waited {sample.quiet_wait_s:.1f} s for the others to go quiet)")


def _command(args: list[str]) -> str:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return (done.stdout + done.stderr).strip().splitlines()[0] if (done.stdout + done.stderr).strip() else "?"


def _quiet_summary(samples: Sequence[Sample], waited: bool = True) -> str:
    """The report's line on the quiet wait; ``waited`` is false for a run at --quick's sizes, which never waits."""
    if not waited:
        return "none: a run at --quick's sizes (--quick, --small) does not wait for the other brokers"
    waits = [s.quiet_wait_s for s in samples]
    if not waits:
        return "?"
    gave_up = sum(wait >= QUIET_GIVE_UP_S for wait in waits)
    return (f"every other broker under {QUIET_SHARE:.0%} of a core for {QUIET_WINDOW_S:g} s first: waited "
            f"{sum(waits):.0f} s in all, at most {max(waits):.1f} s"
            + (f", gave up waiting {gave_up} times ({QUIET_GIVE_UP_S:g} s each)" if gave_up else ""))


def _page_cache_summary(samples: Sequence[Sample], keeps: frozenset[str] = frozenset()) -> str:
    """The report's line on `release_page_cache`: how many samples started with the page cache dropped; ``keeps``
    names the workloads that keep it (``drop_page_cache`` false)."""
    if not samples:
        return "?"
    kept = {s.workload for s in samples if s.workload in keeps}
    chosen = [s for s in samples if s.workload not in keeps]
    dropped = sum(s.page_cache_dropped for s in chosen)
    parts = []
    if chosen:
        how = ("written back and dropped before each measurement, so no peer pays for the page cache an earlier one "
               "kept (the first write into memory the host took back costs kernel time: "
               "compare_api.release_page_cache)")
        if dropped < len(chosen):
            how += f": only before {dropped} of {len(chosen)} (this process may not write drop_caches)"
        parts.append(how)
    if kept:
        parts.append(f"kept for {', '.join(sorted(kept))} (it reads stored files back: dropped, the disk is timed)")
    return "; ".join(parts)


def _cpu_instrument() -> str:
    """How this machine lets the brokers' CPU be read (a group made and removed to find out)."""
    from cgroup_cpu import Meter, describe  # noqa: PLC0415

    meter = Meter.create("probe")
    if meter is not None:
        meter.remove()
    return describe(meter)


def machine(began: float, load_start: float, samples: Sequence[Sample], args: argparse.Namespace,
            keeps_page_cache: frozenset[str] = frozenset()) -> dict[str, str]:
    """Where and how the figures were taken: hardware, versions, load, session settings."""
    import confluent_kafka  # noqa: PLC0415
    from brokers import tansu_binary  # noqa: PLC0415
    from kafka_peer import POM, java  # noqa: PLC0415

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    kafka_version = re.search(r"<kafka.version>([^<]+)<", POM.read_text())
    loads = [s.load for s in samples if s.load == s.load]
    during = f"{min(loads):.1f}–{max(loads):.1f}" if loads else "?"
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    commit = _command(["git", "-C", str(HERE), "describe", "--always", "--dirty"])
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "run": f"{'quick' if args.quick else 'full'}, {args.repeats} repeats, scale {args.scale:g}, "
               f"took {(time.monotonic() - began) / 60:.1f} min",
        "machine": f"{os.cpu_count()} cores ({cpu}), {ram:.0f} GiB RAM, "
                   f"{platform.system()} {platform.release()}",
        "load average (1 min)": f"{load_start:.1f} at start, {during} during the measurements, "
                                f"{os.getloadavg()[0]:.1f} at the end (other work shares these 2 cores)",
        "quiet before each measurement": _quiet_summary(samples, waited=not args.quick),
        "page cache": _page_cache_summary(samples, keeps_page_cache),
        "broker CPU": _cpu_instrument(),
        "Python": platform.python_version(),
        "Java": _command([java(), "-version"]),
        "client": f"confluent-kafka {confluent_kafka.__version__}, librdkafka {confluent_kafka.libversion()[0]}",
        "Apache Kafka": f"{kafka_version.group(1) if kafka_version else '?'} (KRaft, one node, -Xmx512m, "
                        "log dirs under the session's temp dir)",
        "Tansu": f"{_command([str(tansu_binary()), '--version'])} (memory:// storage)",
        "logwright": f"{commit} (durability {args.durability}, data under the session's temp dir)",
        "temp dir": str(args.tmp_root or tempfile.gettempdir()),
    }


def write(out: Path, workloads: Sequence[Workload], samples: Sequence[Sample], info: dict[str, str],
          title: str) -> None:
    """``out``.md, .png and .json, side by side (the Markdown embeds the PNG by its file name)."""
    from compare_plot import plot  # noqa: PLC0415 - matplotlib only here

    out.parent.mkdir(parents=True, exist_ok=True)
    png = out.with_suffix(".png")
    plot(workloads, samples, png, f"{title}: ratios to Apache Kafka ({info['date']})")
    out.with_suffix(".md").write_text(markdown(workloads, samples, info, png.name, title, load_own_ratios(workloads)))
    out.with_suffix(".json").write_text(json.dumps(
        {"title": title, "machine": info, "samples": [dataclasses.asdict(s) for s in samples]}, indent=1))


@dataclasses.dataclass(frozen=True, slots=True)
class RunShape:
    """What the size flags ask for."""

    small_sizes: bool
    smoke_only: bool
    repeats: int
    out_name: str


def run_shape(quick: bool, smoke: bool, small: bool, repeats: int | None) -> RunShape:
    """``--quick`` (``--smoke`` is its earlier name) runs the workloads marked smoke, a point or two of each curve, at
    small sizes, once: under 3 minutes, as issue 18 asks. ``--small`` runs every workload picked at those sizes, twice:
    what ``--quick`` ran until session 19, 12 minutes for the curves alone."""
    smoke_only = quick or smoke
    name = "compare-smoke" if smoke else "compare-quick" if quick else "compare-small" if small else "compare"
    return RunShape(small_sizes=smoke_only or small, smoke_only=smoke_only,
                    repeats=repeats or (1 if smoke_only else 2 if small else 5), out_name=name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, 1 repeat, only the workloads marked "
                        "smoke (a point or two of each curve): under 3 minutes")
    parser.add_argument("--smoke", action="store_true", help="the same as --quick (its earlier name)")
    parser.add_argument("--small", action="store_true", help="every workload picked at --quick's sizes, 2 repeats")
    parser.add_argument("--repeats", type=int, help="rounds of every workload (default 5, --small 2, --quick 1)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every workload's size")
    parser.add_argument("--only", default="", help="comma-separated words: workloads whose module or name match")
    parser.add_argument("--name", action="append", default=[], help="a workload's whole name (names hold commas, so "
                        "--only cannot pick one point of a curve); repeatable, added to what --only picks")
    parser.add_argument("--peers", default=",".join(PEER_NAMES), help="subset of " + ",".join(PEER_NAMES))
    parser.add_argument("--durability", default="wal", choices=["wal", "fsync"], help="logwright's")
    parser.add_argument("--tmp-root", type=Path, help="where the brokers' work dirs go (default: the temp dir)")
    parser.add_argument("--out", type=Path, help="output path without suffix (default bench/results/compare, "
                        "or compare-quick, -smoke, -small with those; only compare.* is tracked by git)")
    parser.add_argument("--from-json", type=Path, help="rebuild the report and plot from a run's JSON")
    args = parser.parse_args(argv)
    shape = run_shape(args.quick, args.smoke, args.small, args.repeats)
    args.quick, args.repeats = shape.small_sizes, shape.repeats
    out = args.out or RESULTS / shape.out_name
    words = [w for w in args.only.split(",") if w]
    picked = {id(w) for w in load_workloads(words)} if words or not args.name else set()
    chosen = [w for w in load_workloads() if id(w) in picked or w.name in args.name]
    # --quick keeps the smoke points of what was picked; a workload named, or a pick without smoke points, runs whole
    workloads = [w for w in chosen if w.smoke or w.name in args.name or not shape.smoke_only] or chosen

    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        write(out, workloads, [Sample(**s) for s in saved["samples"]], saved["machine"], saved["title"])
        return 0

    from rich.console import Console  # noqa: PLC0415

    console = Console(stderr=True)
    say: Callable[[str], None] = lambda text: console.print(text, highlight=False, soft_wrap=True)  # noqa: E731
    began, load_start = time.monotonic(), os.getloadavg()[0]
    names = [n for n in args.peers.split(",") if n]
    title = "logwright, Apache Kafka and Tansu side by side" + (" (quick run)" if args.quick else "")
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory(prefix="logwright-compare-", dir=args.tmp_root) as tmp:
        ctx = Context(Path(tmp), quick=args.quick, scale=args.scale, say=say,
                      options={"logwright": {"durability": args.durability}})
        try:
            run(workloads, ctx, args.repeats, names, samples)
        except KeyboardInterrupt:
            say("interrupted: writing the report of what was measured")
            title += " (interrupted)"
        finally:
            ctx.close()
    keeps = frozenset(w.name for w in workloads if not w.drop_page_cache)
    write(out, workloads, samples, machine(began, load_start, samples, args, keeps), title)
    say(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.png')} in {(time.monotonic() - began) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
