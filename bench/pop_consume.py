"""Pop consumption (RocketMQ 5's pop, keys 32009/32010) beside plain Fetch and share-group consumption.

For every repeat a fresh one-partition topic is filled by a librdkafka producer and read in full three times
in the same run, the readers taking turns first: a classic consumer assigned to offset 0 (Fetch), a
confluent-kafka ``ShareConsumer`` ACCEPTing every record, and ``--clients`` bundled-client connections each
popping up to ``--max-messages`` records (invisible 60 s) and acknowledging them in its next pop request (as
ShareFetch carries acknowledgements), so one round trip per pop. No long poll: the records are all there, and a
pop that waits for more at the end (its answer confirming the acks it carries) would add its whole wait to the
measured time; a client whose pop comes back empty tries again after 2 ms. ``--pop-version 1`` (the default) is the
compact form (stored batches and a checkpoint per partition, acks as offset ranges, up to 1024 a pop);
``--pop-version 0`` a map and a receipt handle per record, up to 32 (RocketMQ's bound).
Pop throughput runs from the first pop to the last ack confirmed durable. Afterwards the broker is stopped and
the log is read back: the encoded size of the pop events (checkpoints, acks) per popped record, and the
events per record, say what a pop costs the log (RocketMQ writes a CK and an ACK message per pop and ack).

    .venv/bin/python bench/pop_consume.py [--records 100000] [--record-bytes 100] [--clients 4] [--repeats 3]
        [--max-messages 1024] [--pop-version 1] [--quick] [--markdown report.md]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402 - bench/ is a folder of scripts, not a package
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from logwright.client import Client  # noqa: E402
from logwright.client.pop import PoppedMessage, pin_version  # noqa: E402
from logwright.core.events.pop import PopEvent  # noqa: E402
from logwright.eventstore.codec import default_registry  # noqa: E402
from logwright.eventstore.rocksdb import RocksEventStore  # noqa: E402
from share_consume import share_consume  # noqa: E402
from wire_workload import Measurement, consume, create_topic, produce  # noqa: E402


@dataclass(frozen=True, slots=True)
class Run:
    repeat: int
    fetch: Measurement
    share: Measurement
    pop: Measurement
    cpu_us: dict[str, float]
    """Broker CPU (all threads) per record read, by reader: independent of how loaded the machine is."""


def pop_group(bootstrap: str, group: str) -> None:
    """Start the pop group at the log start (its default is the log end, RocketMQ's MAX)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    entries = [ConfigEntry("logwright.pop.init.mode", "earliest", incremental_operation=AlterConfigOpType.SET)]
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)


async def pop_all(bootstrap: str, topic: str, records: int, record_bytes: int, clients: int, max_messages: int,
                  version: int) -> Measurement:
    """Pop and ack every record with ``clients`` connections; fails on a duplicate or a stall."""
    group = f"bench-pop-{uuid.uuid4().hex[:8]}"
    pop_group(bootstrap, group)
    connections = [await Client.connect(bootstrap, f"pop-{n}") for n in range(clients)]
    for client in connections:
        pin_version(client._connection, version)
    seen: set[tuple[int, int]] = set()
    started = time.perf_counter()

    async def worker(client: Client) -> None:
        popped: list[PoppedMessage] = []
        while len(seen) < records:
            acked = popped
            popped, refusals = await client.pop_with_acks(topic, group, acked, max_messages, 60_000)
            if any(refusal is not None for refusal in refusals):
                raise RuntimeError(f"ack refused: {refusals}")
            for message in popped:
                key = (message.partition, message.offset)
                if key in seen:
                    raise RuntimeError(f"record {key} popped twice while invisible")
                seen.add(key)
            if not popped:
                if time.perf_counter() - started > 600:
                    raise RuntimeError(f"pop stalled at {len(seen)}/{records}")
                await asyncio.sleep(0.002)
        if popped and any(refusal is not None for refusal in await client.ack_all(popped)):
            raise RuntimeError("the last acks were refused")

    try:
        await asyncio.gather(*(worker(client) for client in connections))
    finally:
        for client in connections:
            await client.close()
    return Measurement(len(seen), record_bytes, time.perf_counter() - started)


