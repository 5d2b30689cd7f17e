"""Share-group consumption (KIP-932) with per-record ACCEPT beside plain Fetch consumption of the same topic.

For every repeat a fresh one-partition topic is filled by a librdkafka producer and read in full twice in
the same run: once by a classic consumer assigned to offset 0 (Fetch, no group coordination), once by a
confluent-kafka ``ShareConsumer`` in explicit acknowledgement mode that acknowledges every record with
ACCEPT (the acknowledgements ride on the next ShareFetch; a final ``commit_sync`` settles the last ones).
The share group starts at the earliest offset (``share.auto.offset.reset=earliest``, a GROUP config set
before the consumer joins). The two readers take turns first, so a warm page cache favours neither. Share
throughput is timed from the first batch in hand to the last acknowledgement confirmed; the join (time to
the first record) is reported beside it, since Kafka's comes with its 5 s heartbeat interval.

Peers come from ``bench/brokers.py``: ``logwright`` and ``kafka`` (Apache Kafka 4.x, formatted with
``share.version=1``); Tansu serves no share groups.

    .venv/bin/python bench/share_consume.py [--peers logwright,kafka] [--records 500000] [--record-bytes 100]
        [--repeats 5] [--quick] [--share-config max.poll.records=10000] [--profile out.txt|out.svg|out.prof]
        [--markdown report.md] [--json runs.json]
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
from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer  # noqa: E402
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from wire_workload import (  # noqa: E402
    Measurement,
    consume,
    create_topic,
    delete_topic,
    librdkafka_version,
    produce,
)

SHARE_PEERS = ("logwright", "kafka")
"""Peers that serve share groups (Tansu does not)."""


@dataclass(frozen=True, slots=True)
class ShareMeasurement:
    """A share-group read: ``measurement`` runs from the first batch in hand to the last acknowledgement
    confirmed (the records after that first batch); ``first_record_s`` is the join and first ShareFetch.

    Kafka's share consumers learn their assignment from a heartbeat (every 5 s by default), so a figure
    with the join in it would measure that interval rather than acquisition and acknowledgement.
    """

    measurement: Measurement
    first_record_s: float
    redelivered: int
    client_cpu_share: float = float("nan")
    """CPU the reading process (its Python loop and librdkafka's threads) used over ``measurement``, in cores: near
    1.0 the client, not the broker, sets the rate."""


@dataclass(frozen=True, slots=True)
class Run:
    """One repeat on one peer: Fetch and share consumption of the same topic."""

    peer: str
    repeat: int
    fetch: Measurement
    share: ShareMeasurement

    @property
    def ratio(self) -> float:
        return self.share.measurement.msg_per_s / self.fetch.msg_per_s


def earliest_share_group(bootstrap: str, group: str) -> None:
    """Make ``group`` start at the log start: a share group's default is the latest offset."""
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})


