"""Power loss: with ``--durability fsync`` every acknowledged record survives; with ``wal`` what was not yet
written back by the page cache is lost, and the store still opens consistent.

The broker's data directory is a FUSE layer (`power_cut_fs`) that keeps written data in memory until it is
fsynced. Records are produced in two rounds with a writeback of everything between them (as the kernel
does every few seconds); then the broker is SIGKILLed, the layer's process too (the power cut: its unsynced
data is gone), and a broker restarted on the backing directory shows what remained.

Measured here: ``fsync`` keeps both rounds; ``wal`` keeps the first round and loses every record of the
second, although each was acknowledged (RocksDB's write-ahead log was written but never fsynced).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .broker_process import BrokerProcess

pytestmark = pytest.mark.logwright_only(reason="cuts the power under a private broker process")

ROUND = 300
VALUE_BYTES = {"small": 0, "large": 2_000}
"""Record values padded to this: small records make batches kept in RocksDB, large ones batches kept in files."""
REPOSITORY = Path(__file__).resolve().parents[2]


class PowerCutLayer:
    """`power_cut_fs` mounted at ``mountpoint`` over ``backing``, run as a process of its own."""

    def __init__(self, backing: Path, mountpoint: Path) -> None:
        self.backing, self.mountpoint = backing, mountpoint
        backing.mkdir()
        mountpoint.mkdir()
        self.log_path = mountpoint.parent / "power-cut-fs.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.power_cut_fs", str(backing), str(mountpoint)],
            cwd=REPOSITORY, stdout=open(self.log_path, "wb"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while not os.path.ismount(mountpoint):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                pytest.skip(f"cannot mount a FUSE file system here: {self.log_path.read_text(errors='replace')}")
            time.sleep(0.05)

    def write_back_everything(self) -> None:
        """What the kernel's periodic writeback does: every file's data reaches the backing directory."""
        with pytest.raises(FileNotFoundError):
            os.stat(self.mountpoint / ".power-cut-fs-sync-all")

    def cut(self) -> None:
        """Power off: whatever the layer holds in memory is lost; the mount goes away."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        subprocess.run(["umount", "-l", str(self.mountpoint)], check=False, capture_output=True)


@pytest.fixture
def layer(tmp_path: Path) -> Iterator[PowerCutLayer]:
    try:
        import mfusepy  # noqa: F401, PLC0415 - loads libfuse3 with ctypes: OSError, not ImportError, without it
    except (ImportError, OSError) as missing:
        pytest.skip(f"the power-cut layer needs mfusepy (test extra) and libfuse3 (Debian: fuse3, which .ci/run "
                    f"installs): {missing}")
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        pytest.skip("mounting a FUSE file system needs root and /dev/fuse")
    mounted = PowerCutLayer(tmp_path / "backing", tmp_path / "power")
    try:
        yield mounted
    finally:
        mounted.cut()


def value(index: int, size: str) -> bytes:
    return f"record-{index:05d}".encode().ljust(VALUE_BYTES[size], b".")


def produce_round(bootstrap: str, topic: str, first: int, size: str) -> list[int]:
    """``ROUND`` records acknowledged with acks=all; the offsets the broker answered."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    offsets: list[int] = []
    errors: list[object] = []

    def report(error: object, message: object) -> None:
        if error is not None:
            errors.append(error)
        else:
            offsets.append(message.offset())  # type: ignore[attr-defined]

    for index in range(first, first + ROUND):
        producer.produce(topic, value(index, size), partition=0, on_delivery=report)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert errors == []
    return sorted(offsets)


def read_all(bootstrap: str, topic: str) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"after-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False})
    try:
        _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < high and time.monotonic() < deadline:
            values += [message.value() for message in consumer.consume(500, timeout=0.5) if message.error() is None]
        assert len(values) == high
        return values
    finally:
        consumer.close()


@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("durability", ["fsync", "wal"])
def test_acknowledged_records_after_a_power_cut(layer: PowerCutLayer, durability: str, size: str) -> None:
    topic = f"power-{uuid.uuid4().hex[:8]}"
    broker = BrokerProcess(layer.mountpoint, durability=durability).start()
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        assert produce_round(broker.bootstrap, topic, 0, size) == list(range(ROUND))
        layer.write_back_everything()
        assert produce_round(broker.bootstrap, topic, ROUND, size) == list(range(ROUND, 2 * ROUND))
    finally:
        broker.kill()
        layer.cut()

    restarted = BrokerProcess(layer.backing, durability=durability).start()
    try:
        survivors = read_all(restarted.bootstrap, topic)
    finally:
        assert restarted.stop() == 0
    checked = subprocess.run([sys.executable, "-m", "logwright", "check", "--data-dir", str(layer.backing)],
                             capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout.startswith("consistent"), checked.stdout + checked.stderr

    acknowledged = [value(index, size) for index in range(2 * ROUND)]
    assert survivors == acknowledged[: len(survivors)], "what survives is a prefix of what was acknowledged"
    lost = len(acknowledged) - len(survivors)
    print(f"durability {durability}: {len(acknowledged)} records acknowledged, {lost} lost by the power cut")
    if size == "large":
        assert any(layer.backing.glob("batches/*/*.batches")), "large batches are kept in files"
    if durability == "fsync":
        assert lost == 0
    else:
        assert lost == ROUND, "wal keeps what was written back before the cut and nothing after it"


@pytest.mark.parametrize("durability", ["fsync", "wal"])
def test_records_deleted_before_a_power_cut_stay_deleted(layer: PowerCutLayer, durability: str) -> None:
    """A truncation's files are deleted on a thread after its answer (`eventstore.file_drops`), and only once the
    log holding the truncation is synced: a power cut right after they went must not bring back pointers into
    them. Without that sync (``wal`` commits are not synced), the truncation would be lost with the cut while its
    files are gone, and the restarted store would name batches that no longer exist."""
    topic = f"power-{uuid.uuid4().hex[:8]}"
    broker = BrokerProcess(layer.mountpoint, durability=durability).start()
    own_files = "batches/[0-9]*/*.batches"
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
        assert produce_round(broker.bootstrap, topic, 0, "large") == list(range(ROUND))
        layer.write_back_everything()
        assert any(layer.backing.glob(own_files)), "past the first 256 KiB a partition's batches get a file"
        deleted = admin.delete_records([TopicPartition(topic, 0, ROUND)])
        assert deleted[TopicPartition(topic, 0, ROUND)].result(30).low_watermark == ROUND  # type: ignore[union-attr]
        deadline = time.monotonic() + 10
        while any(layer.backing.glob(own_files)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(layer.backing.glob(own_files)), "the truncated files are deleted"
    finally:
        broker.kill()
        layer.cut()

    restarted = BrokerProcess(layer.backing, durability=durability).start()
    try:
        consumer = Consumer({"bootstrap.servers": restarted.bootstrap, "group.id": f"after-{uuid.uuid4().hex[:6]}"})
        try:
            assert consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (ROUND, ROUND)
        finally:
            consumer.close()
    finally:
        assert restarted.stop() == 0
    checked = subprocess.run([sys.executable, "-m", "logwright", "check", "--data-dir", str(layer.backing)],
                             capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout.startswith("consistent"), checked.stdout + checked.stderr
