"""How produce and consume cost grows with record size and with partitions, for bench/compare.py (issue 18).

One workload per point of three curves, every peer in the same session: record size (100 B, 1 KiB, 100 KiB,
1 MB; one partition), zstd beside no compression (1 KiB and 100 KiB; text-like values that zstd shrinks
about 3x, since zero bytes would shrink to nothing) and partitions (1, 100, 1,000, 10,000; 1 KiB keyed
records, see ``PARTITION_CURVE``). Each repeat creates a fresh topic with the
point's partitions (timed: topic creation is part of what partitions cost), fills it with about 100 MB of
records (20 MB in a quick run but on the partition curve) from one librdkafka producer
(``wire_workload.PRODUCER_CONFIG``), reads every partition back from its start with
one assigned librdkafka consumer (``wire_workload.CONSUMER_CONFIG``), and deletes the topic. Beside the
throughput it reports the median and p99 of a Metadata request for the topic (200 asked one after another by
an AdminClient once the topic is filled: what every client asks when it starts and on every refresh) and
the broker's CPU seconds per GB of values moved (uncompressed), read from the broker's own cgroup
(bench/cgroup_cpu.py; /proc where the machine has no cgroup v2), so it holds all of it (the JVM with its GC
and network threads, logwright's event loop with RocksDB's threads) over each phase: the cost that a faster
client or a bigger machine does not hide.

    .venv/bin/python bench/compare.py --only curves --peers kafka,logwright [--quick] [--repeats 3]
        --out bench/results/curves
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from compare_api import Context, Metric, OwnRatio, Workload
from compare_report import percentile
from wire_workload import PRODUCER_CONFIG, consume, create_topic, delete_topic, produce

MB = 1_000_000
TOTAL_BYTES = (100 * MB, 20 * MB)
"""Value bytes per point and repeat: full run, quick run."""

SMOKE_POINTS = ((1024, 1, "none", False), (1024, 1, "zstd", False), (1024, 1000, "none", True))
"""The points of ``compare.py --smoke``: one per curve (10,000 partitions alone takes Kafka a minute)."""

SIZE_CURVE = (100, 1024, 100 * 1024, MB)
"""Record sizes at one partition. The largest is 1 MB, not 1 MiB: Kafka's default ``max.message.bytes``
(1 MiB + 12) refuses a batch holding a 1 MiB value, and a default broker is what is compared."""

PARTITION_CURVE = (1, 100, 1000, 10_000)
"""Partition counts at 1 KiB records, keyed (a distinct key per record, librdkafka's default partitioner
hashing it), read from offset 0: the workload of an application keyed by entity (order, account, device),
the usual reason for many partitions. With null keys the sticky partitioner sent each batch to one partition
for ``sticky.partitioning.linger.ms``: 20 MB filled 5 of 1,000 partitions, so the consumer's first Fetches
named only empty ones and long-polled ``fetch.wait.max.ms`` (500 ms) on either broker, which is what such a
point measured. Offset 0 instead of OFFSET_BEGINNING: librdkafka resolves the latter with one ListOffsets per
partition, and at 1,000 partitions those answers queue behind a long-polling Fetch on the same connection
(both brokers answer a connection in order; the last came 509 ms after it was asked), a start-up stall of the
client that a consumer resuming from committed offsets does not have. Every point, one partition included,
runs the same keyed workload, so each ratio to one partition compares like with like."""

PARTITION_BYTES = (100 * MB, 100 * MB)
"""Value bytes per partition-curve point, full and quick run alike: 100 records of 1 KiB per partition at
1,000 partitions. At 20 MB the one-partition read lasts 0.05 s, so its fixed start (connecting, the first
Fetch) weighs several times more in its figure than at 1,000 partitions. 10,000 partitions moves
``TOTAL_BYTES`` (Kafka produces to 10,000 partitions at about 1 MB/s)."""

ZSTD_CURVE = (1024, 100 * 1024)
"""Record sizes produced with ``compression.type=zstd`` (one partition), beside the same sizes uncompressed."""

POINTS = tuple(dict.fromkeys([(size, 1, "none", False) for size in SIZE_CURVE]
                             + [(size, 1, "zstd", False) for size in ZSTD_CURVE]
                             + [(1024, count, "none", True) for count in PARTITION_CURVE]))
"""(record bytes, partitions, compression, keyed): keyed points are the partition curve's."""

CREATE_AT_ONCE = 5000
"""Partitions per CreateTopics/CreatePartitions request: Apache Kafka's controller refuses one that needs more
than 10,000 metadata records (POLICY_VIOLATION "Unable to perform excessively large batch operation"), so a
10,000-partition topic is created with 5,000 and grown by 5,000, for every peer alike (both requests timed)."""

