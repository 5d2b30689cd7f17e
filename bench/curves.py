"""How produce and consume cost grows with record size and with partitions, for bench/compare.py (issue 18).

One workload per point of two curves, every peer in the same session: record size (100 B, 1 KiB, 100 KiB,
1 MB; one partition) and partitions (1, 100, 1,000; 1 KiB records). Each repeat creates a fresh topic with the
point's partitions (timed: topic creation is part of what partitions cost), fills it with about 100 MB of
records (20 MB in a quick run) from one librdkafka producer (``wire_workload.PRODUCER_CONFIG``, null keys, so
the sticky partitioner spreads batches over the partitions), reads every partition back from offset 0 with
one assigned librdkafka consumer (``wire_workload.CONSUMER_CONFIG``), and deletes the topic. Beside the
throughput it reports the broker's CPU seconds per GB of values moved, read from /proc for the broker's
whole process group (the JVM with its GC and network threads, logwright's event loop with RocksDB's
threads) over each phase: the cost that a faster client or a bigger machine does not hide.

    .venv/bin/python bench/compare.py --only curves --peers kafka,logwright [--quick] [--repeats 3]
        --out bench/results/curves
"""

from __future__ import annotations

import time
from collections.abc import Callable

from compare_api import Context, Metric, Workload
from wire_workload import PRODUCER_CONFIG, consume, create_topic, delete_topic, produce

MB = 1_000_000
TOTAL_BYTES = (100 * MB, 20 * MB)
"""Value bytes per point and repeat: full run, quick run."""

SIZE_CURVE = (100, 1024, 100 * 1024, MB)
"""Record sizes at one partition. The largest is 1 MB, not 1 MiB: Kafka's default ``max.message.bytes``
(1 MiB + 12) refuses a batch holding a 1 MiB value, and a default broker is what is compared."""

PARTITION_CURVE = (1, 100, 1000)
"""Partition counts at 1 KiB records."""

POINTS = tuple(dict.fromkeys([(size, 1) for size in SIZE_CURVE] + [(1024, count) for count in PARTITION_CURVE]))


def metrics() -> tuple[Metric, ...]:
    return (
        Metric("produce MB/s", "MB/s", target=1.0),
        Metric("consume MB/s", "MB/s", target=1.0),
        Metric("produce CPU s/GB", "s/GB", higher_is_better=False, target=0.5),
        Metric("consume CPU s/GB", "s/GB", higher_is_better=False, target=0.5),
        Metric("create topic s", "s", higher_is_better=False, plot=False, decimals=2),
    )


def _producer_config(record_bytes: int) -> dict[str, object]:
    """librdkafka's ``message.max.bytes`` (1,000,000 by default) raised only for records that would not fit. It
    caps a whole batch too (set to 2 x 1 KiB + 10 kB it made 11-record batches), so elsewhere the default
    stays and ``batch.size`` (1 MB) shapes the batches, as for an application that tunes nothing."""
    return {"message.max.bytes": max(1_000_000, 2 * record_bytes + 10_000)}


def measure_point(record_bytes: int, partitions: int) -> Callable[[Context, str], dict[str, float]]:
    def measure(ctx: Context, peer: str) -> dict[str, float]:
        broker = ctx.broker(peer)
        records = max(ctx.size(*(total // record_bytes for total in TOTAL_BYTES)), partitions)
        gigabytes = records * record_bytes / 1e9
        began = time.perf_counter()
        topic = create_topic(broker.bootstrap, f"curve-{record_bytes}-{partitions}", partitions)
        created = time.perf_counter() - began
        try:
            cpu_0 = broker.cpu_seconds()
            produced = produce(broker.bootstrap, topic, records, record_bytes, config=_producer_config(record_bytes))
            cpu_1 = broker.cpu_seconds()
            consumed = consume(broker.bootstrap, topic, records, record_bytes, partitions=partitions)
            cpu_2 = broker.cpu_seconds()
        finally:
            delete_topic(broker.bootstrap, topic)
        return {"produce MB/s": produced.mb_per_s, "consume MB/s": consumed.mb_per_s,
                "produce CPU s/GB": (cpu_1 - cpu_0) / gigabytes, "consume CPU s/GB": (cpu_2 - cpu_1) / gigabytes,
                "create topic s": created}

    return measure


def _label(record_bytes: int) -> str:
    if record_bytes >= MB:
        return f"{record_bytes // MB} MB"
    return f"{record_bytes // 1024} KiB" if record_bytes % 1024 == 0 else f"{record_bytes} B"


WORKLOADS = [
    Workload(f"curve: {_label(size)} records, {partitions:,} partition{'s' if partitions > 1 else ''}", metrics(),
             measure_point(size, partitions),
             method=(f"A fresh topic of {partitions:,} partition{'s' if partitions > 1 else ''} (creation timed), "
                     f"{TOTAL_BYTES[0] // MB} MB of {_label(size)} values ({TOTAL_BYTES[1] // MB} MB in a quick "
                     f"run) produced by one librdkafka producer (acks=all, linger.ms={PRODUCER_CONFIG['linger.ms']}, "
                     "no compression, null keys, sticky partitioner), then read from offset 0 of every partition by "
                     "one assigned librdkafka consumer (fetch.queue.backoff.ms=10, see wire_workload); broker CPU "
                     "seconds (user + system, the broker's process group, /proc) per GB of values in each phase. "
                     "Record values are zero bytes."),
             warmup=True, warmup_scale=0.1)
    for size, partitions in POINTS
]
