"""Soak: many connections producing and consuming for minutes, with share groups and commits (issue 12).

One logwright broker (brokers.py: a free loopback port, a temporary data dir, ``wal`` durability) and, in this
one asyncio process, ``--connections`` client connections split three ways: aiokafka producers (one
connection each) sending a fixed total ``--rate`` of stamped records with acks=all; classic consumer-group
members (aiokafka, two connections each: the partition leader and the group coordinator) committing their
offsets every second; and share-group consumers (the bundled ``logwright.client``, one connection each)
acknowledging every record. Every group reads a topic of its own, so each record is consumed once.

Every ``--interval`` seconds the run samples the broker's RSS and open descriptors (/proc), its connections and
asyncio tasks (LogwrightBrokerStats, key 32007), the produce latency (send() to acknowledgement, p50/p99) and
the end-to-end latency (send() to the consumer holding the record) of that window, and this process's event
loop lag (the clients share one loop, so a busy client side shows here, not as broker latency). Any error
fails the run: a failed send, commit or acknowledgement, a consumer that dies, a record lost or delivered
twice, an ERROR logged by a client, an ERROR or traceback in the broker's log. After the clients leave,
the broker's connections, tasks, sockets and other descriptors must come back to where they were before
they came (within ``--grace`` seconds), and every classic group's committed offsets and share group's cursor
must stand at the end of what was produced; the store's open files are reported apart (RocksDB keeps its
table files open, so they follow the data, not the clients).

    python bench/soak.py                                  # 200 connections, 10 minutes (the issue's run)
    python bench/soak.py --duration 60 --connections 40   # a short check
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import math
import struct
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import brokers
import soak_report
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from logwright.client import AckReceipt, Client, Consumer, Timeout
from logwright.client.connection import Connection
from soak_probe import BrokerProbe, BrokerReading, OffsetTally, Window, run_queue_wait_s

STAMP = struct.Struct(">q")
CLASSIC_GROUP_SIZE = 3
SHARE_GROUP_SIZE = 4
COMMIT_EVERY_S = 1.0
LOOP_LAG_TICK_S = 0.05
SHUTDOWN_S = 120.0
"""Seconds the clients get, beyond the drain timeout, to flush, commit, acknowledge and leave."""
log = logging.getLogger("soak")


@dataclass(frozen=True, slots=True)
class Plan:
    """How ``connections`` are split: 40% producers, 30% classic members (two each), the rest share consumers;
    below 20 the minimums (a group of each kind) make it more."""

    producers: int
    classic_consumers: int
    share_consumers: int

    @classmethod
    def for_connections(cls, connections: int) -> Plan:
        producers = max(1, round(connections * 0.4))
        classic = max(CLASSIC_GROUP_SIZE, round(connections * 0.3 / 2 / CLASSIC_GROUP_SIZE) * CLASSIC_GROUP_SIZE)
        share = max(SHARE_GROUP_SIZE, connections - producers - 2 * classic)
        return cls(producers, classic, share)

    @property
    def connections(self) -> int:
        return self.producers + 2 * self.classic_consumers + self.share_consumers


class ErrorLog(logging.Handler):
    """Counts ERROR records of every client library (aiokafka, the bundled client) as soak errors."""

    def __init__(self, soak: Soak) -> None:
        super().__init__(logging.ERROR)
        self.soak = soak

    def emit(self, record: logging.LogRecord) -> None:
        self.soak.error(f"log {record.name}", record.getMessage())


@dataclass(slots=True)
class Soak:
    """The run's shared state (the current window, errors, what was produced and consumed) and the client loops."""

    args: argparse.Namespace
    window: Window = field(default_factory=Window)
    errors: Counter[str] = field(default_factory=Counter)
    first_errors: list[str] = field(default_factory=list)
    consumed: OffsetTally = field(default_factory=OffsetTally)
    end_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    produced_total: int = 0
    consumed_total: int = 0
    redelivered: int = 0
    producing: asyncio.Event = field(default_factory=asyncio.Event)
    stop_producing: asyncio.Event = field(default_factory=asyncio.Event)
    stop_consuming: asyncio.Event = field(default_factory=asyncio.Event)
    share_members: list[Consumer] = field(default_factory=list)

    def error(self, kind: str, detail: str) -> None:
        self.errors[kind] += 1
        self.window.errors += 1
        if len(self.first_errors) < 20:
            self.first_errors.append(f"{kind}: {detail}")

    def received(self, topic: str, partition: int, offset: int, value: bytes | None, now_ns: int) -> None:
        self.consumed.mark(topic, partition, offset)
        self.consumed_total += 1
        self.window.consumed += 1
        if value is not None and len(value) >= STAMP.size:
            self.window.end_to_end_ms.append((now_ns - STAMP.unpack_from(value)[0]) / 1e6)

    async def guarded(self, kind: str, body: Awaitable[None]) -> None:
        try:
            await body
        except Exception as failure:  # noqa: BLE001 - every failure of a client is a soak error, counted
            self.error(f"{kind} failed", f"{type(failure).__name__}: {failure}")

    # -- clients ------------------------------------------------------------------------------

    async def produce(self, bootstrap: str, topic: str, index: int) -> None:
        """Paced: one record every ``producers / rate`` seconds from a phase of its own, catching up if late."""
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0,
                                    enable_idempotence=False, client_id=f"soak-producer-{index}")
        await producer.start()
        interval = self.args.producers / self.args.rate
        value = bytearray(self.args.record_bytes)
        pending: set[asyncio.Future[object]] = set()
        try:
            await self.producing.wait()
            loop = asyncio.get_running_loop()
            due = loop.time() + interval * index / self.args.producers
            while not self.stop_producing.is_set():
                await asyncio.sleep(max(0.0, due - loop.time()))
                due += interval
                sent_ns = time.monotonic_ns()
                STAMP.pack_into(value, 0, sent_ns)
                future = await producer.send(topic, bytes(value))
                pending.add(future)
                future.add_done_callback(lambda done, at=sent_ns: self._acked(done, topic, at, pending))
            await producer.flush()
            if pending:
                await asyncio.wait(pending, timeout=60)
            if pending:
                self.error("produce", f"{len(pending)} sends of {topic} unanswered 60 s after the last")
        finally:
            await producer.stop()

    def _acked(self, future: asyncio.Future[object], topic: str, sent_ns: int,
               pending: set[asyncio.Future[object]]) -> None:
        pending.discard(future)
        if future.cancelled() or future.exception() is not None:
            self.error("produce", repr(None if future.cancelled() else future.exception()))
            return
        self.window.produce_ms.append((time.monotonic_ns() - sent_ns) / 1e6)
        self.window.produced += 1
        self.produced_total += 1
        metadata: Any = future.result()
        key = (topic, int(metadata.partition))
        self.end_offsets[key] = max(self.end_offsets.get(key, 0), int(metadata.offset) + 1)

    async def consume_classic(self, consumer: AIOKafkaConsumer) -> None:
        """Read with getmany, commit the positions every second and once more before leaving."""
        last_commit = time.monotonic()
        while not self.stop_consuming.is_set():
            batches = await consumer.getmany(timeout_ms=200)
            now_ns = time.monotonic_ns()
            for partition, records in batches.items():
                for record in records:
                    self.received(partition.topic, partition.partition, record.offset, record.value, now_ns)
            if batches and time.monotonic() - last_commit >= COMMIT_EVERY_S:
                await consumer.commit()
                last_commit = time.monotonic()
        await consumer.commit()

    async def consume_share(self, client: Client, topic: str, group: str) -> None:
        """Receive and acknowledge every record (grouped acks); a refused acknowledgement is an error."""
        consumer = await client.subscribe(topic, group, mode="shared", initial_position="earliest")
        receipts: deque[AckReceipt] = deque()
        self.share_members.append(consumer)
        while not self.stop_consuming.is_set():
            try:
                message = await consumer.receive(timeout=1.0)
            except Timeout:
                message = None
            if message is not None:
                self.received(message.topic, message.partition, message.offset, message.value, time.monotonic_ns())
                if message.delivery_count > 1:
                    self.redelivered += 1
                receipts.append(consumer.acknowledge(message))
            while receipts and receipts[0].done():
                await self.settled(receipts.popleft())
        await consumer.flush_acknowledgements()
        while receipts:
            await self.settled(receipts.popleft())

    async def settled(self, receipt: AckReceipt) -> None:
        try:
            await receipt.settled()
        except Exception as failure:  # noqa: BLE001 - counted
            self.error("acknowledge", f"{type(failure).__name__}: {failure}")

    async def watch_loop_lag(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            expected = loop.time() + LOOP_LAG_TICK_S
            await asyncio.sleep(LOOP_LAG_TICK_S)
            self.window.loop_lag_ms.append(max(0.0, loop.time() - expected) * 1000)


async def create_topics(bootstrap: str, names: dict[str, int]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="soak-admin")
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1) for name, partitions in names.items()])
    finally:
        await admin.close()


