"""Helpers of the compacted-topic scenarios: create a compacted topic, produce keyed records at chosen record
times, close the head segment, and read a partition back from offset 0 with its offsets."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from confluent_kafka import Consumer, IsolationLevel, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

TIMEOUT_S = 30
Entry = tuple[int, bytes | None, bytes | None]
"""(offset, key, value) of one record read back."""
Read = TypeVar("Read")


def create_compacted(bootstrap: str, configs: Mapping[str, str] | None = None, partitions: int = 1) -> str:
    topic = f"compacted-{uuid.uuid4().hex[:8]}"
    settings = {"cleanup.policy": "compact", "segment.ms": "100", **(configs or {})}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1, config=settings)])[topic].result(TIMEOUT_S)
    return topic


def produce(bootstrap: str, topic: str, records: Sequence[tuple[bytes | None, bytes | None]],
            timestamp_ms: int | None = None, step_ms: int = 0, **config: object) -> list[KafkaError | None]:
    """Each (key, value) in order to partition 0; record times from ``timestamp_ms`` on, ``step_ms`` apart."""
    outcomes: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "retries": 0, **config})
    # the partition known first: records produced before metadata arrives are moved to it one by one, and a
    # flush under way then sends the first alone, splitting what a long linger means to send as one batch
    producer.list_topics(topic, timeout=TIMEOUT_S)
    for index, (key, value) in enumerate(records):
        extra = {} if timestamp_ms is None else {"timestamp": timestamp_ms + index * step_ms}
        producer.produce(topic, value=value, key=key, partition=0,
                         on_delivery=lambda error, _: outcomes.append(error), **extra)
        producer.poll(0)
    assert producer.flush(TIMEOUT_S) == 0
    return outcomes


def close_head(bootstrap: str, topic: str, timestamp_ms: int) -> None:
    """Append a record far later than the rest: it rolls a new active segment, so everything before it is in
    closed segments, which is all Kafka's cleaner compacts."""
    assert produce(bootstrap, topic, [(b"head", b"roll")], timestamp_ms) == [None]


def read_partition(bootstrap: str, topic: str, isolation: str = "read_uncommitted", partition: int = 0
                   ) -> list[Entry]:
    """Every record of a partition from offset 0 up to the high watermark, with offsets, keys and values."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         "enable.partition.eof": True})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), TIMEOUT_S)
        consumer.assign([TopicPartition(topic, partition, 0)])
        entries: list[Entry] = []
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    break
                raise AssertionError(str(error))
            entries.append((message.offset(), message.key(), message.value()))
        assert high >= low
        return entries
    finally:
        consumer.close()


def max_timestamp(bootstrap: str, topic: str, read_committed: bool = False,
                  partition_index: int = 0) -> tuple[int, int]:
    """ListOffsets MAX_TIMESTAMP (-3, KIP-734) of one partition (0 unless told): (timestamp, offset)."""
    partition = TopicPartition(topic, partition_index)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    isolation = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
    found = admin.list_offsets({partition: OffsetSpec.max_timestamp()},
                               isolation_level=isolation)[partition].result(TIMEOUT_S)
    return found.timestamp, found.offset


def produce_max_then_replace(bootstrap: str, topic: str, now: int) -> list[Entry]:
    """a@now+1000 (the largest time), b and c tied at now+500, then a@now+10 replacing a@now+1000, then 14
    fillers of 100 KB at older times: the topic's 1 MiB segment.bytes rolls the segment among them, so a
    pass may compact the first four. Returns the first three entries compaction leaves."""
    for records, at in (([(b"a", b"1")], now + 1_000), ([(b"b", b"1"), (b"c", b"1")], now + 500),
                        ([(b"a", b"2")], now + 10)):
        assert produce(bootstrap, topic, records, at) == [None] * len(records)
    fillers = [(f"f{index}".encode(), bytes(100_000)) for index in range(14)]
    assert produce(bootstrap, topic, fillers, now + 20, step_ms=1) == [None] * len(fillers)
    return [(1, b"b", b"1"), (2, b"c", b"1"), (3, b"a", b"2")]


SIZE_ROLLED = {"segment.bytes": "1048576", "segment.ms": "604800000"}
"""Segments rolled by size only (Kafka 4's minimum segment.bytes): a roll by time would need a head record
later than every record before it, which would then hold the partition's largest timestamp itself."""


def eventually(read: Callable[[], Read], done: Callable[[Read], bool], timeout_s: float) -> Read:
    """``read()`` again until ``done`` holds of what it returns (Kafka's cleaner wakes every 15 s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        entries = read()
        if done(entries) or time.monotonic() > deadline:
            return entries
        time.sleep(1.0)


def latest_per_key(records: Sequence[tuple[bytes | None, bytes | None]]
                   ) -> dict[bytes | None, tuple[int, bytes | None]]:
    """What compaction keeps of ``records`` produced from offset 0: each key's last (offset, value)."""
    latest: dict[bytes | None, tuple[int, bytes | None]] = {}
    for offset, (key, value) in enumerate(records):
        latest[key] = (offset, value)
    return latest
