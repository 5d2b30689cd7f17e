"""Spark's own Kafka connector (``format("kafka")``, spark-sql-kafka-0-10) against a real logwright broker process.

What most Spark users run against a Kafka cluster: batch reads with explicit offset ranges, a checkpointed
Structured Streaming query stopped and restarted, ``read_committed`` over an aborted transaction, and the Kafka
sink, whose records confluent-kafka (librdkafka) then reads. One broker and the shared Spark session for the
module; a topic per test; small data.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.testing.broker_process import BrokerProcess

from .kafka_connector import connector_jars

pytestmark = [pytest.mark.spark, pytest.mark.integration]

BENCH = Path(__file__).resolve().parents[2] / "bench"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
Produced = dict[tuple[int, int], tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]]


@pytest.fixture(scope="module")
def bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A logwright broker process; an Apache Kafka node with ``--against kafka`` (checks the expectations)."""
    if not connector_jars():
        pytest.skip("no mvn on this machine to fetch Spark's Kafka connector from Maven Central (make spark-kafka)")
    if request.config.getoption("--against") == "kafka":
        sys.path.append(str(BENCH))
        from kafka_peer import KafkaPeer

        with KafkaPeer(tmp_path_factory.mktemp("spark-kafka-peer")) as kafka:
            yield kafka.bootstrap
        return
    broker = BrokerProcess(tmp_path_factory.mktemp("spark-kafka") / "data").start()
    try:
        yield broker.bootstrap
    finally:
        assert broker.stop() == 0, broker.log_tail()


def create_topic(bootstrap: str, name: str, partitions: int) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(30)
    return name


def produce(bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes | None,
                                                            list[tuple[str, bytes | None]]]],
            **config: Any) -> Produced:
    """Each ``(partition, key, value, headers)`` sent in order; what landed where, by delivery report."""
    produced: Produced = {}
    failures: list[str] = []

    def on_delivery(headers: list[tuple[str, bytes | None]]) -> Any:
        def delivered(error: Any, message: Message) -> None:  # a delivery report carries no headers
            if error is not None:
                failures.append(str(error))
                return
            produced[(message.partition(), message.offset())] = (
                message.key(), message.value(), headers, message.timestamp()[1])
        return delivered

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, **config})
    for partition, key, value, headers in records:
        producer.produce(topic, key=key, value=value, headers=headers, partition=partition,
                         on_delivery=on_delivery(headers))
    assert producer.flush(30) == 0
    assert not failures, failures
    assert len(produced) == len(records)
    return produced


