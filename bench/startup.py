"""Broker start-up time with a full topic stored, and the broker's resident memory right after start-up.

Each peer is started on a fresh work dir (``bench/brokers.py``), a librdkafka producer stores ``--records``
small records (100 B by default) in one one-partition topic, and the broker is stopped cleanly (SIGINT, as
an operator would; the seconds this takes are reported too). Then, ``--repeats`` times, the broker is
started again on the same data dir and timed from the launch of its process until

- a Kafka client reads Metadata listing a broker (``ready``), and
- a consumer assigned to the last offset of the topic has that record in hand (``first fetch``: the stored
  log is found and served, not just the socket open),

and the resident memory of its process group is read as soon as Metadata answers; then it is stopped
cleanly again. Apache Kafka's JVM heap is capped at 512 MiB (bench/kafka_peer.py), its storage format
happens before the launch and is not counted. Tansu's memory storage cannot restart with data: n/a.

    .venv/bin/python bench/startup.py [--peers logwright,kafka] [--records 1000000] [--record-bytes 100]
        [--repeats 5] [--quick] [--tmp-root DIR] [--markdown report.md] [--json runs.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402 - bench/ is a folder of scripts, not a package
from compare_api import Context, Metric, Workload  # noqa: E402
from confluent_kafka import Consumer, KafkaError, TopicPartition  # noqa: E402
from wire_workload import create_topic, produce  # noqa: E402

RESTARTABLE = ("logwright", "kafka")
"""Peers that keep their records across a restart (Tansu runs on memory storage here)."""


@dataclass(frozen=True, slots=True)
class StoredTopic:
    """What a filled work dir holds: one topic of ``records`` records, and how long storing and stopping took."""

    topic: str
    records: int
    record_bytes: int
    produce_s: float
    stop_s: float


@dataclass(frozen=True, slots=True)
class Startup:
    """Seconds from the launch to Metadata and to the last record fetched; RSS when Metadata answered.

    ``data_bytes`` is the data dir's size on disk (allocated blocks: Kafka's index files are sparse).
    """

    ready_s: float
    first_fetch_s: float
    rss_bytes: int
    stop_s: float
    data_bytes: int


@dataclass(frozen=True, slots=True)
class Run:
    peer: str
    repeat: int
    startup: Startup


def stop_timed(peer: brokers.RunningPeer) -> float:
    """Stop cleanly and return how long the broker took to exit."""
    started = time.monotonic()
    peer.stop(timeout_s=120.0)
    return time.monotonic() - started


def fill(name: str, workdir: Path, records: int, record_bytes: int, **options: str) -> StoredTopic:
    """Start ``name`` on a fresh ``workdir``, store ``records`` records in a new topic, stop it cleanly."""
    peer = brokers.start(name, workdir, **options)
    try:
        topic = create_topic(peer.bootstrap, "startup")
        produced = produce(peer.bootstrap, topic, records, record_bytes)
    except BaseException:
        peer.stop()
        raise
    return StoredTopic(topic, records, record_bytes, produced.seconds, stop_timed(peer))


def fetch_offset(bootstrap: str, topic: str, offset: int, timeout_s: float = 120.0) -> None:
    """Block until a consumer assigned to ``offset`` of partition 0 has that record; raise on an error."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"startup-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "log_level": 3, **brokers.FAST_RECONNECT})
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            message = consumer.poll(0.05)
            if message is None:
                continue
            error = message.error()
            if error is None and message.offset() == offset:
                return
            if error is not None and error.code() != KafkaError._PARTITION_EOF:
                raise RuntimeError(f"fetch {topic}@{offset}: {error}")
        raise TimeoutError(f"fetch {topic}@{offset}: nothing in {timeout_s} s")
    finally:
        consumer.close()


def restart_timed(name: str, workdir: Path, stored: StoredTopic, **options: str) -> Startup:
    """Start ``name`` again on ``workdir`` (filled by :func:`fill`), time it, read its RSS, stop it cleanly."""
    data_bytes = sum(f.stat().st_blocks * 512 for f in (workdir / "data").rglob("*") if f.is_file())
    peer = brokers.start(name, workdir, **options)
    try:
        rss = peer.rss_bytes()
        fetch_offset(peer.bootstrap, stored.topic, stored.records - 1)
        first_fetch_s = time.monotonic() - peer.launched_at
    except BaseException:
        peer.stop()
        raise
    return Startup(peer.ready_s, first_fetch_s, rss, stop_timed(peer), data_bytes)


def measure(names: list[str], records: int, record_bytes: int, repeats: int, workdir: Path,
            options: dict[str, dict[str, str]], say: Callable[[str], None]) -> tuple[dict[str, StoredTopic], list[Run]]:
    """Fill every peer's work dir, then restart each peer ``repeats`` times, the peers taking turns."""
    unknown = [name for name in names if name not in RESTARTABLE]
    if unknown:
        raise ValueError(f"cannot restart with data: {', '.join(unknown)} (restartable: {', '.join(RESTARTABLE)})")
    stored: dict[str, StoredTopic] = {}
    for name in names:
        stored[name] = fill(name, workdir / name, records, record_bytes, **options.get(name, {}))
        say(f"{name:10} stored {records:,} × {record_bytes} B in {stored[name].produce_s:.1f} s, "
            f"stopped in {stored[name].stop_s:.1f} s")
    runs: list[Run] = []
    for repeat in range(repeats):
        for name in brokers.in_turn(names, repeat):
            startup = restart_timed(name, workdir / name, stored[name], **options.get(name, {}))
            runs.append(Run(name, repeat, startup))
            say(f"#{repeat + 1} {name:10} ready {startup.ready_s:6.2f} s  first fetch {startup.first_fetch_s:6.2f} s"
                f"  RSS {startup.rss_bytes / 2**20:6.0f} MiB  stop {startup.stop_s:5.2f} s")
    return stored, runs


