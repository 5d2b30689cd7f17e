"""Share-group consumption where 10% of the records are nacked, then dead-lettered, beside plain share consumption.

For every repeat a fresh one-partition topic is filled by a librdkafka producer and read in full twice by
confluent-kafka ``ShareConsumer``s in explicit mode, each in a new share group starting at the earliest
offset, taking turns first: the *plain* reader ACCEPTs every record (as bench/share_consume.py's does); the
*dead-letter* reader's group has KIP-1191's ``errors.deadletterqueue.topic.name`` (a ``dlq.`` topic with
``errors.deadletterqueue.group.enable=true``) and ``share.delivery.count.limit=2``: it RELEASEs every tenth
offset each time it comes (so twice: the second RELEASE reaches the limit, and the broker archives the record
and appends its copy to the DLQ in the same WriteBatch) and ACCEPTs the rest. Both loops are the same code and
count every record settled (accepted or dead-lettered) from the first batch in hand to the last
acknowledgement confirmed; the run then checks that the DLQ holds exactly one copy per poisoned record.

Afterwards the broker is stopped and its event log read back: the encoded bytes of each group's events (its
cursor events: acquisitions, acks, releases, rejections, ``DeadLettered``), so *event-log bytes per
dead-letter* is the dead-letter group's bytes minus the plain group's, over the records dead-lettered, with
the ``DeadLettered`` events' own share beside it. Records and the DLQ copies are in the ``records`` column
family and not counted. logwright only: Kafka 4.4 writes DLQ copies only with ``share.version=2`` and has no
event log to weigh.

    .venv/bin/python bench/share_dead_letter.py [--records 50000] [--record-bytes 100] [--repeats 3] [--quick]
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
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402 - bench/ is a folder of scripts, not a package
from confluent_kafka import AcknowledgeType, Consumer, KafkaException, ShareConsumer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # noqa: E402
from share_consume import set_group_configs  # noqa: E402
from wire_workload import create_topic, librdkafka_version, produce  # noqa: E402

POISON_EVERY = 10
"""Every tenth offset is nacked until it is dead-lettered."""
DELIVERY_LIMIT = 2


@dataclass(frozen=True, slots=True)
class Run:
    """One repeat: the plain and the dead-letter read of the same topic, and the groups they used."""

    repeat: int
    records: int
    plain_msg_per_s: float
    dead_letter_msg_per_s: float
    dead_lettered: int
    plain_group: str
    dead_letter_group: str


def _dead_letter_topic(bootstrap: str, topic: str) -> str:
    name = f"dlq.{topic}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    config = {"errors.deadletterqueue.group.enable": "true"}
    admin.create_topics([NewTopic(name, 1, 1, config=config)], operation_timeout=30)[name].result(60)
    return name


def _end_offset(bootstrap: str, topic: str) -> int:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-watermark-{uuid.uuid4().hex[:6]}",
                       "log_level": 3})
    try:
        return int(reader.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1])
    finally:
        reader.close()


def share_read(bootstrap: str, topic: str, records: int, poison_every: int, idle_timeout_s: float = 30.0
               ) -> tuple[str, float, int]:
    """Read ``topic`` in a new group; with ``poison_every`` it RELEASEs every such offset to the delivery limit
    (then the broker dead-letters it) and ACCEPTs the rest, without it ACCEPTs everything. Returns the group,
    msg/s of records settled (from the first batch in hand to the last acknowledgement confirmed) and the
    DLQ's record count."""
    group = f"bench-{'dlq' if poison_every else 'plain'}-{uuid.uuid4().hex[:8]}"
    configs = {"share.auto.offset.reset": "earliest"}
    dlq = ""
    if poison_every:
        dlq = _dead_letter_topic(bootstrap, topic)
        configs.update({"errors.deadletterqueue.topic.name": dlq, "share.delivery.count.limit": str(DELIVERY_LIMIT)})
    set_group_configs(bootstrap, group, configs)
    poisoned = len(range(0, records, poison_every)) if poison_every else 0
    failures: list[str] = []

    def acknowledged(offsets: object, error: KafkaException | None) -> None:
        if error is not None:
            failures.append(str(error))

    share = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "share.acknowledgement.mode": "explicit", "log_level": 3})
    try:
        share.set_acknowledgement_commit_callback(acknowledged)
        accepted: set[int] = set()
        archived: set[int] = set()
        share.subscribe([topic])
        first = 0.0
        last_progress = time.perf_counter()
        while len(accepted) + len(archived) < records:
            batch = share.poll(1.0)
            now = time.perf_counter()
            if not batch:
                if now - last_progress > idle_timeout_s:
                    raise RuntimeError(f"dead-letter consume {topic}: stalled at "
                                       f"{len(accepted)} accepted, {len(archived)} archived of {records}")
                continue
            first = first or now
            for message in batch:
                if message.error() is not None:
                    raise RuntimeError(f"dead-letter consume {topic}: {message.error()}")
                offset = int(message.offset() or 0)
                if not poison_every or offset % poison_every:
                    accepted.add(offset)
                    share.acknowledge(message, AcknowledgeType.ACCEPT)
                    continue
                share.acknowledge(message, AcknowledgeType.RELEASE)
                if (message.delivery_count() or 0) >= DELIVERY_LIMIT:
                    archived.add(offset)
            last_progress = now
            if failures:
                raise RuntimeError(f"dead-letter consume {topic}: acknowledgement failed: {failures[0]}")
        outcomes = share.commit_sync(60)
        seconds = time.perf_counter() - first
        bad = [f"{tp.partition}: {error}" for tp, error in outcomes.items() if error is not None]
        if bad or failures:
            raise RuntimeError(f"dead-letter consume {topic}: acknowledgement failed: {(bad + failures)[0]}")
    finally:
        share.close()
    copies = _end_offset(bootstrap, dlq) if dlq else 0
    if copies != poisoned:
        raise RuntimeError(f"{dlq} holds {copies} records, expected one per poisoned record ({poisoned})")
    return group, records / seconds, copies


