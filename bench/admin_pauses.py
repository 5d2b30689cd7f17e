"""How long other clients wait while one client's admin request covers thousands of partitions (issue 18).

A broker with one event loop answers nothing else while a handler runs without yielding. Work that grows with the
partitions a request names, or worse with their square, shows up as a pause every other connection sees: one
OffsetCommit of 10,000 partitions once held logwright's loop for 19 s. Each repeat creates a fresh topic of
``PARTITIONS`` partitions with one record in each, then runs the requests below one at a time while a pinger on
its own connection sends ApiVersions v0 requests one after another (1 ms apart); each metric is the longest round
trip of the pinger while that request ran, and the request's own duration beside it. Between the OffsetCommit of
every partition and the OffsetFetch, the same consumer commits ``FEW`` partitions ``FEW_COMMITS`` times: the
median round trip is what each member of a big group pays for committing its share (logwright once re-encoded the
whole group's offsets for each: 15.7 ms in process for 10 of 5,000).
"""

from __future__ import annotations

import socket
import statistics
import struct
import threading
import time
from collections.abc import Callable

from compare_api import Context, Metric, Workload
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from wire_workload import delete_topic

PARTITIONS = (5_000, 1_000)
"""Partitions of the topic: full run, quick run."""
FEW, FEW_COMMITS = 10, 50
_API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 0, 4) + b"ping"


class Pinger:
    """ApiVersions round trips on one connection, one after another, from a thread; the longest since `reset`."""

    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self._socket = socket.create_connection((host, int(port)), timeout=120)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.longest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        frame = struct.pack(">i", len(_API_VERSIONS_V0)) + _API_VERSIONS_V0
        while not self._stop.is_set():
            started = time.perf_counter()
            self._socket.sendall(frame)
            (size,) = struct.unpack(">i", self._receive(4))
            self._receive(size)
            self.longest = max(self.longest, time.perf_counter() - started)
            time.sleep(0.001)

    def _receive(self, count: int) -> bytes:
        data = bytearray()
        while len(data) < count:
            chunk = self._socket.recv(count - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the pinger's connection")
            data += chunk
        return bytes(data)

    def during(self, request: Callable[[], object]) -> tuple[float, float]:
        """(longest pause, request duration) in ms while ``request`` runs."""
        time.sleep(0.2)
        self.longest = 0.0
        started = time.perf_counter()
        request()
        took = time.perf_counter() - started
        time.sleep(0.2)  # a pause that outlasts the request still ends inside the window
        return self.longest * 1000, took * 1000

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._socket.close()


def measure(ctx: Context, peer: str) -> dict[str, float]:
    bootstrap = ctx.broker(peer).bootstrap
    partitions = ctx.size(*PARTITIONS)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    name = f"wide-{int(time.time() * 1000)}"
    pinger = Pinger(bootstrap)
    results: dict[str, float] = {}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{name}", "enable.auto.commit": False,
                        "log_level": 3})
    try:
        def create() -> None:
            for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=120).values():
                future.result(timeout=180)

        results["CreateTopics pause ms"], results["CreateTopics ms"] = pinger.during(create)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
        for index in range(partitions):
            producer.produce(name, b"x" * 100, partition=index)
        if producer.flush(120) != 0:
            raise RuntimeError("records to every partition not acknowledged within 120 s")
        everything = [TopicPartition(name, index, 1) for index in range(partitions)]
        results["OffsetCommit pause ms"], results["OffsetCommit ms"] = pinger.during(
            lambda: consumer.commit(offsets=everything, asynchronous=False))
        took = []
        for _ in range(FEW_COMMITS):
            started = time.perf_counter()
            consumer.commit(offsets=everything[:FEW], asynchronous=False)
            took.append(time.perf_counter() - started)
        results[f"OffsetCommit of {FEW} partitions ms"] = statistics.median(took) * 1000
        results["OffsetFetch pause ms"], results["OffsetFetch ms"] = pinger.during(
            lambda: consumer.committed([TopicPartition(name, index) for index in range(partitions)], timeout=120))

        def delete_records() -> None:
            for future in admin.delete_records(everything, request_timeout=120).values():
                future.result(timeout=180)

        results["DeleteRecords pause ms"], results["DeleteRecords ms"] = pinger.during(delete_records)

        def delete() -> None:
            for future in admin.delete_topics([name], operation_timeout=120).values():
                future.result(timeout=180)

        results["DeleteTopics pause ms"], results["DeleteTopics ms"] = pinger.during(delete)
    finally:
        consumer.close()
        pinger.close()
        if "DeleteTopics ms" not in results:
            delete_topic(bootstrap, name)
    return results


_OPERATIONS = ("CreateTopics", "OffsetCommit", "OffsetFetch", "DeleteRecords", "DeleteTopics")

WORKLOADS = [
    Workload(
        f"pauses under admin requests, {PARTITIONS[0]:,} partitions",
        tuple(metric for operation in _OPERATIONS for metric in (
            Metric(f"{operation} pause ms", "ms", higher_is_better=False, target=1.0),
            Metric(f"{operation} ms", "ms", higher_is_better=False, plot=False))) + (
            Metric(f"OffsetCommit of {FEW} partitions ms", "ms", higher_is_better=False, target=1.0),),
        measure,
        method=(f"A fresh topic of {PARTITIONS[0]:,} partitions ({PARTITIONS[1]:,} in a quick run), one 100-byte "
                "record in each (one librdkafka producer); then, one at a time: CreateTopics (of that topic), an "
                "OffsetCommit of every partition (librdkafka consumer, synchronous), then 50 synchronous commits of "
                "10 of its partitions (the median is the metric: what a member of a big group pays for its "
                "share), an OffsetFetch of every "
                "partition, DeleteRecords of every partition to offset 1, DeleteTopics. A pinger on its own "
                "connection sends ApiVersions v0 one after another (1 ms apart): each pause is its longest round "
                "trip while that request ran (and 0.2 s after), each duration the request's own. Before the first "
                "repeat, each broker runs the whole sequence once at 1,000 partitions, discarded (a JVM's first "
                "run of each request compiles it; Kafka's pauses read 2-7 times higher on a fresh broker). See "
                "bench/admin_pauses.py."),
        not_applicable={"tansu": "not measured: Tansu 0.6's group and DeleteRecords support differs"},
        warmup=True,  # each request once at 1,000 partitions first: Kafka's JIT, logwright's first-use schemas
    ),
]
