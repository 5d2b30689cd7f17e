"""An unmodified Kafka Connect distributed worker (connect-runtime 4.3.0) against logwright and Apache Kafka.

Connect is how many teams move data in and out of Kafka, and its worker leans on the broker for all of its own
state: it creates three compacted topics (connector configs, source offsets, statuses) with the Admin client,
reads them to their end on start-up, and coordinates workers in a classic group of protocol type ``connect``
(``sessioned`` assignments). The scenario: FileStreamSource reads a file into a topic and FileStreamSink writes
the topic to another file, both created over the worker's REST API; every line must arrive. Then the worker is
killed with SIGKILL (on logwright the broker too, then started again on the same data), more lines are
appended, and a new worker must find both connectors in the config topic, resume the source from the offset it
stored (no line read twice into the topic) and the sink from its group's committed offset. Both at least once and
with exactly-once source support (KIP-618). Opt-in like the Java
scenario (``make compat-java`` or ``pytest tests/peers --peers``): it needs java and mvn.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from logwright.testing.broker_process import BrokerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
CONNECT = ROOT / "peers" / "connect"
WAIT_S = 90.0

pytestmark = pytest.mark.peers

sys.path.insert(0, str(ROOT / "bench"))  # bench/ is not a package: kafka_peer finds java, resolves jars, runs Kafka
import kafka_peer  # noqa: E402


def classpath() -> str:
    """Resolve connect-runtime and connect-file from Maven Central (once per pom) into peers/connect/target/lib."""
    lib = CONNECT / "target" / "lib"
    kafka_peer.resolve(pom=CONNECT / "pom.xml", lib=lib)
    return f"{lib}/*"


def wait_for(what: str, check: Callable[[], bool], log: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no worker log)"
            pytest.fail(f"{what}: not within {WAIT_S:.0f} s; the worker's log ends:\n{tail}")
        time.sleep(0.25)


class Worker:
    """A ``ConnectDistributed`` process on a free REST port, its log in ``work``."""

    def __init__(self, work: Path, bootstrap: str, name: str, exactly_once: bool) -> None:
        self.rest = f"http://127.0.0.1:{free_port()}"
        self.log = work / f"{name}.log"
        properties = work / f"{name}.properties"
        properties.write_text("\n".join([
            f"bootstrap.servers={bootstrap}",
            "group.id=connect-cluster",
            "key.converter=org.apache.kafka.connect.storage.StringConverter",
            "value.converter=org.apache.kafka.connect.storage.StringConverter",
            "config.storage.topic=connect-configs",
            "offset.storage.topic=connect-offsets",
            "status.storage.topic=connect-status",
            "config.storage.replication.factor=1",
            "offset.storage.replication.factor=1",
            "status.storage.replication.factor=1",
            "offset.flush.interval.ms=500",
            # a killed worker's sink consumer leaves its group after this, not Kafka's default 45 s
            "consumer.session.timeout.ms=6000",
            f"listeners={self.rest}",
            *(["exactly.once.source.support=enabled"] if exactly_once else []),
        ]) + "\n")
        log4j = work / "log4j.properties"
        log4j.write_text("log4j.rootLogger=INFO, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
                         "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
                         "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [kafka_peer.java(), "-Xmx512m", f"-Dlog4j.configuration=file:{log4j}", "-cp", classpath(),
                 "org.apache.kafka.connect.cli.ConnectDistributed", str(properties)],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for("the worker's REST API answering", lambda: self.get("/connectors") is not None, self.log)

    def get(self, path: str) -> object | None:
        try:
            with urllib.request.urlopen(self.rest + path, timeout=5) as answer:
                return json.loads(answer.read())
        except (OSError, ValueError):
            return None

    def create(self, name: str, config: dict[str, str]) -> None:
        body = json.dumps({"name": name, "config": config}).encode()
        request = urllib.request.Request(self.rest + "/connectors", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 201, answer.read()

    def running(self, name: str) -> bool:
        status = self.get(f"/connectors/{name}/status")
        if not isinstance(status, dict):
            return False
        tasks = status.get("tasks") or []
        return status["connector"]["state"] == "RUNNING" and bool(tasks) and all(
            task["state"] == "RUNNING" for task in tasks)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@contextmanager
def workers(work: Path, bootstrap: Callable[[], str], exactly_once: bool) -> Iterator[Callable[[str], Worker]]:
    started: list[Worker] = []

    def start(name: str) -> Worker:
        started.append(Worker(work, bootstrap(), name, exactly_once))
        return started[-1]

    try:
        yield start
    finally:
        for worker in started:
            worker.kill()


def lines(first: int, last: int) -> list[str]:
    return [f"line-{number:04d}" for number in range(first, last + 1)]


def stored(bootstrap: str, group: str, topic: str) -> tuple[int, int]:
    """(``group``'s committed offset, the end offset) of ``topic``'s partition 0."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        partition = TopicPartition(topic, 0)
        (committed,) = consumer.committed([partition], timeout=10)
        return committed.offset, consumer.get_watermark_offsets(partition, timeout=10)[1]
    finally:
        consumer.close()


def source_position(bootstrap: str, connector: str) -> int:
    """The last file position the source ``connector`` stored in the worker's offsets topic (-1: none yet); read
    to each partition's end (exactly once, the topic holds transaction markers, which are not records)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "offsets-reader", "enable.auto.commit": False})
    try:
        partitions = consumer.list_topics("connect-offsets", timeout=10).topics["connect-offsets"].partitions
        ends = {index: consumer.get_watermark_offsets(TopicPartition("connect-offsets", index), timeout=10)[1]
                for index in partitions}
        assigned = [TopicPartition("connect-offsets", index, 0) for index, end in ends.items() if end > 0]
        consumer.assign(assigned)
        position = -1
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for message in consumer.consume(100, 0.2):
                if message.error() is None and json.loads(message.key())[0] == connector and message.value():
                    position = json.loads(message.value())["position"]
            if all(at.offset >= ends[at.partition] for at in consumer.position(assigned)):
                break
        return position
    finally:
        consumer.close()


@pytest.mark.parametrize("against", ["logwright", "kafka"])
@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once"])
def test_a_file_pipeline_survives_killed_workers_and_brokers(against: str, guarantee: str, tmp_path: Path) -> None:
    """At least once: the source's producer is idempotent; exactly once (KIP-618): the worker fences the task's
    earlier producers through the Admin client, and every poll's records and the source's offsets are one
    transaction; the sink then reads ``read_committed``."""
    exactly_once = guarantee == "exactly-once"
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(lines(1, 300)) + "\n")
    broker: BrokerProcess | kafka_peer.KafkaPeer
    if against == "kafka":
        broker = kafka_peer.KafkaPeer(tmp_path / "kafka").start()
    else:
        broker = BrokerProcess(tmp_path / "data").start()

    def written() -> list[str]:
        return sink.read_text().splitlines() if sink.exists() else []

    def sink_caught_up(records: int) -> bool:
        """The sink committed the offset after the topic's last record, past ``records`` records. At least once
        the topic holds exactly those; exactly once, a commit marker follows the last record, and the sink
        commits the offset after its last record, not after the marker (on Kafka too)."""
        committed, end = stored(broker.bootstrap, "connect-file-sink", "filed")
        return committed == end - 1 >= records if exactly_once else committed == end == records

    try:
        with workers(tmp_path, lambda: broker.bootstrap, exactly_once) as start:
            first = start("worker-1")
            first.create("file-source", {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": str(source),
                "topic": "filed", "tasks.max": "1", **({"exactly.once.support": "required"} if exactly_once else {})})
            first.create("file-sink", {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector", "file": str(sink),
                "topics": "filed", "tasks.max": "1",
                **({"consumer.override.isolation.level": "read_committed"} if exactly_once else {})})
            wait_for("both connectors running", lambda: first.running("file-source") and first.running("file-sink"),
                     first.log)
            wait_for("the first 300 lines in the sink's file", lambda: len(written()) >= 300, first.log)
            assert written() == lines(1, 300)
            # what the worker stores every offset.flush.interval.ms: the source's file position, the sink's offsets
            wait_for("the source's file position and the sink's offset stored",
                     lambda: source_position(broker.bootstrap, "file-source") == source.stat().st_size
                     and sink_caught_up(300), first.log)
            first.kill()
            if isinstance(broker, BrokerProcess):
                broker.kill()
                broker = BrokerProcess(broker.data_dir, port=broker.port).start()
            with open(source, "a") as more:
                more.write("\n".join(lines(301, 500)) + "\n")
            second = start("worker-2")
            wait_for("both connectors back from the config topic, running",
                     lambda: second.running("file-source") and second.running("file-sink"), second.log)
            wait_for("500 lines in the sink's file", lambda: len(written()) >= 500, second.log)
            # a line read twice by the source or the sink would be in the file before the last new line
            assert written() == lines(1, 500), "lines missing, repeated or out of order"
            wait_for("the sink's offset stored at the topic's end", lambda: sink_caught_up(500), second.log)
    finally:
        if isinstance(broker, BrokerProcess):
            broker.kill()
        else:
            broker.stop()
