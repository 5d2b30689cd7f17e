"""An idempotent librdkafka producer, for bench/compare.py (issue 18): where one request's round trip is the rate.

``enable.idempotence`` is the Java client's default since Kafka 3.0 and the setting of any producer that must not
duplicate or reorder records when it retries. librdkafka 2.x sends an idempotent producer's requests one at a time,
whatever ``max.in.flight`` says (its open pull request 4989; measured here: at most one request awaited an answer, on
either broker), so its throughput is what one batch holds over one round trip: the broker's latency per request,
not its capacity, sets the figure. With librdkafka's own ``batch.size`` (1 MB) a batch fills while the last is
answered and the fixed cost hides; with the Java client's (16 KiB) it shows. Each repeat produces ``RECORDS``
values of 512 B (ProducerPerformance's size in perf_tools) to a fresh one-partition topic, ``acks=all``,
``linger.ms=5``, and reads librdkafka's own statistics every 100 ms (`Requests`).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compare_api import Context, Metric, Workload
from wire_workload import create_topic, delete_topic, produce

RECORD_BYTES = 512
RECORDS = (1_000_000, 200_000)
"""Records per repeat: full run, quick run (512 MB and 102 MB of values)."""

BATCH_SIZES = (("librdkafka's batch.size (1 MB)", None), ("the Java client's batch.size (16 KiB)", 16_384))
STATISTICS_MS = 100


@dataclass(frozen=True, slots=True)
class Requests:
    """What librdkafka's statistics say about the produce connection's requests over a run."""

    round_trip_p50_us: float
    """The median of the intervals' p50 request round trip (intervals that received no answer report 0: left out)."""
    most_awaiting: int
    """The most requests that awaited an answer at once."""
    mean_kb: float
    """Bytes sent per request, in KB (10^3), over the run (the last interval's totals)."""


def requests_of(stats: list[dict[str, Any]]) -> Requests:
    """`Requests` from librdkafka's statistics; the bootstrap connection (node id -1) is left out."""
    p50s: list[float] = []
    most = sent = sent_bytes = 0
    for sample in stats:
        for broker in sample.get("brokers", {}).values():
            if broker.get("nodeid", -1) < 0:
                continue
            most = max(most, int(broker.get("waitresp_cnt", 0)))
            sent, sent_bytes = int(broker.get("tx", 0)), int(broker.get("txbytes", 0))
            p50 = broker.get("rtt", {}).get("p50", 0)
            if p50 > 0:
                p50s.append(float(p50))
    return Requests(statistics.median(p50s) if p50s else float("nan"), most,
                    sent_bytes / sent / 1e3 if sent else float("nan"))


def measure_with(batch_size: int | None) -> Callable[[Context, str], dict[str, float]]:
    def measure(ctx: Context, peer: str) -> dict[str, float]:
        broker = ctx.broker(peer)
        topic = create_topic(broker.bootstrap, "idempotent")
        stats: list[dict[str, Any]] = []
        config: dict[str, object] = {"enable.idempotence": True, "statistics.interval.ms": STATISTICS_MS,
                                     "stats_cb": lambda text: stats.append(json.loads(text))}
        if batch_size is not None:
            config["batch.size"] = batch_size
        try:
            cpu = broker.cpu_seconds()
            produced = produce(broker.bootstrap, topic, ctx.size(*RECORDS), RECORD_BYTES, config=config)
            cpu = broker.cpu_seconds() - cpu
        finally:
            delete_topic(broker.bootstrap, topic)
        requests = requests_of(stats)
        figures = {"produce MB/s": produced.mb_per_s, "broker CPU s/GB": cpu / (produced.records * RECORD_BYTES / 1e9),
                   "request KB (mean)": requests.mean_kb,
                   "requests awaiting an answer (most)": float(requests.most_awaiting)}
        if batch_size is not None:  # see `_metrics`
            figures["request round trip p50 us"] = requests.round_trip_p50_us
        return figures
    return measure


def _metrics(batch_size: int | None) -> tuple[Metric, ...]:
    """The round trip only for small batches: a request of a megabyte is still being written when the broker has
    read most of it, and librdkafka stamps it sent only once its thread runs again after the last byte, so on
    this 2-vCPU machine its statistics showed round trips of 3-7 us for logwright's answers (p50 of an interval)
    beside 400-1,900 for Kafka's: the client's scheduling, not the broker."""
    return (Metric("produce MB/s", "MB/s", target=1.0),
            *((Metric("request round trip p50 us", "us", higher_is_better=False, target=1.0, decimals=0),)
              if batch_size is not None else ()),
            Metric("broker CPU s/GB", "s/GB", higher_is_better=False, target=0.5, decimals=2),
            Metric("request KB (mean)", "KB", plot=False),
            Metric("requests awaiting an answer (most)", "", plot=False, decimals=0))


def _workload(label: str, batch_size: int | None) -> Workload:
    return Workload(
        f"idempotent producer, 512 B records, {label}",
        _metrics(batch_size),
        measure_with(batch_size),
        method=(f"{RECORDS[0]:,} records of 512 B ({RECORDS[1]:,} in a quick run) from one librdkafka producer with "
                "enable.idempotence=true (acks=all, linger.ms=5, max.in.flight 5"
                + (f", batch.size={batch_size}" if batch_size else "") + ") into a fresh one-partition topic. "
                "librdkafka sends an idempotent producer's requests one at a time (the last row says how many "
                "awaited an answer at most), so the round trip of one request sets the rate"
                + (": the round trip is librdkafka's own statistics (median of the p50 of each 100 ms interval)"
                   if batch_size else "; a batch fills while the last is answered (mean request size)")
                + ". Broker CPU (all its threads) per GB produced."),
        not_applicable={"tansu": "not part of this comparison"},
        smoke=batch_size is not None)


WORKLOADS = [_workload(label, batch_size) for label, batch_size in BATCH_SIZES]