def measure(records: int, record_bytes: int, repeats: int, workdir: Path, say: Callable[[str], None]
            ) -> tuple[list[Run], dict[str, tuple[int, int]]]:
    """Run the repeats on one logwright broker, stop it, and weigh each group's events in its log."""
    runs: list[Run] = []
    with brokers.running("logwright", workdir / "logwright") as peer:
        for repeat in range(repeats):
            topic = create_topic(peer.bootstrap, f"bench-dlq-{record_bytes}")
            produce(peer.bootstrap, topic, records, record_bytes)
            plain_first = repeat % 2 == 0
            if plain_first:
                plain_group, plain, _ = share_read(peer.bootstrap, topic, records, 0)
            group, rate, copies = share_read(peer.bootstrap, topic, records, POISON_EVERY)
            if not plain_first:
                plain_group, plain, _ = share_read(peer.bootstrap, topic, records, 0)
            runs.append(Run(repeat, records, plain, rate, copies, plain_group, group))
            say(f"#{repeat + 1} plain {plain:9,.0f} msg/s   10% dead-lettered {rate:9,.0f} msg/s ({copies} copies)")
    return runs, event_bytes(workdir / "logwright" / "data")  # the broker has stopped: its log is ours to read


def event_bytes(data_dir: Path) -> dict[str, tuple[int, int]]:
    """Per share group: the encoded bytes of its cursor events, and of its ``DeadLettered`` events alone (the
    8-byte key included, as stored)."""
    from logwright.core.events.cursors import CursorEvent, DeadLettered  # noqa: PLC0415

    from logwright.cli import _open_for_reading  # noqa: PLC0415 - the broker's own reader, after it stopped

    store = _open_for_reading(str(data_dir))
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    try:
        for logged in store.read_events():
            event = logged.event
            if not isinstance(event, CursorEvent):
                continue
            size = 8 + len(store._types.encode_event(logged.time_ms, event))  # noqa: SLF001 - as stored
            key = event.subscription
            totals[key][0] += size
            if isinstance(event, DeadLettered):
                totals[key][1] += size
    finally:
        store.close()
    return {key: (total, lettered) for key, (total, lettered) in totals.items()}


def markdown(runs: list[Run], weights: dict[str, tuple[int, int]], record_bytes: int) -> str:
    rows = ["| repeat | plain share msg/s | 10% dead-lettered msg/s | ratio | dead-letters | event bytes plain | "
            "event bytes dead-letter | extra event bytes per dead-letter | DeadLettered bytes per dead-letter |",
            "|---|---|---|---|---|---|---|---|---|"]
    extras: list[float] = []
    for run in runs:
        plain = weights.get(run.plain_group, (0, 0))[0]
        total, lettered = weights.get(run.dead_letter_group, (0, 0))
        extra = (total - plain) / run.dead_lettered
        extras.append(extra)
        rows.append(f"| {run.repeat + 1} | {run.plain_msg_per_s:,.0f} | {run.dead_letter_msg_per_s:,.0f} | "
                    f"{run.dead_letter_msg_per_s / run.plain_msg_per_s:.2f} | {run.dead_lettered:,} | {plain:,} | "
                    f"{total:,} | {extra:,.0f} | {lettered / run.dead_lettered:,.0f} |")
    rows.append("")
    rows.append(f"Medians: plain {statistics.median(r.plain_msg_per_s for r in runs):,.0f} msg/s, 10% dead-lettered "
                f"{statistics.median(r.dead_letter_msg_per_s for r in runs):,.0f} msg/s, "
                f"{statistics.median(extras):,.0f} extra event-log bytes per dead-letter. "
                f"{runs[0].records:,} records of {record_bytes} B per repeat, one partition, librdkafka "
                f"{librdkafka_version()}, share.delivery.count.limit={DELIVERY_LIMIT}, every {POISON_EVERY}th offset "
                "RELEASEd at each delivery, the rest ACCEPTed; msg/s from the first batch to the last acknowledgement "
                "confirmed.")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20,000 records, 2 repeats (a smoke run)")
    parser.add_argument("--tmp-root", type=Path, help="where the broker's work dir goes")
    parser.add_argument("--markdown", type=Path, help="also write the table here")
    parser.add_argument("--json", type=Path, help="write every run and the event weights here")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.repeats = 20_000, 2
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="logwright-bench-dlq-", dir=args.tmp_root) as tmp:
        runs, weights = measure(args.records, args.record_bytes, args.repeats, Path(tmp),
                                lambda text: print(text, file=sys.stderr, flush=True))
    table = markdown(runs, weights, args.record_bytes)
    print(f"took {time.monotonic() - began:.0f} s", file=sys.stderr)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    if args.json:
        args.json.write_text(json.dumps({"runs": [asdict(run) for run in runs], "event_bytes": weights}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
