"""Produce beside consumers idling at the tail of other topics, for bench/compare.py (issue 18).

A broker keeps every waiting Fetch until records arrive for it or its wait runs out. If it wakes every waiting
Fetch on every commit anywhere, each re-reads all its partitions per commit of an unrelated producer, and that
producer pays in throughput and the broker in CPU. Each repeat measures one librdkafka producer (1 KiB values,
``acks=all``, ``linger.ms=0``: many small commits) into a fresh one-partition topic twice: alone, then while
``IDLE_CONSUMERS`` assigned consumers long-poll the end of a ``PARTITIONS``-partition topic nobody writes to.
"""

from __future__ import annotations

import threading
import time

from compare_api import Context, Metric, Workload
from confluent_kafka import OFFSET_END, Consumer, TopicPartition
from wire_workload import create_topic, delete_topic, produce

IDLE_CONSUMERS = 20
PARTITIONS = 100
RECORD_BYTES = 1024
RECORDS = (500_000, 30_000)
"""Records per produce run: full run, quick run. 100,000 (100 MB) took 0.16-0.3 s: with linger.ms=0 librdkafka's
requests swing between 1 MB and single records as its socket fills and drains (measured on logwright: seconds of
p50 1.1 KB beside seconds of p50 1 MB), so a run that short caught one phase or the other (logwright 320-479,
Kafka 516-653 MB/s in session 27); half a GB spans several."""


def _produce(ctx: Context, peer: str) -> tuple[float, float]:
    """MB/s and broker CPU seconds per GB of one producer run into a fresh topic."""
    broker = ctx.broker(peer)
    topic = create_topic(broker.bootstrap, "busy")
    try:
        cpu = broker.cpu_seconds()
        produced = produce(broker.bootstrap, topic, ctx.size(*RECORDS), RECORD_BYTES, config={"linger.ms": 0})
        cpu = broker.cpu_seconds() - cpu
    finally:
        delete_topic(broker.bootstrap, topic)
    return produced.mb_per_s, cpu / (produced.records * RECORD_BYTES / 1e9)


def measure(ctx: Context, peer: str) -> dict[str, float]:
    alone, alone_cpu = _produce(ctx, peer)
    bootstrap = ctx.broker(peer).bootstrap
    quiet = create_topic(bootstrap, "quiet", PARTITIONS)
    stop = threading.Event()
    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": f"idle-{quiet}-{number}", "log_level": 3,
                           "enable.auto.commit": False}) for number in range(IDLE_CONSUMERS)]

    def poll(consumer: Consumer) -> None:
        consumer.assign([TopicPartition(quiet, index, OFFSET_END) for index in range(PARTITIONS)])
        while not stop.is_set():
            consumer.consume(100, 0.2)

    threads = [threading.Thread(target=poll, args=(consumer,), daemon=True) for consumer in consumers]
    try:
        for thread in threads:
            thread.start()
        time.sleep(3.0)  # every consumer has found the end and is long-polling
        beside, beside_cpu = _produce(ctx, peer)
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        for consumer in consumers:
            consumer.close()
        delete_topic(bootstrap, quiet)
    return {"produce MB/s alone": alone, "produce MB/s beside idle consumers": beside,
            "broker CPU s/GB alone": alone_cpu, "broker CPU s/GB beside idle consumers": beside_cpu}


WORKLOADS = [
    Workload(
        f"produce beside {IDLE_CONSUMERS} idle consumers",
        (Metric("produce MB/s alone", "MB/s", target=1.0),
         Metric("produce MB/s beside idle consumers", "MB/s", target=1.0),
         Metric("broker CPU s/GB alone", "s/GB", higher_is_better=False, target=0.5, decimals=2),
         Metric("broker CPU s/GB beside idle consumers", "s/GB", higher_is_better=False, target=0.5,
                decimals=2)),
        measure,
        method=(f"{RECORDS[0]:,} records of 1 KiB ({RECORDS[1]:,} in a quick run) from one librdkafka producer "
                "(acks=all, linger.ms=0) into a fresh one-partition topic, first alone, then while "
                f"{IDLE_CONSUMERS} assigned librdkafka consumers (defaults: fetch.wait.max.ms 500) long-poll the end "
                f"of a {PARTITIONS}-partition topic nobody writes to; broker CPU (all its threads: see the broker "
                "CPU line above) per GB "
                "produced. A broker that wakes every waiting Fetch on every commit pays for each idle partition "
                "per commit."),
        not_applicable={"tansu": "not part of this comparison"}),
]
