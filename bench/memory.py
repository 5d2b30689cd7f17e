"""Broker resident memory for bench/compare.py: at rest after start-up, and its peak under produce/consume load.

Every repeat starts a private broker (not the session's shared one, which earlier workloads have used), so
"at rest" is a freshly started broker with no topic: the median of five readings over a second after it has
been idle for ``SETTLE_S``. "Under load" is the highest reading, taken every ``INTERVAL_S``, while a
librdkafka producer fills a one-partition topic with 1 KiB records (acks=all) and a consumer reads it back.
A reading is the RSS of the broker's whole process group (brokers.RunningPeer.rss_bytes): the JVM for Kafka,
the Python process for logwright, the tansu binary for Tansu.
"""

from __future__ import annotations

import statistics
import threading
import time

import brokers
from compare_api import Context, Metric, Workload
from wire_workload import produce_then_consume

SETTLE_S = (5.0, 2.0)
LOAD_RECORDS = (200_000, 40_000)
RECORD_BYTES = 1024
INTERVAL_S = 0.25
MIB = 2**20


class PeakRss:
    """A thread that reads a broker's RSS every ``interval_s`` while the ``with`` block runs; ``peak`` is bytes."""

    def __init__(self, broker: brokers.RunningPeer, interval_s: float = INTERVAL_S) -> None:
        self.broker = broker
        self.interval_s = interval_s
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-rss", daemon=True)

    def _run(self) -> None:
        while True:
            self.peak = max(self.peak, self.broker.rss_bytes())
            if self._done.wait(self.interval_s):
                return

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        self.peak = max(self.peak, self.broker.rss_bytes())


def measure(ctx: Context, peer: str) -> dict[str, float]:
    with ctx.fresh(peer) as broker:
        time.sleep(SETTLE_S[1] if ctx.quick else SETTLE_S[0])
        readings = []
        for _ in range(5):
            readings.append(broker.rss_bytes())
            time.sleep(0.2)
        with PeakRss(broker) as load:
            produce_then_consume(broker.bootstrap, RECORD_BYTES, ctx.size(*LOAD_RECORDS), prefix="memory")
    return {"at rest": statistics.median(readings) / MIB, "under load": load.peak / MIB}


WORKLOADS = [
    Workload("broker resident memory",
             (Metric("at rest", "MiB", higher_is_better=False), Metric("under load", "MiB", higher_is_better=False)),
             measure,
             method=("A private broker per repeat. At rest: the median of five RSS readings over a second, after "
                     f"{SETTLE_S[0]:g} s idle from start-up ({SETTLE_S[1]:g} s in a quick run), no topic yet. Under "
                     f"load: the highest reading (every {INTERVAL_S:g} s) while one librdkafka producer fills a "
                     f"one-partition topic with {LOAD_RECORDS[0]:,} records of 1 KiB (acks=all; "
                     f"{LOAD_RECORDS[1]:,} in a quick run) and a consumer reads them back. RSS is summed over "
                     "the broker's process group: the JVM (-Xmx512m) for Kafka, the Python process for logwright, "
                     "the tansu binary for Tansu, whose memory:// storage holds the records themselves. Page "
                     "cache (Kafka's log segments, RocksDB's files) is not RSS."),
             repeats=3)
]