def log_cost(data_dir: Path) -> tuple[int, int]:
    """The encoded bytes and the count of the pop events in a stopped broker's log."""
    registry = default_registry()
    store = RocksEventStore(data_dir, read_only=True, load_state=False, types=registry)
    try:
        size = count = 0
        for logged in store.read_events():
            if isinstance(logged.event, PopEvent):
                size += len(registry.encode_event(logged.time_ms, logged.event))
                count += 1
        return size, count
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-messages", type=int, help="per pop (default: 1024 with --pop-version 1, else 32)")
    parser.add_argument("--pop-version", type=int, choices=(0, 1), default=1)
    parser.add_argument("--quick", action="store_true", help="20,000 records, 1 repeat")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    records, repeats = (20_000, 1) if args.quick else (args.records, args.repeats)
    max_messages = args.max_messages or (1_024 if args.pop_version == 1 else 32)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-pop-") as workdir:
        peer = brokers.start("logwright", Path(workdir) / "logwright")
        try:
            for repeat in range(repeats):
                topic = create_topic(peer.bootstrap, "bench-pop")
                produce(peer.bootstrap, topic, records, args.record_bytes)
                readers = ["fetch", "share", "pop"]
                readers = readers[repeat % 3:] + readers[:repeat % 3]
                got: dict[str, Measurement] = {}
                cpu_us: dict[str, float] = {}
                for reader in readers:
                    cpu_before = peer.cpu_seconds()
                    if reader == "fetch":
                        got[reader] = consume(peer.bootstrap, topic, records, args.record_bytes)
                    elif reader == "share":
                        got[reader] = share_consume(peer.bootstrap, topic, records, args.record_bytes).measurement
                    else:
                        got[reader] = asyncio.run(pop_all(peer.bootstrap, topic, records, args.record_bytes,
                                                          args.clients, max_messages, args.pop_version))
                    cpu_us[reader] = (peer.cpu_seconds() - cpu_before) / got[reader].records * 1e6
                    print(f"repeat {repeat} {reader}: {got[reader].msg_per_s:,.0f} msg/s, "
                          f"{cpu_us[reader]:.1f} us broker CPU per record", flush=True)
                runs.append(Run(repeat, got["fetch"], got["share"], got["pop"], cpu_us))
        finally:
            peer.stop()
        size, count = log_cost(Path(workdir) / "logwright" / "data")
    popped = sum(run.pop.records for run in runs)
    fetch = statistics.median(run.fetch.msg_per_s for run in runs)
    share = statistics.median(run.share.msg_per_s for run in runs)
    pop = statistics.median(run.pop.msg_per_s for run in runs)
    cpu = {reader: statistics.median(run.cpu_us[reader] for run in runs) for reader in ("fetch", "share", "pop")}
    lines = [
        f"# Pop beside Fetch and share consumption ({records:,} x {args.record_bytes} B, one partition, "
        f"{args.clients} pop clients, {repeats} repeat(s), median)",
        "",
        "| reader | msg/s | vs Fetch | broker CPU per record |",
        "|---|---|---|---|",
        f"| Fetch (librdkafka, assigned) | {fetch:,.0f} | 1.00 | {cpu['fetch']:.1f} us |",
        f"| share group (ShareConsumer, ACCEPT each) | {share:,.0f} | {share / fetch:.2f} | {cpu['share']:.1f} us |",
        f"| pop v{args.pop_version}, acks in the next pop (bundled client, max {max_messages}) | {pop:,.0f} "
        f"| {pop / fetch:.2f} "
        f"| {cpu['pop']:.1f} us |",
        "",
        f"Pop events in the log: {count:,} for {popped:,} popped records, {size / popped:.1f} bytes per popped "
        f"record ({count / popped:.2f} events per record).",
    ]
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