def markdown(stored: dict[str, StoredTopic], runs: list[Run], repeats: int,
             subject: str = "logwright", reference: str = "kafka") -> str:
    """Medians (min–max) per peer of the start-up seconds and RSS, with the data dir size and stop time."""
    lines = ["| peer | ready s (Metadata) | first fetch s (last offset) | RSS MiB after start | stop s | data MiB |",
             "|---|---|---|---|---|---|"]
    medians: dict[str, tuple[float, float, float]] = {}

    def cell(values: list[float], fmt: str) -> str:
        return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"

    for name in stored:
        chosen = [run.startup for run in runs if run.peer == name]
        if not chosen:
            continue
        ready, fetch = [s.ready_s for s in chosen], [s.first_fetch_s for s in chosen]
        rss = [s.rss_bytes / 2**20 for s in chosen]
        medians[name] = (statistics.median(ready), statistics.median(fetch), statistics.median(rss))
        lines.append(f"| {name} | {cell(ready, '.2f')} | {cell(fetch, '.2f')} | {cell(rss, '.0f')} | "
                     f"{statistics.median(s.stop_s for s in chosen):.2f} | {chosen[0].data_bytes / 2**20:.0f} |")
    lines.append("")
    if subject in medians and reference in medians:
        ours, theirs = medians[subject], medians[reference]
        lines.append(f"{subject}/{reference}: ready {ours[0] / theirs[0]:.2f}, first fetch {ours[1] / theirs[1]:.2f}, "
                     f"RSS {ours[2] / theirs[2]:.2f}.")
        lines.append("")
    any_stored = next(iter(stored.values()))
    lines.append(f"{any_stored.records:,} records × {any_stored.record_bytes} B in one partition; medians "
                 f"(min–max) of {repeats} restarts timed from the process launch; clean stops (SIGINT).")
    return "\n".join(lines)


COMPARE_RECORDS = (1_000_000, 100_000)
"""Records stored in bench/compare.py's full and quick runs (100 B each)."""

_filled: dict[tuple[Path, str], tuple[Path, StoredTopic]] = {}


def compare_measure(ctx: Context, peer: str) -> dict[str, float]:
    """bench/compare.py's repeat: a private broker of ``peer`` filled once per session, restarted and timed."""
    found = _filled.get((ctx.workdir, peer))
    if found is None:
        workdir = ctx.new_dir(f"startup-{peer}")
        stored = fill(peer, workdir, ctx.size(*COMPARE_RECORDS), 100, **ctx.options.get(peer, {}))
        found = _filled[(ctx.workdir, peer)] = (workdir, stored)
        ctx.say(f"startup: {peer} stored {stored.records:,} records in {stored.produce_s:.1f} s")
    workdir, stored = found
    # a first restart, untimed, reads the broker's files back: the page cache dropped before the workloads measured
    # earlier took its program too (Kafka's jars: ready in 11.7 s against 1.7, session 40), and a restart is timed warm
    restart_timed(peer, workdir, stored, **ctx.options.get(peer, {}))
    startup = restart_timed(peer, workdir, stored, **ctx.options.get(peer, {}))
    return {"ready s": startup.ready_s, "first fetch s": startup.first_fetch_s, "RSS MiB": startup.rss_bytes / 2**20}


WORKLOADS = [
    Workload("start-up with 1 M records stored",
             (Metric("ready s", "s", higher_is_better=False, decimals=2),
              Metric("first fetch s", "s", higher_is_better=False, decimals=2),
              Metric("RSS MiB", "MiB", higher_is_better=False, decimals=0)),
             compare_measure,
             method=(f"A private broker stores {COMPARE_RECORDS[0]:,} records of 100 B ({COMPARE_RECORDS[1]:,} in a "
                     "quick run) in one one-partition topic and is stopped cleanly (SIGINT), once per session. Every "
                     "repeat starts it again on the same data dir and times from the launch of its process until a "
                     "client reads Metadata (ready) and until a consumer assigned to the last offset has that record "
                     "(first fetch), after one untimed restart that reads its files back into the page cache (the drop "
                     "before the other workloads took them); RSS is the broker's process group when Metadata answers. "
                     "Kafka's storage format happens before the launch, its heap is -Xmx512m. bench/startup.py runs it "
                     "alone."),
             not_applicable={"tansu": "Tansu runs on memory:// storage here and cannot restart with data"},
             drop_page_cache=False),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default="logwright,kafka", help="comma-separated: logwright, kafka")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5, help="restarts per peer")
    parser.add_argument("--quick", action="store_true", help="100,000 records, 2 restarts (a smoke run)")
    parser.add_argument("--tmp-root", type=Path, help="where the peers' work dirs go")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--json", type=Path, help="write every run here")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.repeats = 100_000, 2

    from rich.console import Console  # noqa: PLC0415

    console = Console(stderr=True)
    names = [n for n in args.peers.split(",") if n]
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="logwright-bench-startup-", dir=args.tmp_root) as tmp:
        stored, runs = measure(names, args.records, args.record_bytes, args.repeats, Path(tmp), {},
                               lambda text: console.print(text, highlight=False, soft_wrap=True))
    table = markdown(stored, runs, args.repeats)
    console.print(f"took {time.monotonic() - began:.0f} s", highlight=False)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    if args.json:
        args.json.write_text(json.dumps({"stored": {k: asdict(v) for k, v in stored.items()},
                                         "runs": [asdict(run) for run in runs]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
