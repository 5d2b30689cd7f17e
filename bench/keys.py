"""Issue 16's benchmark: what reading record keys costs produce, and how fast compaction runs under a produce load.

Part 1, key-index cost: one logwright broker, three one-partition topics per repeat: *plain*, *dedup*
(``logwright.dedup.key=record-key``, a 10-minute window: every record's key is looked up and indexed) and
*compacted* (``cleanup.policy=compact``: every record's key is read to refuse keyless ones). A librdkafka producer
(``acks=all``, linger 5 ms) writes the same N records with distinct keys to each in turn, the order rotating
between repeats; figures are records/s timed by the client, and broker CPU microseconds per record (user +
system from ``/proc``), since wall times on a shared machine move with the others' work.

Part 2, compaction under load: a thread produces to a plain topic without pause while the main thread writes
M updates over K keys to a compacted topic with 1 MiB segments, so the cleaner runs passes as segments close, in
slices, between produce requests. Compaction speed is the records the passes covered (dirty range) per second of
pass time, from the broker's pass log lines; the load's records/s is printed beside the same load without
compaction running. Pass time is wall time (slices and what the broker serves between them); the CPU the slices
themselves took (event loop thread) is printed beside it and moves less with the machine's load.

    .venv/bin/python bench/keys.py [--records 100000] [--record-bytes 100] [--repeats 3]
        [--updates 200000] [--keys 1000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.testing.broker_process import BrokerProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402 - bench/ is a folder of scripts, not a package

PRODUCER = {"acks": "all", "linger.ms": 5, "compression.type": "none", "queue.buffering.max.messages": 1_000_000}
PASS_LINE = re.compile(r"compacted from (\d+) to (\d+): (\d+) records.* ([\d.]+) ms \(([\d.]+) ms CPU\)")
KINDS = {"plain": {}, "dedup": {"logwright.dedup.key": "record-key", "logwright.dedup.window.ms": "600000"},
         "compacted": {"cleanup.policy": "compact"}}


def create(bootstrap: str, configs: dict[str, str]) -> str:
    name = f"keys-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(name, 1, config=configs)])[name].result(30)
    return name



def fill(bootstrap: str, topic: str, count: int, value: bytes, keys: int | None = None) -> float:
    """Produce ``count`` keyed records (distinct keys, or ``keys`` keys round-robin); seconds to all acked."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    started = time.perf_counter()
    for index in range(count):
        key = b"key-%d" % (index % keys if keys else index)
        while True:
            try:
                producer.produce(topic, value=value, key=key, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
        if index % 1000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    return time.perf_counter() - started


def key_index_cost(broker: BrokerProcess, pid: int, records: int, value: bytes, repeats: int) -> None:
    rates: dict[str, list[float]] = {kind: [] for kind in KINDS}
    cpu: dict[str, list[float]] = {kind: [] for kind in KINDS}
    order = list(KINDS)
    for repeat in range(repeats):
        for kind in order[repeat % 3:] + order[:repeat % 3]:
            topic = create(broker.bootstrap, dict(KINDS[kind]))
            before = brokers.process_cpu_seconds(pid)
            seconds = fill(broker.bootstrap, topic, records, value)
            cpu[kind].append((brokers.process_cpu_seconds(pid) - before) / records * 1e6)
            rates[kind].append(records / seconds)
    plain = statistics.median(rates["plain"])
    plain_cpu = statistics.median(cpu["plain"])
    print(f"key-index cost, {records} records of {len(value)} B with distinct keys, {repeats} repeats (medians):")
    for kind in KINDS:
        rate, micros = statistics.median(rates[kind]), statistics.median(cpu[kind])
        print(f"  {kind:10s} {rate:10,.0f} records/s ({rate / plain:5.2f}x plain)   broker CPU {micros:6.1f} us/record "
              f"({micros - plain_cpu:+.1f})   runs: {', '.join(f'{r:,.0f}' for r in rates[kind])}")


def load(bootstrap: str, topic: str, value: bytes, stop: threading.Event, counted: list[int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})

    def delivered(error: object, _: object) -> None:
        if error is None:
            counted[0] += 1

    while not stop.is_set():
        try:
            producer.produce(topic, value=value, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.flush(60)


def compaction_under_load(broker: BrokerProcess, updates: int, keys: int, value: bytes) -> None:
    plain = create(broker.bootstrap, {})
    counted, stop = [0], threading.Event()
    thread = threading.Thread(target=load, args=(broker.bootstrap, plain, value, stop, counted))
    thread.start()
    time.sleep(3)
    alone = counted[0] / 3
    log_offset = broker.log_path.stat().st_size
    compacted = create(broker.bootstrap, {"cleanup.policy": "compact", "segment.bytes": "1048576"})
    started, loaded_from = time.perf_counter(), counted[0]
    fill(broker.bootstrap, compacted, updates, value, keys)
    passes: list[tuple[int, int, float, float]] = []
    quiet_since = time.perf_counter()
    while time.perf_counter() - quiet_since < 3 and time.perf_counter() - started < 120:
        text = broker.log_path.read_bytes()[log_offset:].decode(errors="replace")
        found = [(int(m[2]) - int(m[1]), int(m[3]), float(m[4]), float(m[5])) for m in PASS_LINE.finditer(text)]
        if len(found) != len(passes):
            passes, quiet_since = found, time.perf_counter()
        time.sleep(0.5)
    elapsed = time.perf_counter() - started
    stop.set()
    thread.join()
    under = (counted[0] - loaded_from) / elapsed
    covered, removed, ms = sum(p[0] for p in passes), sum(p[1] for p in passes), sum(p[2] for p in passes)
    cpu_ms = sum(p[3] for p in passes)
    print(f"compaction under load: {updates} updates of {keys} keys ({len(value)} B values), 1 MiB segments")
    print(f"  {len(passes)} passes covered {covered:,} records, removed {removed:,}, in {ms / 1000:.2f} s of pass "
          f"time: {covered / (ms / 1000) if ms else 0:,.0f} records/s; {cpu_ms / 1000:.2f} s of CPU in the slices: "
          f"{covered / (cpu_ms / 1000) if cpu_ms else 0:,.0f} records/s")
    print(f"  load producer meanwhile {under:,.0f} records/s (alone before: {alone:,.0f} records/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--updates", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="20,000 records, 50,000 updates (about 20 s)")
    args = parser.parse_args()
    if args.quick:
        args.records, args.updates = 20_000, 50_000
    value = b"v" * args.record_bytes
    print(f"load average at start: {os.getloadavg()[0]:.1f} (2 cores shared with other work)")
    with tempfile.TemporaryDirectory() as directory:
        broker = BrokerProcess(Path(directory) / "data").start()
        try:
            assert broker.process is not None
            key_index_cost(broker, broker.process.pid, args.records, value, args.repeats)
            compaction_under_load(broker, args.updates, args.keys, value)
        finally:
            broker.stop()
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