async def verify_positions(soak: Soak, bootstrap: str, classic_groups: int, share_groups: int) -> None:
    """Once everyone left: every classic group's committed offsets and every share group's cursor are at the end
    of what was produced, i.e. the commits and acknowledgements were durable, not just answered."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, client_id="soak-verify")
    await admin.start()
    try:
        for group in range(classic_groups):
            name = f"soak-classic-{group}"
            committed = {(tp.topic, tp.partition): meta.offset
                         for tp, meta in (await admin.list_consumer_group_offsets(name)).items()}
            for (topic, partition), end in soak.end_offsets.items():
                if topic == name and committed.get((topic, partition), 0) != end:
                    soak.error("commit", f"{name} committed {committed.get((topic, partition))} on partition "
                                         f"{partition}, {end} were produced")
    finally:
        await admin.close()
    client = await Client.connect(bootstrap, "soak-verify")
    try:
        for group in range(share_groups):
            name = f"soak-share-{group}"
            for cursor in await client.inspect(name, name):
                if cursor["log_end_offset"] and (not cursor["exists"] or cursor["backlog"] or cursor["in_flight"]):
                    soak.error("acknowledge", f"{name} partition {cursor['partition']}: backlog "
                                              f"{cursor.get('backlog')}, in flight {cursor.get('in_flight')}")
    finally:
        await client.close()


async def until(check: Callable[[], Awaitable[bool]], timeout_s: float, step_s: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if await check():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(step_s)


async def run(soak: Soak, broker: brokers.RunningPeer) -> soak_report.Run:
    args = soak.args
    bootstrap = broker.bootstrap
    probe = BrokerProbe(broker.process.pid, broker.workdir / "data", await Connection.open(bootstrap, "soak-probe"))
    classic_groups = args.classic_consumers // CLASSIC_GROUP_SIZE
    share_groups = -(-args.share_consumers // SHARE_GROUP_SIZE)
    topics = {f"soak-classic-{g}": CLASSIC_GROUP_SIZE for g in range(classic_groups)}
    topics |= {f"soak-share-{g}": SHARE_GROUP_SIZE for g in range(share_groups)}
    await create_topics(bootstrap, topics)
    readings: list[soak_report.Row] = []
    started = time.monotonic()
    last = (started, probe.cpu_s(), time.process_time(), probe.waited_s(), run_queue_wait_s())

    async def sample(phase: str) -> BrokerReading:
        nonlocal last
        try:
            reading = await probe.read()
        except Exception as failure:  # noqa: BLE001 - a broker that cannot be read is an error, the run goes on
            soak.error("probe", f"{phase}: {type(failure).__name__}: {failure}")
            reading = BrokerReading.unavailable()
        now, client_cpu, client_waited = time.monotonic(), time.process_time(), run_queue_wait_s()
        window, soak.window = soak.window.summary(), Window()
        elapsed = max(now - last[0], 1e-9)
        window["broker cpu %"] = 100 * (reading.cpu_s - last[1]) / elapsed
        window["client cpu %"] = 100 * (client_cpu - last[2]) / elapsed
        window["broker wait %"] = 100 * (reading.waited_s - last[3]) / elapsed
        window["client wait %"] = 100 * (client_waited - last[4]) / elapsed
        last = (now, reading.cpu_s, client_cpu, reading.waited_s, client_waited)
        readings.append(soak_report.Row(now, phase, reading, window))
        soak_report.say(soak_report.progress(readings[-1], started if phase != "before" else now))
        return reading

    await asyncio.sleep(1.0)  # the admin client's connection closes on the broker's side a moment later
    before = await sample("before")
    classic = [AIOKafkaConsumer(f"soak-classic-{i % classic_groups}", bootstrap_servers=bootstrap,
                                group_id=f"soak-classic-{i % classic_groups}", enable_auto_commit=False,
                                auto_offset_reset="earliest", client_id=f"soak-member-{i}")
               for i in range(args.classic_consumers)]
    await asyncio.gather(*(consumer.start() for consumer in classic))
    clients = [await Client.connect(bootstrap, f"soak-share-{i}") for i in range(args.share_consumers)]
    tasks = [asyncio.create_task(soak.guarded("classic consumer", soak.consume_classic(c))) for c in classic]
    tasks += [asyncio.create_task(soak.guarded("share consumer", soak.consume_share(
        client, f"soak-share-{i % share_groups}", f"soak-share-{i % share_groups}")))
        for i, client in enumerate(clients)]
    producer_topics = sorted(topics)
    tasks += [asyncio.create_task(soak.guarded("producer", soak.produce(
        bootstrap, producer_topics[i % len(producer_topics)], i))) for i in range(args.producers)]

    async def all_assigned() -> bool:
        return (all(c.assignment() for c in classic) and len(soak.share_members) == len(clients)
                and all(m.assignment for m in soak.share_members))

    if not await until(all_assigned, 120):
        soak.error("start", "not every consumer had partitions assigned within 120 s")
    lag = asyncio.create_task(soak.watch_loop_lag())
    soak.window = Window()
    started = time.monotonic()
    soak.producing.set()
    end = started + args.duration
    next_sample = started + args.interval
    while next_sample < end - args.interval / 2 and broker.alive():
        await asyncio.sleep(max(0.0, next_sample - time.monotonic()))
        await sample("load")
        next_sample += args.interval
    if broker.alive():
        await asyncio.sleep(max(0.0, end - time.monotonic()))
    soak.stop_producing.set()
    loaded = await sample("load")

    async def drained() -> bool:
        return soak.consumed.missing(soak.end_offsets) == 0 or not broker.alive()

    async def finish_clients() -> float:
        """Producers flush, consumers read the rest, commit or acknowledge, and leave: the drain's seconds."""
        drain_started = time.monotonic()
        await asyncio.gather(*tasks[len(classic) + len(clients):])
        await until(drained, args.drain_timeout)
        drain_s = time.monotonic() - drain_started
        soak.stop_consuming.set()
        await asyncio.gather(*tasks)
        await asyncio.gather(*(soak.guarded("classic close", c.stop()) for c in classic))
        await asyncio.gather(*(soak.guarded("share close", c.close()) for c in clients))
        return drain_s

    try:
        async with asyncio.timeout(args.drain_timeout + SHUTDOWN_S):
            drain_s = await finish_clients()
    except TimeoutError:
        soak.error("shutdown", f"the clients did not finish within {args.drain_timeout + SHUTDOWN_S:g} s")
        drain_s = math.nan
        for task in tasks:
            task.cancel()
    lag.cancel()
    await sample("drain")

    left = time.monotonic()

    async def back() -> bool:
        return (await probe.read()).client_bound() == before.client_bound()

    returned = broker.alive() and await until(back, args.grace, step_s=0.5)
    back_after_s = time.monotonic() - left if returned else None
    after = await sample("after")
    with contextlib.suppress(Exception):
        await probe.connection.close()
    if broker.alive():
        await soak.guarded("verify", verify_positions(soak, bootstrap, classic_groups, share_groups))
    missing = soak.consumed.missing(soak.end_offsets)
    if missing:
        soak.error("lost", f"{missing} acknowledged records were never consumed")
    if soak.consumed.duplicates:
        soak.error("duplicate", f"{soak.consumed.duplicates} records were delivered more than once")
    if not broker.alive():
        soak.error("broker", "the broker process exited")
    elif not returned:
        soak.error("leak", f"after {args.grace:g} s connections/tasks/sockets/other fds are "
                           f"{after.client_bound()}, were {before.client_bound()}")
    return soak_report.Run(args=vars(args), load_started=started, rows=readings, before=before, loaded=loaded,
                           after=after, back_after_s=back_after_s, drain_s=drain_s,
                           produced=soak.produced_total, consumed=soak.consumed_total, missing=missing,
                           duplicates=soak.consumed.duplicates, redelivered=soak.redelivered,
                           errors=dict(soak.errors), first_errors=list(soak.first_errors))


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of producing (600)")
    parser.add_argument("--connections", type=int, default=200, help="client connections in all (200)")
    parser.add_argument("--rate", type=float, default=1000.0, help="records/s offered by all producers (1000)")
    parser.add_argument("--record-bytes", type=int, default=256, help="value size, at least 8 (256)")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples (10)")
    parser.add_argument("--grace", type=float, default=10.0, help="seconds for the broker to let go (10)")
    parser.add_argument("--drain-timeout", type=float, default=60.0, help="seconds to consume the rest (60)")
    parser.add_argument("--tmp-root", type=Path, default=None, help="where the broker's data dir goes")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "soak.md")
    args = parser.parse_args()
    plan = Plan.for_connections(args.connections)
    args.producers, args.classic_consumers, args.share_consumers = (
        plan.producers, plan.classic_consumers, plan.share_consumers)
    args.client_connections = plan.connections
    args.record_bytes = max(args.record_bytes, STAMP.size)
    return args


def main() -> int:
    args = parse()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    say = soak_report.say
    with tempfile.TemporaryDirectory(prefix="soak-", dir=args.tmp_root) as workdir:
        with brokers.running("logwright", Path(workdir) / "logwright") as broker:
            say(f"broker on {broker.bootstrap} (pid {broker.process.pid}); {args.producers} producers, "
                f"{args.classic_consumers} classic members, {args.share_consumers} share consumers, "
                f"{args.rate:g} msg/s for {args.duration:g} s")

            async def session() -> soak_report.Run:
                soak = Soak(args)
                logging.getLogger().addHandler(ErrorLog(soak))
                return await run(soak, broker)

            result = asyncio.run(session())
            broker.stop()
            result.broker_log_problems = soak_report.broker_log_problems(broker.log_path)
    soak_report.write(result, args.out)
    say(soak_report.summary(result))
    say(f"wrote {args.out}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
