"""A topic's ``compression.type`` and its levels (KIP-390), and Kafka's ZStandard version gate (KIP-110), on both
brokers (``--against kafka``).

A codec named by the topic is the codec every stored batch has: a batch produced in another is rebuilt in it (its
records, producer fields and offsets kept), and one that grows past ``max.message.bytes`` when rebuilt is refused.
Raw Produce requests fix each batch's codec and bounds; a raw Fetch shows the stored batch and librdkafka reads it
back, so the codecs' framings are the ones clients read.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, NewTopic, ResourceType
from confluent_kafka.admin import ConfigResource as ConfluentResource
from kafka.admin import ConfigResource, KafkaAdminClient
from kio.schema.fetch.v9 import request as fetch_v9
from kio.schema.fetch.v10 import request as fetch_v10
from kio.schema.produce.v6 import request as produce_v6
from kio.schema.produce.v7 import request as produce_v7
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import (
    Compression,
    build_batch,
    decode_records,
    iter_batches,
    parse_header,
    verify_crc,
)
from logwright.compat.wire.records import Record

from .raw_batches import RETRIABLE, produce_request

pytestmark = pytest.mark.differential

NONE, MESSAGE_TOO_LARGE, UNSUPPORTED_COMPRESSION_TYPE = 0, 10, 76
STATIC, DEFAULT = "STATIC_BROKER_CONFIG", "DEFAULT_CONFIG"
CODECS = {"uncompressed": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
          "lz4": Compression.LZ4, "zstd": Compression.ZSTD}
RECORDS = [Record(0, 1_700_000_000_000 + n, f"key-{n}".encode(), b"value " * 40 + bytes([n]),
                  (("trace", f"t{n}".encode()),)) for n in range(3)]


def _topic(bootstrap: str, configs: dict[str, str]) -> str:
    topic = f"codec-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, config=configs)])[topic].result(30)
    return topic


def _exchange(bootstrap: str, request: Any) -> Any:
    """One request on a connection of its own, asked again while a new topic's partition has no leader yet (Kafka
    right after CreateTopics)."""
    async def run() -> Any:
        connection = await Connection.open(bootstrap, "topic-compression")
        try:
            deadline = time.monotonic() + 30
            while True:
                answer = await connection.request(request)
                partition = _first_partition(answer)
                if int(partition.error_code) not in RETRIABLE or time.monotonic() > deadline:
                    return partition
                await asyncio.sleep(0.1)
        finally:
            await connection.close()
    return asyncio.run(run())


def _first_partition(answer: Any) -> Any:
    return answer.responses[0].partition_responses[0] if hasattr(answer.responses[0], "partition_responses") else (
        answer.responses[0].partitions[0])


def _produced(bootstrap: str, topic: str, batch: bytes) -> tuple[int, int]:
    """A raw Produce v9 of ``batch``: its error code and base offset."""
    answer = _exchange(bootstrap, produce_request(topic, batch))
    return int(answer.error_code), int(answer.base_offset)


def _fetch(module: Any, topic: str, offset: int = 0) -> Any:
    return make(module.FetchRequest, replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20,
                isolation_level=0, session_id=0, session_epoch=-1, forgotten_topics_data=(), topics=(make(
                    module.FetchTopic, topic=topic, partitions=(make(
                        module.FetchPartition, partition=0, current_leader_epoch=-1, fetch_offset=offset,
                        log_start_offset=-1, partition_max_bytes=1 << 20),)),))


def _stored(bootstrap: str, topic: str) -> list[bytes]:
    """The partition's stored batches, as a Fetch v10 answers them."""
    answer = _exchange(bootstrap, _fetch(fetch_v10, topic))
    assert int(answer.error_code) == NONE
    return [bytes(batch) for batch in iter_batches(answer.records or b"")]


