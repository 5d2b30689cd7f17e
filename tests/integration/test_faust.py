"""faust-streaming 0.15.3, unmodified, counts words in a table against a logwright broker process.

The app (faust_wordcount.py) runs as a faust worker in its own process, as users run it. faust drives
aiokafka through ApiVersions v0, Metadata v5, CreateTopics v3 (its changelog topic, compacted),
FindCoordinator v1, JoinGroup v5 with its own partition assignor, SyncGroup, OffsetCommit and Produce.
The counts are read back with confluent-kafka from the table's changelog and the agent's output topic.
A second worker run must recover the table from the changelog and resume from committed offsets:
counting the new words only, none of the old ones twice.

Words are produced only once a worker reports "Worker ready": faust-streaming drops records it fetched
while recovering a table and may then commit past them (faust-streaming issues #596 and #606, open for
0.15.3). Under load that lost one word in a run where the words were waiting before the worker started;
the loss is faust's (the record was stored and fetched, the offset committed, the agent never saw it).
"""

from __future__ import annotations

import collections
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from .broker_process import BrokerProcess

APP = Path(__file__).with_name("faust_wordcount.py")
VOCABULARY = ("apple", "banana", "cherry", "damson", "elder", "fig", "grape", "kiwi", "lime", "mango")


class Worker:
    """One `faust worker` process of the word-count app; stopped with SIGTERM like a user's Ctrl-C."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.log_path = log_path
        with log_path.open("ab") as log:
            self.process = subprocess.Popen([sys.executable, str(APP), "worker", "--without-web",
                                             "--loglevel", "info"], env=env,
                                            stdout=log, stderr=subprocess.STDOUT)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 120
        while "Worker ready" not in self.log_path.read_text(errors="replace"):
            assert self.process.poll() is None, f"the faust worker exited:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"the faust worker was not ready in 120 s:\n{self.log_tail()}"
            time.sleep(0.2)

    def log_tail(self) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-40:])

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(90)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise AssertionError(f"the faust worker did not stop on SIGTERM:\n{self.log_tail()}") from None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def names() -> dict[str, str]:
    suffix = uuid.uuid4().hex[:8]
    return {"app": f"wordcount-{suffix}", "input": f"words-{suffix}", "output": f"counts-{suffix}"}


@pytest.fixture
def worker_env(broker: BrokerProcess, names: dict[str, str], tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "WORDCOUNT_APP_ID": names["app"], "WORDCOUNT_BOOTSTRAP": broker.bootstrap,
           "WORDCOUNT_DATADIR": str(tmp_path / "faust"), "WORDCOUNT_INPUT": names["input"],
           "WORDCOUNT_OUTPUT": names["output"]}


def produce(bootstrap: str, topic: str, words: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for word in words:
        producer.produce(topic, key=word.encode(), value=word.encode())
    assert producer.flush(30) == 0


def latest_by_key(bootstrap: str, topic: str, partitions: int) -> dict[bytes, bytes]:
    """Each key's last value in ``topic``, read from the beginning of every partition to its end."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, partition, 0) for partition in range(partitions)])
    latest: dict[bytes, bytes] = {}
    at_end: set[int] = set()
    deadline = time.monotonic() + 30
    while len(at_end) < partitions and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None:
            continue
        if message.error():
            at_end.add(message.partition())
            continue
        latest[message.key()] = message.value()
    consumer.close()
    return latest


def table_contents(bootstrap: str, app_id: str) -> dict[str, int]:
    """The table as its changelog holds it: faust writes JSON keys and values."""
    changelog = latest_by_key(bootstrap, f"{app_id}-word_counts-changelog", 2)
    return {key.decode().strip('"'): int(value) for key, value in changelog.items()}


def wait_for_counts(bootstrap: str, app_id: str, expected: dict[str, int], worker: Worker) -> dict[str, int]:
    deadline = time.monotonic() + 180
    table: dict[str, int] = {}
    while time.monotonic() < deadline:
        assert worker.process.poll() is None, f"the faust worker exited:\n{worker.log_tail()}"
        try:
            table = table_contents(bootstrap, app_id)
        except Exception:  # the changelog topic does not exist until the worker has started
            table = {}
        if table == expected:
            return table
        time.sleep(1)
    raise AssertionError(f"table {table} never became {expected}:\n{worker.log_tail()}")


def wait_for_commits(bootstrap: str, group: str, topic: str, ends: list[int]) -> None:
    """faust commits on its own schedule; stop it only once the input is committed, so a rerun resumes."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 60
    committed: list[int] = []
    while time.monotonic() < deadline:
        committed = [tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in range(2)], 10)]
        if committed == ends:
            break
        time.sleep(0.5)
    consumer.close()
    assert committed == ends


def test_faust_agent_counts_words_in_a_table_and_resumes(broker: BrokerProcess, names: dict[str, str],
                                                         worker_env: dict[str, str], tmp_path: Path) -> None:
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(names["input"], 2)])[names["input"]].result(20)
    chooser = random.Random(7)
    first = [chooser.choice(VOCABULARY) for _ in range(300)]

    worker = Worker(worker_env, tmp_path / "worker-1.log")
    try:
        worker.wait_ready()
        produce(bootstrap, names["input"], first)
        table = wait_for_counts(bootstrap, names["app"], dict(collections.Counter(first)), worker)
        wait_for_commits(bootstrap, names["app"], names["input"], high_watermarks(bootstrap, names["input"]))
        assert worker.stop() == 0, worker.log_tail()
    finally:
        worker.kill()
    assert sum(table.values()) == 300
    assert table_contents(bootstrap, names["app"]) == table

    output_partitions = len(admin.list_topics(names["output"], timeout=30).topics[names["output"]].partitions)
    output = latest_by_key(bootstrap, names["output"], output_partitions)
    assert {key.decode(): int(value) for key, value in output.items()} == table
    changelog = ConfigResource(ResourceType.TOPIC, f"{names['app']}-word_counts-changelog")
    described = admin.describe_configs([changelog])[changelog].result(20)
    assert described["cleanup.policy"].value == "compact"

    second = [chooser.choice(VOCABULARY[:4]) for _ in range(50)]
    worker = Worker(worker_env, tmp_path / "worker-2.log")
    try:
        worker.wait_ready()
        produce(bootstrap, names["input"], second)
        table = wait_for_counts(bootstrap, names["app"], dict(collections.Counter(first + second)), worker)
        assert worker.stop() == 0, worker.log_tail()
    finally:
        worker.kill()
    assert sum(table.values()) == 350
    assert table_contents(bootstrap, names["app"]) == table
    assert broker.alive(), broker.log_tail()


def high_watermarks(bootstrap: str, topic: str) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"hw-{uuid.uuid4().hex[:6]}"})
    ends = [consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)[1] for partition in range(2)]
    consumer.close()
    return ends