METADATA_ASKS = 200
"""Metadata requests timed per point: with 20 the "p99" was the highest, one outlier of either broker (a client or
scheduler pause: session 27 saw 11.4 ms once among asks of 1.4 ms); 200 give a nearest-rank p99 (the third
highest). At 10,000 partitions this is ~8 s per repeat on Kafka."""


def add_partitions(bootstrap: str, topic: str, partitions: int) -> None:
    """Grow ``topic`` to ``partitions`` in CreatePartitions requests of at most ``CREATE_AT_ONCE`` more."""
    from confluent_kafka.admin import AdminClient, NewPartitions  # noqa: PLC0415

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    count = CREATE_AT_ONCE
    while count < partitions:
        count = min(partitions, count + CREATE_AT_ONCE)
        for future in admin.create_partitions([NewPartitions(topic, count)], operation_timeout=60).values():
            future.result(timeout=120)
_WORDS = [b"order", b"customer", b"payment", b"shipped", b"pending", b"amount", b"currency", b"EUR", b"warehouse",
          b"status", b"created", b"updated", b"id", b"sku", b"quantity", b"price", b"note", b"priority"]


def value_of(record_bytes: int, compression: str) -> bytes | None:
    """The record value: zero bytes (``None``: wire_workload's default) uncompressed; for zstd, JSON-like text
    of random words and digits, the same for every record of a run (zstd shrinks it about 3x, as it does log
    lines and events; a batch of identical values compresses further only within zstd's window)."""
    if compression == "none":
        return None
    import random  # noqa: PLC0415

    rng = random.Random(record_bytes)
    out = bytearray()
    while len(out) < record_bytes:
        out += b'"%s":"%s%d",' % (rng.choice(_WORDS), rng.choice(_WORDS), rng.randrange(10**6))
    return bytes(out[:record_bytes])


def metadata_latency_ms(bootstrap: str, topic: str) -> tuple[float, float]:
    """Median and nearest-rank p99 of `METADATA_ASKS` Metadata requests for ``topic``, one after another."""
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    # Not counted: the first answer, and the second. librdkafka drops its bootstrap connection once the first
    # answer names the broker, and the next ask waits ~50 ms ("suppressed for 49ms", debug=broker) before it
    # connects again: a client pause, on either broker, which made this metric's "p99" one connection set-up.
    admin.list_topics(topic, timeout=30)
    admin.list_topics(topic, timeout=30)
    times = []
    with collector_paused():
        for _ in range(METADATA_ASKS):
            began = time.perf_counter()
            admin.list_topics(topic, timeout=30)
            times.append((time.perf_counter() - began) * 1000)
    return percentile(times, 50), percentile(times, 99)