def set_group_configs(bootstrap: str, group: str, configs: dict[str, str]) -> None:
    """Set GROUP configs of ``group`` (IncrementalAlterConfigs) before its first member joins."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    entries = [ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in configs.items()]
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)


def share_consume(bootstrap: str, topic: str, records: int, record_bytes: int, idle_timeout_s: float = 30.0,
                  config: dict[str, str] | None = None, group_configs: dict[str, str] | None = None
                  ) -> ShareMeasurement:
    """Read every offset of partition 0 through a new share group, ACCEPTing each record as it arrives.

    ``config`` adds ShareConsumer properties (e.g. ``max.poll.records``, 500 by default in librdkafka),
    ``group_configs`` GROUP configs (e.g. ``logwright.subscription.mode=pop``).
    Fails if the stream stalls, a message or an acknowledgement errs: a fast wrong answer is not a result.
    A record delivered twice (a lock ran out) is acknowledged again and counted in ``redelivered``.
    """
    group = f"bench-share-{uuid.uuid4().hex[:8]}"
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest", **(group_configs or {})})
    failures: list[str] = []

    def acknowledged(offsets: object, error: KafkaException | None) -> None:
        if error is not None:
            failures.append(str(error))

    share = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "share.acknowledgement.mode": "explicit", "log_level": 3, **(config or {})})
    try:
        share.set_acknowledgement_commit_callback(acknowledged)
        seen: set[int] = set()
        redelivered = 0
        first_record = 0.0
        first_batch = 0
        cpu_at_first_batch = 0.0
        accept = AcknowledgeType.ACCEPT
        started = time.perf_counter()
        share.subscribe([topic])
        last_progress = started
        while len(seen) < records:
            batch = share.poll(1.0)
            now = time.perf_counter()
            if not batch:
                if now - last_progress > idle_timeout_s:
                    raise RuntimeError(f"share consume {topic}: stalled at {len(seen)}/{records}")
                continue
            for message in batch:
                error = message.error()
                if error is not None:
                    raise RuntimeError(f"share consume {topic}: {error}")
                offset = int(message.offset() or 0)
                if offset in seen:
                    redelivered += 1
                seen.add(offset)
                share.acknowledge(message, accept)
            if not first_batch:
                first_record, first_batch = now - started, len(seen)
                cpu_at_first_batch = time.process_time()
            last_progress = now
            if failures:
                raise RuntimeError(f"share consume {topic}: acknowledgement failed: {failures[0]}")
        outcomes = share.commit_sync(60)
        seconds = time.perf_counter() - started - first_record
        client_cpu = time.process_time() - cpu_at_first_batch
        bad = [f"{tp.partition}: {error}" for tp, error in outcomes.items() if error is not None]
        if bad or failures:
            raise RuntimeError(f"share consume {topic}: acknowledgement failed: {(bad + failures)[0]}")
    finally:
        share.close()
    return ShareMeasurement(Measurement(records - first_batch, record_bytes, seconds), first_record, redelivered,
                            client_cpu / seconds if seconds > 0 else float("nan"))


def measure_peer(bootstrap: str, records: int, record_bytes: int, share_first: bool = False,
                 share_config: dict[str, str] | None = None) -> tuple[Measurement, ShareMeasurement]:
    """One fresh topic of ``records`` records read by Fetch and by a share group (``share_first`` swaps turns)."""
    topic = create_topic(bootstrap, f"bench-share-{record_bytes}")
    try:
        produce(bootstrap, topic, records, record_bytes)
        if share_first:
            shared = share_consume(bootstrap, topic, records, record_bytes, config=share_config)
            fetched = consume(bootstrap, topic, records, record_bytes)
        else:
            fetched = consume(bootstrap, topic, records, record_bytes)
            shared = share_consume(bootstrap, topic, records, record_bytes, config=share_config)
    finally:
        delete_topic(bootstrap, topic)
    return fetched, shared


def measure(names: list[str], records: int, record_bytes: int, repeats: int, workdir: Path,
            options: dict[str, dict[str, str]], say: Callable[[str], None],
            share_config: dict[str, str] | None = None) -> list[Run]:
    """Start every peer, run the repeats with peers and readers taking turns, stop every peer."""
    unknown = [name for name in names if name not in SHARE_PEERS]
    if unknown:
        raise ValueError(f"no share groups on {', '.join(unknown)} (share-capable: {', '.join(SHARE_PEERS)})")
    runs: list[Run] = []
    with brokers.running_all(names, workdir, options, say) as started:
        for repeat in range(repeats):
            for peer in brokers.in_turn(started, repeat):
                fetched, shared = measure_peer(peer.bootstrap, records, record_bytes, share_first=repeat % 2 == 1,
                                               share_config=share_config)
                run = Run(peer.name, repeat, fetched, shared)
                runs.append(run)
                say(f"#{repeat + 1} {peer.name:10} fetch {fetched.msg_per_s:9,.0f} msg/s  "
                    f"share {shared.measurement.msg_per_s:9,.0f} msg/s (first record {shared.first_record_s:.2f} s"
                    f"{f', {shared.redelivered} redelivered' if shared.redelivered else ''})  "
                    f"share/fetch {run.ratio:.2f}")
    return runs


@dataclass(frozen=True, slots=True)
class Summary:
    """Medians over the repeats of one peer."""

    peer: str
    fetch_msg_per_s: float
    share_msg_per_s: float
    share_range: tuple[float, float]
    first_record_s: float
    ratio: float


def summarize(runs: list[Run], peer: str) -> Summary:
    chosen = [run for run in runs if run.peer == peer]
    shares = [run.share.measurement.msg_per_s for run in chosen]
    return Summary(peer, statistics.median(run.fetch.msg_per_s for run in chosen), statistics.median(shares),
                   (min(shares), max(shares)), statistics.median(run.share.first_record_s for run in chosen),
                   statistics.median(run.ratio for run in chosen))


def markdown(runs: list[Run], names: list[str], records: int, record_bytes: int, repeats: int,
             share_config: dict[str, str] | None = None, subject: str = "logwright", reference: str = "kafka") -> str:
    """Per peer: medians of Fetch and share msg/s, the share range, time to first record, share/fetch."""
    lines = ["| peer | fetch msg/s | share msg/s (ACCEPT each) | share range | first record s | share/fetch |",
             "|---|---|---|---|---|---|"]
    summaries = {name: summarize(runs, name) for name in names if any(run.peer == name for run in runs)}
    for s in summaries.values():
        lines.append(f"| {s.peer} | {s.fetch_msg_per_s:,.0f} | {s.share_msg_per_s:,.0f} | "
                     f"{s.share_range[0]:,.0f}–{s.share_range[1]:,.0f} | {s.first_record_s:.2f} | {s.ratio:.2f} |")
    lines.append("")
    if subject in summaries and reference in summaries:
        ours, theirs = summaries[subject], summaries[reference]
        lines.append(f"{subject}/{reference}: share {ours.share_msg_per_s / theirs.share_msg_per_s:.2f}, "
                     f"fetch {ours.fetch_msg_per_s / theirs.fetch_msg_per_s:.2f}.")
        lines.append("")
    lines.append(f"{record_bytes} B × {records:,} records, one partition, medians of {repeats} repeats "
                 f"(share/fetch is the median of per-repeat ratios); librdkafka {librdkafka_version()}, share "
                 "consumer in explicit mode, one `acknowledge(ACCEPT)` per record, acks piggy-backed on "
                 "ShareFetch; share msg/s from the first batch to the last acknowledgement confirmed, the join is "
                 "the first record's time."
                 + "".join(f" ShareConsumer {key}={value}." for key, value in (share_config or {}).items()))
    return "\n".join(lines)


COMPARE_RECORDS = (500_000, 50_000)
"""Records per repeat in bench/compare.py's full and quick runs (100 B each)."""

