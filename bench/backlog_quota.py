"""Produce throughput with a backlog quota configured but not reached, against no quota, on the same broker.

One logwright broker (the ``backlog_quota`` plugin loaded as always) serves two one-partition topics per repeat:
*plain* has no quota, *quota* has ``logwright.backlog.quota.bytes`` and ``.records`` far above what the run
writes (policy ``producer_request_hold``); each has a consumer group committed at offset 0, so every produce
request to *quota* is checked against an exact, growing backlog. A librdkafka producer (``acks=all``, linger
5 ms) fills each in turn, the order alternating between repeats; the figure is records per second, timed by
the client, and the cost is the quota's median against the plain median; since other work on the machine
moves wall-clock figures, the broker process's CPU time per record (user + system, from ``/proc``) is
reported beside them. A second broker with
``--disable-plugin backlog_quota`` fills a plain topic the same way: what the plugin costs when it is loaded at
all (every produce request then builds an ``AppendRequest``).

Then the release latency: a topic with ``logwright.backlog.quota.records`` = R holds a producer's next record
while a group sits at offset 0; the group commits the log end and the time from that commit's return to the
held record's delivery report is measured, ``--releases`` times.

    .venv/bin/python bench/backlog_quota.py [--records 200000] [--record-bytes 100] [--repeats 3]
        [--releases 20] [--json runs.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.testing.broker_process import BrokerProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))

import brokers  # noqa: E402 - bench/ is a folder of scripts, not a package

PRODUCER = {"acks": "all", "linger.ms": 5, "compression.type": "none", "queue.buffering.max.messages": 1_000_000}


def topic(bootstrap: str, configs: dict[str, str]) -> str:
    name = f"bq-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, config=configs)])[name].result(30)
    return name


def commit(bootstrap: str, group: str, name: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(name, 0, offset)], asynchronous=False)
    consumer.close()



def fill(bootstrap: str, name: str, records: int, record_bytes: int) -> float:
    """Records per second for ``records`` records, from the first produce to the last delivery report."""
    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER})
    value = b"x" * record_bytes
    failed: list[Any] = []
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(name, value, on_delivery=lambda error, _: error is not None and failed.append(error))
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(300)
    elapsed = time.perf_counter() - started
    if failed:
        raise SystemExit(f"{len(failed)} records failed, first: {failed[0]}")
    return records / elapsed


def throughput(bootstrap: str, pid: int, records: int, record_bytes: int, repeats: int
               ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Records per second and the broker's CPU microseconds per record, per kind of topic."""
    limit = str(10 * records * (record_bytes + 100))
    runs: dict[str, list[float]] = {"plain": [], "quota": []}
    cpu: dict[str, list[float]] = {"plain": [], "quota": []}
    for repeat in range(repeats):
        order = ("plain", "quota") if repeat % 2 == 0 else ("quota", "plain")
        for kind in order:
            configs = ({"logwright.backlog.quota.bytes": limit, "logwright.backlog.quota.records": str(10 * records)}
                       if kind == "quota" else {})
            name = topic(bootstrap, configs)
            commit(bootstrap, f"reader-{name}", name, 0)
            used = brokers.process_cpu_seconds(pid)
            runs[kind].append(fill(bootstrap, name, records, record_bytes))
            cpu[kind].append(1e6 * (brokers.process_cpu_seconds(pid) - used) / records)
            print(f"  {kind}: {runs[kind][-1]:,.0f} msg/s, {cpu[kind][-1]:.2f} broker CPU us/record", file=sys.stderr)
    return runs, cpu


def release_latency(bootstrap: str, releases: int) -> list[float]:
    """Seconds from the start of the commit that drains the backlog to the held record's delivery report (the
    commit's own round trip included: the release is answered about when the commit is)."""
    held_records = 10
    name = topic(bootstrap, {"logwright.backlog.quota.records": str(held_records)})
    group = f"reader-{name}"
    commit(bootstrap, group, name, 0)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "message.timeout.ms": 120_000})
    for _ in range(held_records):
        producer.produce(name, b"fill")
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    latencies: list[float] = []
    end = held_records
    delivered: list[float] = []
    for _ in range(releases):
        delivered.clear()
        producer.produce(name, b"held", on_delivery=lambda error, _: delivered.append(time.perf_counter()))
        deadline = time.perf_counter() + 0.3
        while time.perf_counter() < deadline:
            producer.poll(0.02)
        if delivered:
            raise SystemExit("the record was not held")
        committed = time.perf_counter()
        consumer.commit(offsets=[TopicPartition(name, 0, end - held_records + 1)], asynchronous=False)
        while not delivered:
            producer.poll(0.001)
        latencies.append(delivered[0] - committed)
        end += 1
    consumer.close()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--releases", type=int, default=20)
    parser.add_argument("--json", dest="json_path", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        broker = BrokerProcess(Path(scratch) / "data").start()
        try:
            assert broker.process is not None
            runs, cpu = throughput(broker.bootstrap, broker.process.pid, args.records, args.record_bytes, args.repeats)
            latencies = release_latency(broker.bootstrap, args.releases)
        finally:
            broker.stop()
        bare = BrokerProcess(Path(scratch) / "bare", disabled=("backlog_quota",)).start()
        try:
            runs["plugin disabled"] = [fill(bare.bootstrap, topic(bare.bootstrap, {}), args.records,
                                            args.record_bytes) for _ in range(args.repeats)]
        finally:
            bare.stop()
    plain, quota = statistics.median(runs["plain"]), statistics.median(runs["quota"])
    disabled = statistics.median(runs["plugin disabled"])
    report = {
        "records": args.records, "record_bytes": args.record_bytes, "runs": runs,
        "median_msg_per_s": {"plain": plain, "quota": quota, "plugin disabled": disabled},
        "quota_cost_percent": 100 * (plain - quota) / plain,
        "broker_cpu_us_per_record": {kind: statistics.median(values) for kind, values in cpu.items()},
        "cpu_runs": cpu,
        "plugin_cost_percent": 100 * (disabled - plain) / disabled,
        "release_ms": {"median": 1000 * statistics.median(latencies), "max": 1000 * max(latencies),
                       "samples": [1000 * value for value in latencies]},
    }
    print(f"median msg/s: no quota {plain:,.0f}, quota not reached {quota:,.0f} "
          f"({report['quota_cost_percent']:+.1f}% cost), plugin disabled {disabled:,.0f} "
          f"(plugin loaded costs {report['plugin_cost_percent']:+.1f}%)")
    plain_cpu, quota_cpu = report["broker_cpu_us_per_record"]["plain"], report["broker_cpu_us_per_record"]["quota"]
    print(f"broker CPU per record (median): no quota {plain_cpu:.2f} us, quota not reached {quota_cpu:.2f} us "
          f"({100 * (quota_cpu - plain_cpu) / plain_cpu:+.1f}%)")
    print(f"held producer released {report['release_ms']['median']:.1f} ms (median) after the draining commit, "
          f"max {report['release_ms']['max']:.1f} ms over {len(latencies)}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