@contextmanager
def collector_paused() -> Iterator[None]:
    """This process's garbage collector off while it times requests. confluent-kafka makes Python objects of every
    partition an answer names, and they outlive young collections: at 1,000 partitions a full collection of this
    process came every ~9 asks and took 6-10 ms, so it, not the broker, set both brokers' Metadata p99 (session 83:
    logwright 10.9-12.1 ms with it, 3.4-7.6 without, p50 2.1-2.7 either way). The asks make no reference cycles
    (their objects go as their counts drop), so nothing is kept meanwhile; what is pending is collected after."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def metrics() -> tuple[Metric, ...]:
    return (
        Metric("produce MB/s", "MB/s", target=1.0),
        Metric("consume MB/s", "MB/s", target=1.0),
        Metric("produce CPU s/GB", "s/GB", higher_is_better=False, target=0.5, decimals=2),
        Metric("consume CPU s/GB", "s/GB", higher_is_better=False, target=0.5, decimals=2),
        Metric("create topic s", "s", higher_is_better=False, decimals=2),
        Metric("Metadata p50 ms", "ms", higher_is_better=False, plot=False, decimals=2),
        Metric("Metadata p99 ms", "ms", higher_is_better=False, target=1.0, decimals=2),
    )


def _producer_config(record_bytes: int, compression: str = "none") -> dict[str, object]:
    """librdkafka's ``message.max.bytes`` (1,000,000 by default) raised only for records that would not fit. It
    caps a whole batch too (set to 2 x 1 KiB + 10 kB it made 11-record batches), so elsewhere the default
    stays and ``batch.size`` (1 MB) shapes the batches, as for an application that tunes nothing."""
    return {"message.max.bytes": max(1_000_000, 2 * record_bytes + 10_000), "compression.type": compression}


def _point_bytes(partitions: int, keyed: bool) -> tuple[int, int]:
    return PARTITION_BYTES if keyed and partitions <= 1000 else TOTAL_BYTES


def measure_point(record_bytes: int, partitions: int, compression: str = "none",
                  keyed: bool = False) -> Callable[[Context, str], dict[str, float]]:
    def measure(ctx: Context, peer: str) -> dict[str, float]:
        broker = ctx.broker(peer)
        records = max(ctx.size(*(total // record_bytes for total in _point_bytes(partitions, keyed))), partitions)
        keys = [b"%012d" % index for index in range(records)] if keyed else None
        gigabytes = records * record_bytes / 1e9
        began = time.perf_counter()
        topic = create_topic(broker.bootstrap, f"curve-{record_bytes}-{partitions}", min(partitions, CREATE_AT_ONCE))
        if partitions > CREATE_AT_ONCE:
            add_partitions(broker.bootstrap, topic, partitions)
        created = time.perf_counter() - began
        try:
            cpu_0 = broker.cpu_seconds()
            produced = produce(broker.bootstrap, topic, records, record_bytes,
                               config=_producer_config(record_bytes, compression),
                               value=value_of(record_bytes, compression), keys=keys)
            cpu_1 = broker.cpu_seconds()
            # a first Fetch of 10,000 partitions waits on ListOffsets for each: allow more than 30 s of quiet
            consumed = consume(broker.bootstrap, topic, records, record_bytes, partitions=partitions,
                               idle_timeout_s=max(30.0, partitions / 50),
                               **({"start": 0} if keyed else {}))
            cpu_2 = broker.cpu_seconds()
            metadata_p50, metadata_p99 = metadata_latency_ms(broker.bootstrap, topic)
        finally:
            delete_topic(broker.bootstrap, topic)
        return {"produce MB/s": produced.mb_per_s, "consume MB/s": consumed.mb_per_s,
                "produce CPU s/GB": (cpu_1 - cpu_0) / gigabytes, "consume CPU s/GB": (cpu_2 - cpu_1) / gigabytes,
                "create topic s": created, "Metadata p50 ms": metadata_p50, "Metadata p99 ms": metadata_p99}

    return measure


def _label(record_bytes: int) -> str:
    if record_bytes >= MB:
        return f"{record_bytes // MB} MB"
    return f"{record_bytes // 1024} KiB" if record_bytes % 1024 == 0 else f"{record_bytes} B"


def _compression_text(compression: str) -> str:
    return "no compression" if compression == "none" else f"compression.type={compression}, text-like values"


def _keys_text(keyed: bool) -> str:
    if keyed:
        return ("a distinct 12-byte key per record, default partitioner), then read from offset 0 (given, not "
                "OFFSET_BEGINNING: see curves.PARTITION_CURVE) of every partition by ")
    return "null keys, sticky partitioner), then read from OFFSET_BEGINNING of every partition by "


def point_name(size: int, partitions: int, compression: str, keyed: bool) -> str:
    """A point's workload name, e.g. "curve: 1 KiB keyed records, 1,000 partitions"."""
    return (f"curve: {_label(size)} {'keyed ' if keyed else ''}records, {partitions:,} partition"
            f"{'s' if partitions > 1 else ''}" + (f", {compression}" if compression != "none" else ""))


WORKLOADS = [
    Workload(point_name(size, partitions, compression, keyed), metrics(),
             measure_point(size, partitions, compression, keyed),
             method=(f"A fresh topic of {partitions:,} partition{'s' if partitions > 1 else ''} (creation timed), "
                     f"{_point_bytes(partitions, keyed)[0] // MB} MB of {_label(size)} values "
                     f"({_point_bytes(partitions, keyed)[1] // MB} MB in a quick "
                     f"run) produced by one librdkafka producer (acks=all, linger.ms={PRODUCER_CONFIG['linger.ms']}, "
                     f"{_compression_text(compression)}, " + _keys_text(keyed) +
                     "one assigned librdkafka consumer (fetch.queue.backoff.ms=10, see wire_workload); broker CPU "
                     "seconds (user + system, all its threads: see the broker CPU line above) per GB of "
                     "(uncompressed) values in "
                     f"each phase; then {METADATA_ASKS} Metadata requests for the topic, one after another "
                     "(AdminClient.list_topics; the client's garbage collector paused, see "
                     "curves.collector_paused), p50 and p99 (nearest rank)."
                     + (" Record values are zero bytes." if compression == "none" else "")),
             warmup=True, warmup_scale=0.1, smoke=(size, partitions, compression, keyed) in SMOKE_POINTS)
    for size, partitions, compression, keyed in POINTS
]

OWN_RATIOS = tuple(OwnRatio(point_name(1024, 1000, "none", True), point_name(1024, 1, "none", True), metric, 0.5)
                   for metric in ("produce MB/s", "consume MB/s"))
"""Issue 18's scaling target: at 1,000 partitions each broker keeps half its own one-partition throughput (the keyed
points: the same workload at both ends)."""