def _read_back(bootstrap: str, topic: str, count: int) -> list[tuple[bytes | None, bytes | None, list[Any]]]:
    """What librdkafka reads of the partition: keys, values, headers."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"codec-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    read: list[tuple[bytes | None, bytes | None, list[Any]]] = []
    deadline = time.monotonic() + 30
    try:
        while len(read) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            read.append((message.key(), message.value(), message.headers() or []))
    finally:
        consumer.close()
    return read


@pytest.mark.parametrize(("topic_codec", "produced_codec"), [
    ("gzip", Compression.NONE), ("snappy", Compression.NONE), ("lz4", Compression.ZSTD),
    ("zstd", Compression.GZIP), ("uncompressed", Compression.SNAPPY), ("gzip", Compression.LZ4),
])
def test_a_batch_in_another_codec_is_stored_in_the_topics(bootstrap: str, topic_codec: str,
                                                           produced_codec: Compression) -> None:
    topic = _topic(bootstrap, {"compression.type": topic_codec})
    assert _produced(bootstrap, topic, build_batch(RECORDS, compression=produced_codec)) == (NONE, 0)
    assert _produced(bootstrap, topic, build_batch(RECORDS[:1], compression=produced_codec)) == (NONE, 3)
    batches = _stored(bootstrap, topic)
    assert [parse_header(batch).compression for batch in batches] == [CODECS[topic_codec]] * 2
    assert all(verify_crc(batch) for batch in batches)
    header = parse_header(batches[0])
    assert (header.base_offset, header.record_count, header.last_offset_delta) == (0, 3, 2)
    assert (header.base_timestamp, header.max_timestamp) == (RECORDS[0].timestamp, RECORDS[2].timestamp)
    stored = [record for batch in batches for record in decode_records(batch)]
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in stored] == [
        (offset, r.timestamp, r.key, r.value, r.headers) for offset, r in enumerate([*RECORDS, RECORDS[0]])]
    assert _read_back(bootstrap, topic, 4) == [(r.key, r.value, [(name, value) for name, value in r.headers])
                                                for r in [*RECORDS, RECORDS[0]]]


def test_a_batch_already_in_the_topics_codec_is_kept_as_it_came(bootstrap: str) -> None:
    topic = _topic(bootstrap, {"compression.type": "gzip", "compression.gzip.level": "1"})
    batch = build_batch(RECORDS, compression=Compression.GZIP)  # level 6: the topic's level is not applied to it
    assert _produced(bootstrap, topic, batch) == (NONE, 0)
    (stored,) = _stored(bootstrap, topic)
    assert stored[16:] == batch[16:], "from the magic byte on (the broker stamps its leader epoch before it)"


def test_an_idempotent_producers_batches_keep_their_sequences(bootstrap: str) -> None:
    topic = _topic(bootstrap, {"compression.type": "zstd"})
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": "none",
                         "linger.ms": 5})
    for round_ in range(2):
        for n in range(5):
            producer.produce(topic, key=b"k%d" % n, value=b"v%d-%d" % (round_, n), partition=0)
        assert producer.flush(30) == 0
    headers = [parse_header(batch) for batch in _stored(bootstrap, topic)]
    assert {header.compression for header in headers} == {Compression.ZSTD}
    assert {header.producer_id for header in headers} != {-1} and len({h.producer_id for h in headers}) == 1
    assert [(header.base_offset, header.base_sequence) for header in headers] == [
        (header.base_offset, header.base_offset) for header in headers], "sequences as produced, one per record"
    assert sum(header.record_count for header in headers) == 10


def test_a_batch_that_grows_when_rebuilt_is_refused(bootstrap: str) -> None:
    """Random bytes do not shrink: gzip's framing makes the rebuilt batch larger than the one produced, which was
    exactly ``max.message.bytes``. The same batch is taken by a topic that keeps the producer's codec."""
    batch = build_batch([Record(0, 1_700_000_000_000, None, os.urandom(2_000))])
    limits = {"max.message.bytes": str(len(batch))}
    kept = _topic(bootstrap, {**limits, "compression.type": "producer"})
    assert _produced(bootstrap, kept, batch) == (NONE, 0)
    rebuilt = _topic(bootstrap, {**limits, "compression.type": "gzip"})
    assert _produced(bootstrap, rebuilt, batch)[0] == MESSAGE_TOO_LARGE
    assert _stored(bootstrap, rebuilt) == []


def _produce(module: Any, topic: str, batch: bytes) -> Any:
    return make(module.ProduceRequest, transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
                topic_data=(make(module.TopicProduceData, name=topic, partition_data=(
                    make(module.PartitionProduceData, index=0, records=batch),)),))


