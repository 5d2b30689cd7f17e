"""Produce and consume throughput for bench/compare.py, 100 B and 1 KiB records (wire_workload.py does the work).

Each repeat fills a fresh one-partition topic on the peer's shared broker with a librdkafka producer
(``acks=all``, linger 5 ms, no compression), reads it back from offset 0 with an assigned librdkafka consumer,
and deletes it. Both figures are timed by the client. The consumer puts off a Fetch for 10 ms, not 1 s, once
its prefetch queue is full (``wire_workload.CONSUMER_CONFIG``); the small-record row (issue 18) reads the same
topic a second time with librdkafka's defaults, so what that one-second back-off costs is shown for both
brokers instead of capping the figures.
"""

from __future__ import annotations

from collections.abc import Callable

from compare_api import Context, Metric, Workload
from wire_workload import LIBRDKAFKA_PREFETCH_DEFAULTS, PRODUCER_CONFIG, produce_then_consume

SIZES = {100: (1_000_000, 200_000), 1024: (300_000, 60_000)}
"""record bytes -> (records in a full run, records in a quick run)."""

SMALL_RECORDS = (200, 300_000, 150_000)
"""The small-record regression row of issue 18: record bytes, records (full, quick). The quick run keeps more
than librdkafka's ``queued.min.messages`` (100,000), or the default prefetch would never fill."""


def metrics() -> tuple[Metric, ...]:
    return (Metric("produce MB/s", "MB/s", target=1.0), Metric("produce msg/s", "msg/s", plot=False, decimals=0),
            Metric("consume MB/s", "MB/s", target=1.0), Metric("consume msg/s", "msg/s", plot=False, decimals=0))


def measure_size(record_bytes: int) -> Callable[[Context, str], dict[str, float]]:
    full, quick = SIZES[record_bytes]

    def measure(ctx: Context, peer: str) -> dict[str, float]:
        produced, consumed = produce_then_consume(ctx.broker(peer).bootstrap, record_bytes, ctx.size(full, quick))
        return {"produce MB/s": produced.mb_per_s, "produce msg/s": produced.msg_per_s,
                "consume MB/s": consumed.mb_per_s, "consume msg/s": consumed.msg_per_s}

    return measure


def _label(record_bytes: int) -> str:
    return f"{record_bytes // 1024} KiB" if record_bytes % 1024 == 0 else f"{record_bytes} B"


def measure_small(ctx: Context, peer: str) -> dict[str, float]:
    record_bytes, full, quick = SMALL_RECORDS
    produced, consumed, consumed_defaults = produce_then_consume(
        ctx.broker(peer).bootstrap, record_bytes, ctx.size(full, quick), prefix="small",
        consumer_configs=({}, dict(LIBRDKAFKA_PREFETCH_DEFAULTS)))
    return {"produce MB/s": produced.mb_per_s, "consume MB/s": consumed.mb_per_s,
            "consume MB/s, librdkafka prefetch defaults": consumed_defaults.mb_per_s}


WORKLOADS = [
    *(Workload(f"produce and consume, {_label(size)} records", metrics(), measure_size(size),
             method=(f"{full:,} records of {_label(size)} ({quick:,} in a quick run) into a fresh one-partition "
                     f"topic by one librdkafka producer (acks=all, linger.ms={PRODUCER_CONFIG['linger.ms']}, no "
                     "compression, null keys), timed from the first produce() to the end of flush(); then read "
                     "back from offset 0 by one assigned librdkafka consumer, timed until the last record is in "
                     "hand. MB/s counts value bytes (10^6). One warm-up at a fifth of the size is discarded. "
                     "At 100 B the client's Python loop (one produce() or message.error() call per record) "
                     "bounds both sides at a few hundred thousand records/s here, so ratios near 1 say little."),
             warmup=True)
      for size, (full, quick) in SIZES.items()),
    Workload(
    f"small records, {SMALL_RECORDS[0]} B, one partition", (
        Metric("produce MB/s", "MB/s", target=1.0), Metric("consume MB/s", "MB/s", target=1.0),
        Metric("consume MB/s, librdkafka prefetch defaults", "MB/s", target=1.0)),
    measure_small,
    method=(f"{SMALL_RECORDS[1]:,} records of {SMALL_RECORDS[0]} B ({SMALL_RECORDS[2]:,} in a quick run) into a "
            "fresh one-partition topic as above, then read from offset 0 twice by fresh assigned consumers with "
            "consume(10000, 1.0): once as the other rows (fetch.queue.backoff.ms=10), once with librdkafka's "
            "prefetch defaults (queued.min.messages=100000, fetch.queue.backoff.ms=1000). With the defaults a "
            "broker that answers faster than the Python loop drains fills the 100,000-record prefetch queue, and "
            "librdkafka then waits a whole second before its next Fetch: issue 18's 3.5x gap at 200 B was that "
            "wait (logwright hit it in 6 of 7 quiet runs, Kafka, answering each 1 MB Fetch about half as fast, "
            "in none of 3 quiet ones; see bench/README.md)."),
        warmup=True),
]
