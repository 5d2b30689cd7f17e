"""confluent-kafka and kcat against a real broker process: every codec, keys, headers, order, restart."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

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