def consume(bootstrap: str, topic: str, partitions: int, count: int) -> list[Message]:
    """``count`` records of ``topic`` from the beginning with librdkafka (read_committed, its default)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, partition, 0) for partition in range(partitions)])
    messages: list[Message] = []
    deadline = time.monotonic() + 30
    try:
        while len(messages) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                messages.append(message)
    finally:
        consumer.close()
    return messages


def kafka_read(spark: Any, bootstrap: str, topic: str, **options: str) -> Any:
    reader = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
              .option("includeHeaders", "true"))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def as_produced(rows: list[Any]) -> Produced:
    return {(row.partition, row.offset): (row.key, row.value, [(h.key, h.value) for h in row.headers or []],
                                          int(row.timestamp.timestamp() * 1000 + 0.5))
            for row in rows}


def test_a_batch_read_returns_every_codec_with_keys_headers_and_offset_ranges(spark: Any, bootstrap: str) -> None:
    topic = create_topic(bootstrap, "spark-codecs", 3)
    produced: Produced = {}
    for codec in CODECS:
        records = [(i % 3, None if i % 4 == 0 else f"{codec}-key-{i}".encode(),
                    None if i == 5 else f"{codec} value {i} ".encode() * (i + 1),
                    [("codec", codec.encode()), ("i", str(i).encode())] + ([("null", None)] if i % 3 == 0 else []))
                   for i in range(12)]
        produced |= produce(bootstrap, topic, records, **{"compression.type": codec})

    frame = kafka_read(spark, bootstrap, topic)
    rows = frame.collect()
    assert {row.topic for row in rows} == {topic}
    assert {row.timestampType for row in rows} == {0}  # CreateTime
    assert len(rows) == len(produced) == 60
    assert as_produced(rows) == produced

    ends = {partition: 1 + max(offset for p, offset in produced if p == partition) for partition in range(3)}
    starting = json.dumps({topic: {"0": 3, "1": -2, "2": 7}})  # -2: earliest
    ending = json.dumps({topic: {"0": 9, "1": 4, "2": -1}})  # -1: latest
    ranged = kafka_read(spark, bootstrap, topic, startingOffsets=starting, endingOffsets=ending).collect()
    wanted = {(0, o) for o in range(3, 9)} | {(1, o) for o in range(0, 4)} | {(2, o) for o in range(7, ends[2])}
    assert sorted((row.partition, row.offset) for row in ranged) == sorted(wanted)
    assert as_produced(ranged) == {key: produced[key] for key in wanted}


def test_a_checkpointed_stream_to_parquet_delivers_each_record_once_across_a_restart(
        spark: Any, bootstrap: str, tmp_path: Path) -> None:
    topic = create_topic(bootstrap, "spark-stream", 2)
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run_until_caught_up() -> int:
        """Start the query from the checkpoint, process what is there, stop; the records it read."""
        stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest")
                  .option("maxOffsetsPerTrigger", "25").load()
                  .selectExpr("partition", "offset", "CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value"))
        query = (stream.writeStream.format("parquet").option("path", str(output))
                 .option("checkpointLocation", str(checkpoint)).start())
        try:
            query.processAllAvailable()
            return sum(progress["numInputRows"] for progress in query.recentProgress)
        finally:
            query.stop()

    first = produce(bootstrap, topic, [(i % 2, f"k{i}".encode(), f"first {i}".encode(), []) for i in range(60)])
    assert run_until_caught_up() == 60
    second = produce(bootstrap, topic, [(i % 2, f"k{i}".encode(), f"second {i}".encode(), []) for i in range(40)])
    assert run_until_caught_up() == 40  # from the checkpointed offsets, not from earliest

    rows = spark.read.parquet(str(output)).collect()
    written = [(row.partition, row.offset) for row in rows]
    assert len(written) == len(set(written)) == 100
    assert {(row.partition, row.offset): (row.key.encode(), row.value.encode()) for row in rows} == {
        where: (key, value) for where, (key, value, _, _) in (first | second).items()}


def test_read_committed_leaves_out_an_aborted_transaction(spark: Any, bootstrap: str) -> None:
    topic = create_topic(bootstrap, "spark-transactions", 1)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "spark-tx", "linger.ms": 5})
    producer.init_transactions(30)
    for label, commit in (("committed-1", True), ("aborted", False), ("committed-2", True)):
        producer.begin_transaction()
        for i in range(5):
            producer.produce(topic, key=f"{label}-{i}".encode(), value=label.encode(), partition=0)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)
            producer.abort_transaction(30)

    committed = kafka_read(spark, bootstrap, topic, **{"kafka.isolation.level": "read_committed"}).collect()
    assert [row.value for row in committed] == [b"committed-1"] * 5 + [b"committed-2"] * 5
    everything = kafka_read(spark, bootstrap, topic).collect()  # read_uncommitted, Spark's default
    assert [row.value for row in everything] == [b"committed-1"] * 5 + [b"aborted"] * 5 + [b"committed-2"] * 5


def test_the_kafka_sink_writes_records_confluent_kafka_reads(spark: Any, bootstrap: str) -> None:
    topic = create_topic(bootstrap, "spark-sink", 2)
    rows = [(f"key-{i}".encode() if i % 5 else None, f"value {i}".encode(), i % 2,
             [("source", b"spark"), ("i", str(i).encode())]) for i in range(50)]
    frame = spark.createDataFrame(rows, "key binary, value binary, partition int, "
                                        "headers array<struct<key:string,value:binary>>")
    frame.write.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save()

    messages = consume(bootstrap, topic, 2, len(rows))
    got = sorted(((m.partition(), m.key(), m.value(), list(m.headers() or [])) for m in messages), key=str)
    assert got == sorted(((partition, key, value, headers) for key, value, partition, headers in rows), key=str)
    for partition in range(2):  # contiguous offsets from 0: nothing written twice or lost
        offsets = [m.offset() for m in messages if m.partition() == partition]
        assert offsets == list(range(25))
