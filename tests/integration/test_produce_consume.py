"""confluent-kafka and kcat against a real broker process: every codec, keys, headers, order, restart."""

from __future__ import annotations

import datetime
import shutil
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.fetch.v12 import request as fetch_v12
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import parse_header
from logwright.testing.clients import one_request

from .broker_process import BrokerProcess

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _produce(bootstrap: str, topic: str, count: int, codec: str = "none") -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "acks": "all",
                         "linger.ms": 5})
    for index in range(count):
        producer.produce(topic, key=f"k{index % 3}".encode(), value=f"v{index}".encode(),
                         headers=[("h", str(index).encode())])
    assert producer.flush(30) == 0


def _consume(bootstrap: str, topic: str, count: int, group: str | None = None) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group or f"g-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    received = []
    deadline = time.monotonic() + 60
    while len(received) < count and time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            received.append(message)
    consumer.close()
    return received


@pytest.mark.differential
@pytest.mark.parametrize("codec", CODECS)
def test_every_codec_keeps_keys_headers_and_order(bootstrap: str, codec: str) -> None:
    topic = f"codec-{codec}-{uuid.uuid4().hex[:8]}"
    _produce(bootstrap, topic, 200, codec)
    received = _consume(bootstrap, topic, 200)
    assert [m.value() for m in received] == [f"v{i}".encode() for i in range(200)]
    assert [m.key() for m in received] == [f"k{i % 3}".encode() for i in range(200)]
    assert [dict(m.headers())["h"] for m in received] == [str(i).encode() for i in range(200)]
    assert [m.offset() for m in received] == list(range(200))


@pytest.mark.differential
def test_offsets_for_times(bootstrap: str) -> None:
    topic = f"times-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": bootstrap})
    for index in range(10):
        producer.produce(topic, value=b"x", timestamp=1_000_000 + index * 1000)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "times"})
    found = consumer.offsets_for_times([TopicPartition(topic, 0, 1_004_500)], timeout=30)
    assert found[0].offset == 5
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    assert (low, high) == (0, 10)
    consumer.close()


@pytest.mark.logwright_only(reason="SIGKILLs a private logwright process and runs `logwright check`")
def test_acknowledged_records_survive_sigkill(broker: BrokerProcess) -> None:
    topic = "restart"
    _produce(broker.bootstrap, topic, 500)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "restart-group",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen = 0
    while seen < 100:
        message = consumer.poll(1.0)
        if message is not None and not message.error():
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    broker.kill()
    broker.start()
    assert len(_consume(broker.bootstrap, topic, 500)) == 500
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "restart-group"})
    committed = consumer.committed([TopicPartition(topic, 0)], timeout=30)
    assert committed[0].offset == 100
    consumer.close()
    command = [sys.executable, "-m", "logwright", "check", "--data-dir", str(broker.data_dir)]
    check = subprocess.run(command, capture_output=True, text=True)
    assert check.returncode == 0 and "consistent" in check.stdout, check.stdout + check.stderr


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by .ci/run")
def test_kcat_list_produce_consume(bootstrap: str) -> None:
    topic = f"kcat-{uuid.uuid4().hex[:8]}"
    lines = "\n".join(f"line{i}" for i in range(20)) + "\n"
    subprocess.run(["kcat", "-b", bootstrap, "-P", "-t", topic], input=lines, text=True, check=True, timeout=30)
    out = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-q"],
                         capture_output=True, text=True, check=True, timeout=30).stdout
    assert out.split() == [f"line{i}" for i in range(20)]
    listing = subprocess.run(["kcat", "-b", bootstrap, "-L"], capture_output=True, text=True, check=True,
                             timeout=30).stdout
    assert topic in listing


KCAT_CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.differential
@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by .ci/run")
@pytest.mark.parametrize("codec", KCAT_CODECS)
def test_kcat_compresses_as_it_does_against_kafka(bootstrap: str, codec: str) -> None:
    """Debian's kcat (librdkafka 2.0.2) turns compression off, silently, unless the broker's Produce range starts at
    0 (KAFKA-18659): Kafka 4.x names 0 though it refuses versions 0-2, and so does logwright. The stored batch
    carries the codec asked."""
    topic = f"kcat-{codec}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    lines = "".join(f"a line that compresses well, number {i}\n" for i in range(50))
    deadline = time.monotonic() + 30
    while True:  # Kafka: NOT_LEADER_OR_FOLLOWER right after the topic's creation, which kcat does not retry
        done = subprocess.run(["kcat", "-b", bootstrap, "-P", "-t", topic, "-p", "0", "-z", codec],
                              input=lines, text=True, capture_output=True, timeout=30)
        if done.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert done.returncode == 0, done.stderr
    answer = one_request(bootstrap, make(
        fetch_v12.FetchRequest, replica_id=-1, max_wait=datetime.timedelta(milliseconds=10), min_bytes=0,
        max_bytes=1_000_000, isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
        topics=(make(fetch_v12.FetchTopic, topic=topic, partitions=(make(
            fetch_v12.FetchPartition, partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
            log_start_offset=-1, partition_max_bytes=1_000_000),)),)))
    [partition] = answer.responses[0].partitions
    header = parse_header(partition.records)
    assert (header.attributes & 0x07, header.last_offset + 1) == (KCAT_CODECS[codec], 50)