_turns: dict[str, int] = {}


def compare_measure(ctx: Context, peer: str) -> dict[str, float]:
    """bench/compare.py's repeat: :func:`measure_peer` on the session's shared broker, readers alternating."""
    turn = _turns[peer] = _turns.get(peer, -1) + 1
    fetched, shared = measure_peer(ctx.broker(peer).bootstrap, ctx.size(*COMPARE_RECORDS), 100,
                                   share_first=turn % 2 == 1)
    return {"share msg/s": shared.measurement.msg_per_s, "fetch msg/s": fetched.msg_per_s,
            "share/fetch": shared.measurement.msg_per_s / fetched.msg_per_s, "first record s": shared.first_record_s}


WORKLOADS = [
    Workload("share-group consumption, ACCEPT per record, 100 B",
             (Metric("share msg/s", "msg/s", target=1.0, decimals=0),
              Metric("fetch msg/s", "msg/s", plot=False, decimals=0),
              Metric("share/fetch", plot=False, decimals=2),
              Metric("first record s", "s", higher_is_better=False, plot=False, decimals=2)),
             compare_measure,
             method=(f"A fresh one-partition topic of {COMPARE_RECORDS[0]:,} records of 100 B "
                     f"({COMPARE_RECORDS[1]:,} in a quick run) is read in full twice, in alternating order: by an "
                     "assigned librdkafka consumer from offset 0 (fetch msg/s), and by a confluent-kafka "
                     "ShareConsumer in explicit mode in a new share group starting at the earliest offset, which "
                     "acknowledges every record with ACCEPT (acks ride on the next ShareFetch; a final commit_sync "
                     "settles the rest). Share msg/s runs from the first batch in hand to the last acknowledgement "
                     "confirmed; the join (first record s) is apart, since Kafka assigns on a 5 s heartbeat. "
                     "librdkafka defaults otherwise (max.poll.records 500). bench/share_consume.py runs it alone."),
             not_applicable={"tansu": "Tansu serves no share groups (KIP-932)"}),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default="logwright,kafka", help="comma-separated: logwright, kafka")
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="20,000 records, 2 repeats (a smoke run)")
    parser.add_argument("--share-config", action="append", default=[], metavar="KEY=VALUE",
                        help="a ShareConsumer property, e.g. max.poll.records=10000 (repeatable)")
    parser.add_argument("--profile", help="profile logwright: a .prof (cProfile), .svg or .txt (py-spy) path")
    parser.add_argument("--tmp-root", type=Path, help="where the peers' work dirs go")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--json", type=Path, help="write every run here")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.repeats = 20_000, 2

    from rich.console import Console  # noqa: PLC0415

    console = Console(stderr=True)
    names = [n for n in args.peers.split(",") if n]
    share_config = dict(item.split("=", 1) for item in args.share_config)
    options: dict[str, dict[str, str]] = {}
    if args.profile:
        options["logwright"] = {"profile": str(Path(args.profile).resolve())}
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="logwright-bench-share-", dir=args.tmp_root) as tmp:
        runs = measure(names, args.records, args.record_bytes, args.repeats, Path(tmp), options,
                       lambda text: console.print(text, highlight=False, soft_wrap=True), share_config)
    table = markdown(runs, names, args.records, args.record_bytes, args.repeats, share_config)
    console.print(f"took {time.monotonic() - began:.0f} s", highlight=False)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    if args.json:
        args.json.write_text(json.dumps([{**asdict(run), "ratio": run.ratio} for run in runs], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
