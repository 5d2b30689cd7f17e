"""Produce reads every record before it acknowledges a batch, as Kafka's LogValidator does: a batch whose CRC is
right but whose records lie is refused with Kafka's error, and the partition stays readable past it. Differential:
the same answers from Apache Kafka 4.4, but where Kafka's is UNKNOWN_SERVER_ERROR (records that do not inflate,
inner offsets of a compressed batch that skip): logwright names the fault (CORRUPT_MESSAGE, INVALID_RECORD)."""

from __future__ import annotations

import datetime
import struct
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from crc32c import crc32c
from kio.schema.produce.v9 import request as produce_v9
from logwright.compat.wire.compression import Compression, compress
from logwright.compat.wire.record_batch import HEADER_SIZE, Record, build_batch
from logwright.compat.wire.records import encode_records

from .consumer_protocol_wire import request

UNKNOWN_SERVER_ERROR, NONE, CORRUPT_MESSAGE, INVALID_TIMESTAMP, INVALID_RECORD = -1, 0, 2, 32, 87


def _now() -> int:
    return int(time.time() * 1000)


def _recrc(batch: bytearray) -> bytes:
    batch[17:21] = struct.pack(">I", crc32c(bytes(batch[21:])))
    return bytes(batch)


def _gzip_flag_over_plain_records() -> bytes:
    batch = bytearray(build_batch([Record(i, _now(), None, b"v%d" % i, ()) for i in range(3)]))
    batch[21:23] = struct.pack(">h", int(Compression.GZIP))
    return _recrc(batch)


def _record_length_past_its_bytes() -> bytes:
    batch = bytearray(build_batch([Record(i, _now(), None, b"v%d" % i, ()) for i in range(3)]))
    batch[HEADER_SIZE] = 0x7E
    return _recrc(batch)


def _two_hours_ahead() -> bytes:
    return build_batch([Record(0, _now() + 7_200_000, None, b"late", ())])


def _compressed_with_an_offset_gap() -> bytes:
    items = [Record(offset, _now(), None, b"v", ()) for offset in (0, 1, 5)]
    head = bytearray(build_batch(items, compression=Compression.GZIP)[:HEADER_SIZE])
    batch = head + compress(Compression.GZIP, encode_records(items, items[0].timestamp, base_offset=0))
    batch[8:12] = struct.pack(">i", len(batch) - 12)
    return _recrc(batch)


def _two_batches() -> bytes:
    """Two good batches for one partition: Kafka takes exactly one per partition (v3+); a request could carry
    hundreds of small compressed batches of 64 MiB of zeros each, every one inflated to be checked."""
    return build_batch([Record(0, _now(), None, b"one", ())]) + build_batch([Record(0, _now(), None, b"two", ())])


def _produce(bootstrap: str, topic: str, batch: bytes) -> Any:
    message = produce_v9.ProduceRequest(
        transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=10), topic_data=(
            produce_v9.TopicProduceData(name=topic, partition_data=(
                produce_v9.PartitionProduceData(index=0, records=batch),)),))
    (answer,) = request(bootstrap, message).responses[0].partition_responses
    return answer


@pytest.mark.differential
@pytest.mark.parametrize(("make_batch", "expected", "kafkas"), [
    (_gzip_flag_over_plain_records, CORRUPT_MESSAGE, UNKNOWN_SERVER_ERROR),
    (_record_length_past_its_bytes, INVALID_RECORD, INVALID_RECORD),
    (_two_hours_ahead, INVALID_TIMESTAMP, INVALID_TIMESTAMP),
    (_compressed_with_an_offset_gap, INVALID_RECORD, UNKNOWN_SERVER_ERROR),
    (_two_batches, INVALID_RECORD, INVALID_RECORD),
])
def test_a_lying_batch_is_refused_and_the_partition_reads_on(bootstrap: str, target: str, make_batch: Any,
                                                             expected: int, kafkas: int) -> None:
    topic = f"lying-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    deadline = time.monotonic() + 30  # Kafka's partition leader may not know the topic yet
    while (first := _produce(bootstrap, topic, build_batch([Record(0, _now(), None, b"before", ())])).error_code
           ) != NONE and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first == NONE
    assert _produce(bootstrap, topic, make_batch()).error_code == (kafkas if target == "kafka" else expected)
    assert _produce(bootstrap, topic, build_batch([Record(0, _now(), None, b"after", ())])).error_code == NONE
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": topic, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: list[bytes | None] = []
        deadline = time.monotonic() + 30
        while len(values) < 2 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None:
                assert message.error() is None, message.error()
                values.append(message.value())
        assert values == [b"before", b"after"]
    finally:
        consumer.close()
