"""End-to-end latency at a fixed rate for bench/compare.py: produce() call to the consumer having the record.

A paced librdkafka producer in this process sends ``RATE`` records/s of ``RECORD_BYTES`` to a fresh
one-partition topic; each value starts with the ``CLOCK_MONOTONIC`` nanoseconds of its ``produce()`` call.
A librdkafka consumer in a second process (spawned, so it shares no GIL and no librdkafka threads with the
producer) has the partition assigned and fetching before the first record is sent, and subtracts that stamp
from the clock when ``consume()`` hands it the record. Both processes read the same system-wide clock, so
no clock skew enters. The first ``WARMUP_S`` seconds of records are dropped (connections, JIT, first-request
work); percentiles are nearest-rank over the rest. The producer sleeps between records rather than spinning,
catching up in small bursts when a sleep overshoots, so it does not take a core from the broker.
"""

from __future__ import annotations

import multiprocessing
import struct
import time
from array import array
from multiprocessing.connection import Connection
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event

from compare_api import Context, Metric, Workload
from compare_report import percentile
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer, TopicPartition
from wire_workload import CONSUMER_CONFIG, PRODUCER_CONFIG, create_topic, delete_topic

RATE = 5_000
RECORD_BYTES = 1024
SECONDS = (15.0, 6.0)
"""Seconds of paced sending in a full and in a quick run (the warm-up included)."""
WARMUP_S = 2.0
LATENCY_PRODUCER = {**PRODUCER_CONFIG, "linger.ms": 1}
"""acks=all as for throughput, but a 1 ms linger: a latency-minded application does not wait 5 ms to batch."""
STAMP = struct.Struct(">q")