def test_zstandard_is_refused_in_produce_requests_before_v7(bootstrap: str) -> None:
    topic = _topic(bootstrap, {})
    zstd = build_batch(RECORDS, compression=Compression.ZSTD)
    assert int(_exchange(bootstrap, _produce(produce_v6, topic, zstd)).error_code) == UNSUPPORTED_COMPRESSION_TYPE
    assert int(_exchange(bootstrap, _produce(produce_v6, topic, build_batch(RECORDS))).error_code) == NONE
    assert int(_exchange(bootstrap, _produce(produce_v7, topic, zstd)).error_code) == NONE
    topic_zstd = _topic(bootstrap, {"compression.type": "zstd"})  # the gate is the batch's codec, not the topic's
    assert int(_exchange(bootstrap, _produce(produce_v6, topic_zstd, build_batch(RECORDS))).error_code) == NONE


def test_a_zstd_topic_is_fetched_by_any_version(bootstrap: str) -> None:
    """Older Kafkas answered a Fetch before v10 of a zstd topic UNSUPPORTED_COMPRESSION_TYPE; Kafka 4.4 serves it, so
    v9 gets the stored zstd batch as it is (the gate that remains is Produce's)."""
    topic = _topic(bootstrap, {"compression.type": "zstd"})
    assert _produced(bootstrap, topic, build_batch(RECORDS)) == (NONE, 0)
    served = _exchange(bootstrap, _fetch(fetch_v9, topic))
    assert (int(served.error_code), int(served.high_watermark)) == (NONE, 3)
    assert [parse_header(batch).compression for batch in iter_batches(served.records)] == [Compression.ZSTD]


def test_librdkafka_reads_a_topic_its_producer_did_not_compress(bootstrap: str) -> None:
    topic = _topic(bootstrap, {"compression.type": "lz4", "compression.lz4.level": "17"})
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": "none", "linger.ms": 5})
    for n in range(200):
        producer.produce(topic, key=b"%d" % n, value=b"payload %d " % n * 20, partition=0)
    assert producer.flush(30) == 0
    assert {parse_header(batch).compression for batch in _stored(bootstrap, topic)} == {Compression.LZ4}
    read = _read_back(bootstrap, topic, 200)
    assert [value for _, value, _ in read] == [b"payload %d " % n * 20 for n in range(200)]


def test_a_transactions_marker_is_not_compressed(bootstrap: str) -> None:
    """The records of a transaction are rebuilt in the topic's codec; its commit marker, which the broker writes, is
    not: a control batch stays uncompressed."""
    topic = _topic(bootstrap, {"compression.type": "gzip"})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"codec-{uuid.uuid4().hex[:6]}",
                         "compression.type": "none", "linger.ms": 5})
    producer.init_transactions(30)
    producer.begin_transaction()
    for n in range(3):
        producer.produce(topic, key=b"k", value=b"in a transaction %d" % n, partition=0)
    producer.commit_transaction(30)
    batches, deadline = _stored(bootstrap, topic), time.monotonic() + 30
    while len(batches) < 2 and time.monotonic() < deadline:  # Kafka writes the marker after it answered EndTxn
        time.sleep(0.05)
        batches = _stored(bootstrap, topic)
    headers = [parse_header(batch) for batch in batches]
    assert [(header.is_control, header.compression) for header in headers] == [
        (False, Compression.GZIP), (True, Compression.NONE)]
    assert headers[0].is_transactional and headers[1].is_transactional


@pytest.mark.parametrize("started_with", [{"compression.type": "lz4", "compression.lz4.level": "12"}], indirect=True)
def test_the_brokers_keys_are_the_topics_defaults(started_with: str) -> None:
    """``compression.type`` and the levels of the broker are those of a topic that sets none, listed as its
    synonyms (the broker's value, then Kafka's default), and a batch produced uncompressed is stored in lz4."""
    topic = _topic(started_with, {})
    names = ["compression.type", "compression.lz4.level"]
    admin = KafkaAdminClient(bootstrap_servers=started_with, request_timeout_ms=30000)
    try:
        found = admin.describe_configs([ConfigResource("TOPIC", topic, names)], include_synonyms=True,
                                       config_filter="all")["topic"][topic]
    finally:
        admin.close()
    assert {name: (entry["value"], entry["config_source"],
                   [(synonym["name"], synonym["value"], synonym["source"]) for synonym in entry["synonyms"]])
            for name, entry in found.items()} == {
        "compression.type": ("lz4", STATIC, [("compression.type", "lz4", STATIC),
                                             ("compression.type", "producer", DEFAULT)]),
        "compression.lz4.level": ("12", STATIC, [("compression.lz4.level", "12", STATIC),
                                                 ("compression.lz4.level", "9", DEFAULT)]),
    }
    assert _produced(started_with, topic, build_batch(RECORDS)) == (NONE, 0)
    assert [parse_header(batch).compression for batch in _stored(started_with, topic)] == [Compression.LZ4]


