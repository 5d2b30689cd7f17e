"""Pop consumption (RocketMQ 5's pop, keys 32009/32010) beside plain Fetch and share-group consumption.

For every repeat a fresh one-partition topic is filled by a librdkafka producer and read in full by each reader
in the same run, the readers taking turns first:

- ``fetch``: a classic consumer assigned to offset 0 (librdkafka);
- ``share``: a confluent-kafka ``ShareConsumer`` ACCEPTing every record;
- ``share-pop``: the same ShareConsumer on a share group with ``logwright.subscription.mode=pop`` (an unmodified
  Kafka client with pop semantics: the retry table, max reconsume times, RocketMQ's dead-letter naming);
- ``pop``: ``--clients`` bundled-client processes (RocketMQ pop consumers are many processes), one connection
  each, popping up to ``--max-messages`` records (invisible 60 s) and acknowledging them in their next pop
  request (as ShareFetch carries acknowledgements), so one round trip per pop;
- ``pop-tasks``: the same ``--clients`` as connections of one Python process (one event loop).

Pop clients read every record's value (``--touch value``, what a consumer that processes records does) or only
its offset (``--touch offset``: the floor of the client's cost, no record decoded). No long poll: the records
are all there, and a pop that waits at the end would add its wait to the figure; a client whose pop comes back
empty tries again after 2 ms. ``--pop-version 0`` is the per-record form (up to 32 a pop). Pop throughput runs
from the first pop (all client processes connected and waiting) to the last ack confirmed durable. Every
reader's figure comes with the broker's CPU per record (``/proc``, all threads: independent of how loaded the
machine is) and the client's (this process and, for ``pop``, its client processes). Afterwards the broker is
stopped and the log read back: the encoded size of the pop events (checkpoints, acks) per popped record.

    .venv/bin/python bench/pop_consume.py [--records 100000] [--record-bytes 100] [--clients 4] [--repeats 3]
        [--readers fetch,share,share-pop,pop,pop-tasks] [--max-messages 1024] [--pop-version 1]
        [--touch value|offset] [--quick] [--markdown report.md]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402 - bench/ is a folder of scripts, not a package
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)
from logwright.client import Client  # noqa: E402
from logwright.client.pop import pin_version  # noqa: E402
from logwright.core.events.pop import PopEvent  # noqa: E402
from logwright.eventstore.codec import default_registry  # noqa: E402
from logwright.eventstore.rocksdb import RocksEventStore  # noqa: E402
from share_consume import share_consume  # noqa: E402
from wire_workload import Measurement, consume, create_topic, produce  # noqa: E402

READERS = ("fetch", "share", "share-pop", "pop", "pop-tasks")
LABELS = {
    "fetch": "Fetch (librdkafka, assigned)",
    "share": "share group (ShareConsumer, ACCEPT each)",
    "share-pop": "share group in pop mode (ShareConsumer, ACCEPT each)",
    "pop": "pop, {clients} client processes",
    "pop-tasks": "pop, {clients} connections in one process",
}


@dataclass(frozen=True, slots=True)
class Reading:
    measurement: Measurement
    broker_us: float
    """Broker CPU (all threads) per record read."""
    client_us: float
    """Client CPU per record read: this process (librdkafka's threads included) and any client processes."""


@dataclass(frozen=True, slots=True)
class PopSettings:
    bootstrap: str
    topic: str
    group: str
    records: int
    max_messages: int
    version: int
    touch: str


def pop_group(bootstrap: str, group: str) -> None:
    """Start the pop group at the log start (its default is the log end, RocketMQ's MAX)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    entries = [ConfigEntry("logwright.pop.init.mode", "earliest", incremental_operation=AlterConfigOpType.SET)]
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)


async def pop_worker(client: Client, settings: PopSettings, seen: bytearray, taken: Any) -> int:
    """Pop and ack until ``taken`` (shared count) reaches the records; marks each offset in ``seen`` and fails on
    one seen twice. Returns the value bytes read (``touch == "value"``)."""
    popped: Any = []
    size = 0
    records, started = settings.records, time.monotonic()
    while taken.value < records:
        popped, refusals = await client.pop_with_acks(settings.topic, settings.group, popped, settings.max_messages,
                                                      60_000)
        if any(refusal is not None for refusal in refusals):
            raise RuntimeError(f"ack refused: {refusals}")
        if settings.touch == "value":
            for message in popped:
                offset = message.offset
                if seen[offset]:
                    raise RuntimeError(f"record {offset} popped twice while invisible")
                seen[offset] = 1
                size += len(message.value or b"")
        else:
            for message in popped:
                if seen[message.offset]:
                    raise RuntimeError(f"record {message.offset} popped twice while invisible")
                seen[message.offset] = 1
        if popped:
            with taken.get_lock():
                taken.value += len(popped)
        else:
            if time.monotonic() - started > 600:
                raise RuntimeError(f"pop stalled at {taken.value}/{records}")
            await asyncio.sleep(0.002)
    if popped and any(refusal is not None for refusal in await client.ack_all(popped)):
        raise RuntimeError("the last acks were refused")
    return size


def pop_process(settings: PopSettings, ready: Any, start: Any, taken: Any, results: Any) -> None:
    """One client process: connect, wait for the start, pop; reports (seen offsets, CPU seconds, end time)."""

    async def run() -> tuple[bytearray, float, float]:
        client = await Client.connect(settings.bootstrap, f"pop-{os.getpid()}")
        pin_version(client._connection, settings.version)
        seen = bytearray(settings.records)
        try:
            ready.release()
            await asyncio.to_thread(start.wait)
            cpu = time.process_time()
            await pop_worker(client, settings, seen, taken)
            return seen, time.process_time() - cpu, time.monotonic()
        finally:
            await client.close()

    try:
        results.put(asyncio.run(run()))
    except BaseException as error:  # the parent reports it
        results.put(repr(error))
        raise


def pop_processes(settings: PopSettings, clients: int) -> tuple[Measurement, float]:
    """Pop with ``clients`` processes; the measurement and their CPU seconds."""
    context = multiprocessing.get_context("spawn")
    ready, start, taken, results = context.Semaphore(0), context.Event(), context.Value("q", 0), context.Queue()
    workers = [context.Process(target=pop_process, args=(settings, ready, start, taken, results))
               for _ in range(clients)]
    for worker in workers:
        worker.start()
    try:
        for _ in workers:
            if not ready.acquire(timeout=120):
                raise RuntimeError("a pop client process did not connect")
        started = time.monotonic()
        start.set()
        reports = [results.get(timeout=900) for _ in workers]
    finally:
        for worker in workers:
            worker.join(30)
            if worker.is_alive():
                worker.kill()
    failed = [report for report in reports if isinstance(report, str)]
    if failed:
        raise RuntimeError(f"a pop client process failed: {failed[0]}")
    check_once(settings.records, [report[0] for report in reports])
    return (Measurement(settings.records, 0, max(report[2] for report in reports) - started),
            sum(report[1] for report in reports))


async def pop_tasks(settings: PopSettings, clients: int) -> Measurement:
    """Pop with ``clients`` connections of this process."""
    connections = [await Client.connect(settings.bootstrap, f"pop-{n}") for n in range(clients)]
    for client in connections:
        pin_version(client._connection, settings.version)
    taken = multiprocessing.Value("q", 0)
    seen = [bytearray(settings.records) for _ in connections]
    started = time.monotonic()
    try:
        await asyncio.gather(*(pop_worker(client, settings, marks, taken)
                               for client, marks in zip(connections, seen, strict=True)))
    finally:
        for client in connections:
            await client.close()
    elapsed = time.monotonic() - started
    check_once(settings.records, seen)
    return Measurement(settings.records, 0, elapsed)


def check_once(records: int, seen: list[bytearray]) -> None:
    """Every offset popped by exactly one client (each client's own repeats already failed its loop)."""
    marked = sum(marks.count(1) for marks in seen)
    union = 0
    for marks in seen:
        union |= int.from_bytes(marks, "big")
    covered = union.to_bytes(records, "big").count(1)
    if marked != records or covered != records:
        raise RuntimeError(f"pop: {marked} records popped, {covered} distinct, of {records}")


def read_with(reader: str, peer: brokers.RunningPeer, topic: str, records: int, record_bytes: int,
              args: argparse.Namespace) -> Reading:
    cpu_before, client_before = peer.cpu_seconds(), time.process_time()
    children = 0.0
    if reader == "fetch":
        got = consume(peer.bootstrap, topic, records, record_bytes)
    elif reader in ("share", "share-pop"):
        modes = {"logwright.subscription.mode": "pop"} if reader == "share-pop" else {}
        got = share_consume(peer.bootstrap, topic, records, record_bytes, group_configs=modes).measurement
    else:
        group = f"bench-pop-{uuid.uuid4().hex[:8]}"
        pop_group(peer.bootstrap, group)
        settings = PopSettings(peer.bootstrap, topic, group, records, args.max_messages, args.pop_version, args.touch)
        if reader == "pop":
            got, children = pop_processes(settings, args.clients)
        else:
            got = asyncio.run(pop_tasks(settings, args.clients))
        got = Measurement(got.records, record_bytes, got.seconds)
    client_s = time.process_time() - client_before + children
    return Reading(got, (peer.cpu_seconds() - cpu_before) / got.records * 1e6, client_s / got.records * 1e6)


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
    parser.add_argument("--readers", default=",".join(READERS), help=f"comma-separated, of {', '.join(READERS)}")
    parser.add_argument("--max-messages", type=int, help="per pop (default: 1024 with --pop-version 1, else 32)")
    parser.add_argument("--pop-version", type=int, choices=(0, 1), default=1)
    parser.add_argument("--touch", choices=("value", "offset"), default="value",
                        help="what pop clients read of each record")
    parser.add_argument("--quick", action="store_true", help="20,000 records, 1 repeat")
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args()
    readers = [reader for reader in args.readers.split(",") if reader]
    if unknown := set(readers) - set(READERS):
        parser.error(f"unknown readers {sorted(unknown)}")
    records, repeats = (20_000, 1) if args.quick else (args.records, args.repeats)
    args.max_messages = args.max_messages or (1_024 if args.pop_version == 1 else 32)
    runs: list[dict[str, Reading]] = []
    loads: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-pop-") as workdir:
        peer = brokers.start("logwright", Path(workdir) / "logwright")
        try:
            for repeat in range(repeats):
                topic = create_topic(peer.bootstrap, "bench-pop")
                produce(peer.bootstrap, topic, records, args.record_bytes)
                got: dict[str, Reading] = {}
                for reader in readers[repeat % len(readers):] + readers[:repeat % len(readers)]:
                    loads.append(os.getloadavg()[0])
                    got[reader] = reading = read_with(reader, peer, topic, records, args.record_bytes, args)
                    print(f"repeat {repeat} {reader}: {reading.measurement.msg_per_s:,.0f} msg/s, "
                          f"{reading.broker_us:.1f} us broker CPU, {reading.client_us:.1f} us client CPU per record "
                          f"(load {loads[-1]:.1f})", flush=True)
                runs.append(got)
        finally:
            peer.stop()
        size, count = log_cost(Path(workdir) / "logwright" / "data")
    popped = sum(run[reader].measurement.records for run in runs for reader in ("pop", "pop-tasks") if reader in run)
    rate = {reader: statistics.median(run[reader].measurement.msg_per_s for run in runs) for reader in readers}
    broker = {reader: statistics.median(run[reader].broker_us for run in runs) for reader in readers}
    client = {reader: statistics.median(run[reader].client_us for run in runs) for reader in readers}
    base = rate.get("fetch")
    lines = [
        f"# Pop beside Fetch and share consumption ({records:,} x {args.record_bytes} B, one partition, "
        f"{repeats} repeat(s), median; load average {min(loads):.1f}-{max(loads):.1f})",
        "",
        f"Pop v{args.pop_version}, up to {args.max_messages} a pop, acks in the next pop, clients read each "
        f"record's {args.touch}.",
        "",
        "| reader | msg/s | vs Fetch | broker CPU per record | client CPU per record |",
        "|---|---|---|---|---|",
    ]
    for reader in readers:
        versus = f"{rate[reader] / base:.2f}" if base else "-"
        lines.append(f"| {LABELS[reader].format(clients=args.clients)} | {rate[reader]:,.0f} | {versus} "
                     f"| {broker[reader]:.1f} us | {client[reader]:.1f} us |")
    if popped:
        lines += ["", f"Pop events in the log: {count:,} for {popped:,} records popped by the bundled client, "
                  f"{size / popped:.1f} bytes per popped record ({count / popped:.3f} events per record)."]
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
