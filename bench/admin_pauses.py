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


FILE_BYTES = (30_000_000, 10_000_000)
"""Bytes of 100 KB records stored before they are deleted: full run, quick run (in files, on both brokers)."""
FILE_RECORD_BYTES = 100_000
BESIDE_BYTES_PER_S = 10_000_000
"""What a producer writes to another topic meanwhile: the log's sync then waits for a disk in use, as it does
beside real traffic (3-5 ms on an idle disk here, 20-35 ms beside a producer)."""


class Beside:
    """A producer writing `BESIDE_BYTES_PER_S` of 10 KB records to a topic of its own, from a thread."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 1, "log_level": 3})
        self._topic = topic
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        value, per_tick, tick_s = b"b" * 10_000, 50, 0.05
        while not self._stop.is_set():
            for _ in range(per_tick):
                self._producer.produce(self._topic, value, partition=0)
            self._producer.poll(0)
            time.sleep(tick_s)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._producer.flush(30)


def measure_file_deletion(ctx: Context, peer: str) -> dict[str, float]:
    bootstrap = ctx.broker(peer).bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    stamp = int(time.time() * 1000)
    name, beside_name = f"files-{stamp}", f"beside-{stamp}"
    for future in admin.create_topics([NewTopic(name, 1, 1), NewTopic(beside_name, 1, 1)],
                                      operation_timeout=60).values():
        future.result(timeout=120)
    records = ctx.size(*FILE_BYTES) // FILE_RECORD_BYTES
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "log_level": 3})
    for _ in range(records):
        producer.produce(name, b"f" * FILE_RECORD_BYTES, partition=0)
        producer.poll(0)
    if producer.flush(120) != 0:
        raise RuntimeError("the records to delete were not acknowledged within 120 s")
    beside = Beside(bootstrap, beside_name)
    pinger = Pinger(bootstrap)
    results: dict[str, float] = {}
    try:
        def delete_records() -> None:
            end = TopicPartition(name, 0, records)
            admin.delete_records([end], request_timeout=120)[end].result(timeout=180)

        results["DeleteRecords pause ms"], results["DeleteRecords ms"] = pinger.during(delete_records)
        producer.produce(name, b"f" * FILE_RECORD_BYTES, partition=0)  # the partition written again after it
        producer.flush(30)

        def delete() -> None:
            admin.delete_topics([name], operation_timeout=120)[name].result(timeout=180)

        results["DeleteTopics pause ms"], results["DeleteTopics ms"] = pinger.during(delete)
    finally:
        pinger.close()
        beside.close()
        if "DeleteTopics ms" not in results:
            delete_topic(bootstrap, name)
        delete_topic(bootstrap, beside_name)
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
    Workload(
        "pauses while stored files are deleted",
        tuple(metric for operation in ("DeleteRecords", "DeleteTopics") for metric in (
            Metric(f"{operation} pause ms", "ms", higher_is_better=False, target=1.0),
            Metric(f"{operation} ms", "ms", higher_is_better=False, plot=False))),
        measure_file_deletion,
        method=(f"A fresh one-partition topic holding {FILE_BYTES[0] // 10**6} MB of {FILE_RECORD_BYTES // 1000} KB "
                f"records ({FILE_BYTES[1] // 10**6} MB in a quick run; kept in files by both brokers), then, "
                f"while a producer writes {BESIDE_BYTES_PER_S // 10**6} MB/s of 10 KB records (acks=all) to another "
                "topic: DeleteRecords of the partition to its end (every file of it goes), one more record, and "
                "DeleteTopics. The pinger as above: each pause is its longest ApiVersions round trip while that "
                "request ran (and 0.2 s after). Deleting a file is safe only once the deletion's record is durable: "
                "logwright syncs RocksDB's log first, on a thread of its own since session 53 (before, on the event "
                "loop: 20-35 ms beside a producer); Kafka deletes segments later, asynchronously "
                "(file.delete.delay.ms). See bench/admin_pauses.py."),
        not_applicable={"tansu": "not measured: Tansu 0.6's DeleteRecords support differs"},
        warmup=True,
    ),
]