INVALID_RECORD, INVALID_TIMESTAMP = 87, 32
LONG_RECORD = [Record(0, 1_700_000_000_000, None, bytes(900))]
"""One record whose body is 907 bytes (attributes, deltas, a null key, the value's size and bytes, no headers)."""


def test_a_compressed_record_longer_than_max_decompressed_message_bytes_is_invalid(bootstrap: str) -> None:
    """The bound is each record's body once inflated: 907 bytes are refused at 906 and taken at 907 (Kafka 4.4's
    DefaultRecord.readFrom). Records of an uncompressed batch are not measured, even when the topic's codec
    rebuilds them: Kafka reads those without the bound."""
    gzipped = build_batch(LONG_RECORD, compression=Compression.GZIP)
    refused = _topic(bootstrap, {"max.decompressed.message.bytes": "906"})
    assert _produced(bootstrap, refused, gzipped)[0] == INVALID_RECORD
    assert _produced(bootstrap, refused, build_batch(LONG_RECORD, compression=Compression.ZSTD))[0] == INVALID_RECORD
    assert _stored(bootstrap, refused) == []
    assert _produced(bootstrap, refused, build_batch(LONG_RECORD)) == (NONE, 0)
    taken = _topic(bootstrap, {"max.decompressed.message.bytes": "907"})
    assert _produced(bootstrap, taken, gzipped) == (NONE, 0)
    rebuilt = _topic(bootstrap, {"max.decompressed.message.bytes": "1", "compression.type": "gzip"})
    assert _produced(bootstrap, rebuilt, build_batch(LONG_RECORD)) == (NONE, 0)
    assert [parse_header(batch).compression for batch in _stored(bootstrap, rebuilt)] == [Compression.GZIP]


def test_a_long_record_is_refused_before_a_timestamp_is(bootstrap: str) -> None:
    """Kafka refuses the long record while reading the batch, before it validates timestamps: INVALID_RECORD even
    when an earlier record's timestamp is out of bounds."""
    topic = _topic(bootstrap, {"max.decompressed.message.bytes": "100", "message.timestamp.after.max.ms": "1000"})
    future = int(time.time() * 1000) + 3_600_000
    batch = build_batch([Record(0, future, None, b"v"), Record(1, future, None, bytes(900))],
                        compression=Compression.LZ4)
    assert _produced(bootstrap, topic, batch)[0] == INVALID_RECORD
    in_bounds = build_batch([Record(0, future, None, b"v"), Record(1, future, None, bytes(90))],
                            compression=Compression.LZ4)
    assert _produced(bootstrap, topic, in_bounds)[0] == INVALID_TIMESTAMP


def test_the_brokers_max_decompressed_message_bytes_is_the_topics_default(bootstrap: str) -> None:
    """The broker's dynamic value bounds a topic that sets none, which lists it as its source; a value outside
    1..2147483639 is refused."""
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def set_default(value: str | None) -> None:
        operation = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        resource = ConfluentResource(ResourceType.BROKER, "1", incremental_configs=[
            ConfigEntry("max.decompressed.message.bytes", value or "", incremental_operation=operation)])
        admin.incremental_alter_configs([resource])[resource].result(30)

    for bad in ("0", "2147483640"):
        with pytest.raises(Exception, match="INVALID_CONFIG|INVALID_REQUEST"):
            set_default(bad)
    topic = _topic(bootstrap, {})
    gzipped = build_batch(LONG_RECORD, compression=Compression.GZIP)
    set_default("500")
    try:
        deadline = time.monotonic() + 30  # Kafka applies a dynamic default once its metadata log has it
        while (code := _produced(bootstrap, topic, gzipped)[0]) == NONE and time.monotonic() < deadline:
            time.sleep(0.2)
        assert code == INVALID_RECORD
        resource = ConfluentResource(ResourceType.TOPIC, topic)
        found = admin.describe_configs([resource])[resource].result(30)["max.decompressed.message.bytes"]
        assert (found.value, found.source) == ("500", 2)  # DYNAMIC_BROKER_CONFIG
    finally:
        set_default(None)