def _consume(bootstrap: str, topic: str, ready: Event, total: Synchronized[int], out: Connection) -> None:
    """Child process: read the partition from offset 0; send back (send stamps, latencies) in ns."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"latency-{topic}", **CONSUMER_CONFIG})
    sent, latency = array("q"), array("q")
    try:
        partition = TopicPartition(topic, 0, OFFSET_BEGINNING)
        consumer.assign([partition])
        deadline = time.monotonic() + 30
        while consumer.get_watermark_offsets(partition, cached=True) in (None, (-1001, -1001)):
            consumer.poll(0.1)  # until a Fetch answer came back: the fetch loop is running
            if time.monotonic() > deadline:
                break
        ready.set()
        idle_since = time.monotonic()
        while total.value < 0 or len(latency) < total.value:
            message = consumer.poll(0.1)  # consume(n, t) would wait for n records or t: batching, not latency
            now = time.monotonic_ns()
            if message is None:
                if time.monotonic() - idle_since > 30:
                    break
                continue
            idle_since = time.monotonic()
            error = message.error()
            if error is None:
                stamp = STAMP.unpack_from(message.value() or bytes(8))[0]
                sent.append(stamp)
                latency.append(now - stamp)
            elif error.code() != KafkaError._PARTITION_EOF:
                raise RuntimeError(str(error))
    finally:
        consumer.close()
        out.send_bytes(sent.tobytes())
        out.send_bytes(latency.tobytes())
        out.close()


def paced_produce(bootstrap: str, topic: str, rate: int, seconds: float, record_bytes: int) -> tuple[int, float]:
    """Send ``rate * seconds`` stamped records on schedule; returns (records, the rate achieved)."""
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failures.append(error)

    producer = Producer({"bootstrap.servers": bootstrap, **LATENCY_PRODUCER})
    producer.list_topics(topic, timeout=30)
    value = bytearray(record_bytes)
    total = int(rate * seconds)
    interval_ns = 1e9 / rate
    started = time.monotonic_ns()
    sent = 0
    while sent < total:
        due = min(total, int((time.monotonic_ns() - started) / interval_ns) + 1)
        while sent < due:
            STAMP.pack_into(value, 0, time.monotonic_ns())
            producer.produce(topic, bytes(value), on_delivery=delivered)
            sent += 1
        producer.poll(0)
        delay_ns = started + sent * interval_ns - time.monotonic_ns()
        if delay_ns > 0:
            time.sleep(delay_ns / 1e9)
    achieved = sent / ((time.monotonic_ns() - started) / 1e9)
    remaining = producer.flush(60)
    if failures or remaining:
        raise RuntimeError(f"latency produce to {topic}: {len(failures)} failed ({failures[:1]}), {remaining} unsent")
    return sent, achieved


def end_to_end(bootstrap: str, rate: int, seconds: float, record_bytes: int = RECORD_BYTES,
               warmup_s: float = WARMUP_S) -> dict[str, float]:
    """p50/p99/p999/max latency in ms of the records sent after the warm-up, and the rate achieved."""
    spawn = multiprocessing.get_context("spawn")
    topic = create_topic(bootstrap, "latency")
    ready, total = spawn.Event(), spawn.Value("q", -1)
    receive, send = spawn.Pipe(duplex=False)
    consumer = spawn.Process(target=_consume, args=(bootstrap, topic, ready, total, send), daemon=True)
    consumer.start()
    try:
        if not ready.wait(60):
            raise RuntimeError("the latency consumer did not start fetching within 60 s")
        began = time.monotonic_ns()
        sent, achieved = paced_produce(bootstrap, topic, rate, seconds, record_bytes)
        total.value = sent
        stamps, latencies = array("q"), array("q")
        stamps.frombytes(receive.recv_bytes())
        latencies.frombytes(receive.recv_bytes())
        consumer.join(30)
    finally:
        if consumer.is_alive():
            consumer.kill()
            consumer.join(5)
        delete_topic(bootstrap, topic)
    if len(latencies) != sent:
        raise RuntimeError(f"latency: {len(latencies)} of {sent} records reached the consumer")
    cutoff = began + warmup_s * 1e9
    kept = [lat / 1e6 for stamp, lat in zip(stamps, latencies, strict=True) if stamp >= cutoff]
    return {"p50": percentile(kept, 50), "p99": percentile(kept, 99), "p999": percentile(kept, 99.9),
            "max": max(kept), "sent msg/s": achieved}


def measure(ctx: Context, peer: str) -> dict[str, float]:
    seconds = (SECONDS[1] if ctx.quick else SECONDS[0]) * ctx.scale
    return end_to_end(ctx.broker(peer).bootstrap, RATE, max(seconds, WARMUP_S + 1))


WORKLOADS = [
    Workload(f"end-to-end latency, {RECORD_BYTES // 1024} KiB at {RATE:,} msg/s",
             (Metric("p50", "ms", higher_is_better=False, decimals=2),
              Metric("p99", "ms", higher_is_better=False, target=1.5, decimals=2),
              Metric("p999", "ms", higher_is_better=False, decimals=2),
              Metric("max", "ms", higher_is_better=False, plot=False, decimals=1),
              Metric("sent msg/s", "msg/s", plot=False, decimals=0)),
             measure,
             method=(f"A paced librdkafka producer sends {RATE:,} records/s of {RECORD_BYTES // 1024} KiB for "
                     f"{SECONDS[0]:g} s ({SECONDS[1]:g} s in a quick run) to a fresh one-partition topic "
                     "(acks=all, linger.ms=1); each value starts with the CLOCK_MONOTONIC time of its produce() "
                     "call. A librdkafka consumer in a second process, assigned and fetching before the first "
                     "record is sent, subtracts it from the same clock when poll() hands it the record. Records "
                     f"of the first {WARMUP_S:g} s are dropped; percentiles are nearest-rank over the rest "
                     f"({RATE:,} × {SECONDS[0] - WARMUP_S:g} s = {int(RATE * (SECONDS[0] - WARMUP_S)):,} records "
                     f"per repeat, so p999 is the {int(RATE * (SECONDS[0] - WARMUP_S) / 1000)}th worst). The "
                     "producer sleeps between records instead of spinning, so it does not take a core from the "
                     "broker; 'sent msg/s' is the rate it kept. A warm-up run of half the length per broker is "
                     "discarded: Kafka's tail shrinks over its first ~30 s of this load (JIT; here p99 was 1.3 s on "
                     "a just-started JVM, 21 ms four 10 s runs later)."),
             warmup=True, warmup_scale=0.5)
]
