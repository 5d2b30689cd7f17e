"""The produce and consume workloads, run by librdkafka (confluent-kafka) against any bootstrap address.

Both sides are timed from the client: produce from the first ``produce()`` call to the end of ``flush()``
(every record acknowledged with ``acks=all``), consume from ``assign()`` at the start of the full topic to
the last record in hand. Consumption assigns the partition instead of joining a group, so the figure is
fetch throughput rather than group coordination. A workload that loses or fails a record raises: a fast
wrong answer is not a result.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Measurement:
    """``records`` of ``record_bytes`` value bytes moved in ``seconds`` (wall clock, client side)."""

    records: int
    record_bytes: int
    seconds: float

    @property
    def msg_per_s(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.records * self.record_bytes / self.seconds / 1e6


PRODUCER_CONFIG = {"acks": "all", "linger.ms": 5, "compression.type": "none",
                   "enable.idempotence": False, "queue.buffering.max.messages": 500_000}
"""librdkafka defaults otherwise (batch.size 1 MB): what an application gets without tuning."""

LIBRDKAFKA_PREFETCH_DEFAULTS = {"queued.min.messages": 100_000, "fetch.queue.backoff.ms": 1_000}
"""librdkafka's own prefetch settings: once a partition's prefetch queue holds ``queued.min.messages``
records, the next Fetch for it is put off by ``fetch.queue.backoff.ms``, and not cut short when the
application drains the queue. A broker that answers faster than the application reads (logwright with 200 B
records, Apache Kafka too when the reading loop is slower) then idles a whole second per 100,000 records, so
a consume figure taken with these defaults counts those seconds, not the broker (issue 18)."""

CONSUMER_CONFIG = {"enable.auto.commit": False, "fetch.max.bytes": 52_428_800,
                   "max.partition.fetch.bytes": 1_048_576, "fetch.queue.backoff.ms": 10}
"""librdkafka defaults but for the prefetch back-off (10 ms instead of 1 s): the prefetch queue stays bounded
by ``queued.min.messages`` while a full queue no longer stalls the reader for a second (see
``LIBRDKAFKA_PREFETCH_DEFAULTS``). ``throughput.py`` measures the defaults as well, side by side."""


def librdkafka_version() -> str:
    """The librdkafka inside confluent-kafka, for the reports."""
    import confluent_kafka  # noqa: PLC0415

    return str(confluent_kafka.libversion()[0])


def create_topic(bootstrap: str, prefix: str, partitions: int = 1) -> str:
    """A fresh topic (a unique name per run, so repeats never read each other's records)."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30).values():
        future.result(timeout=60)
    return name


def delete_topic(bootstrap: str, topic: str) -> None:
    """Free the broker's memory or disk between repeats; a peer that cannot delete keeps the topic."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        try:
            future.result(timeout=60)
        except Exception:  # noqa: BLE001 - not part of what is measured
            pass


def produce(bootstrap: str, topic: str, records: int, record_bytes: int,
            config: dict[str, object] | None = None, value: bytes | None = None,
            keys: Sequence[bytes] | None = None) -> Measurement:
    """Send ``records`` values of ``record_bytes`` and wait until all are acknowledged; ``config`` adds
    producer settings, ``value`` replaces the zero bytes (it should be ``record_bytes`` long: the figures
    count that size). Null keys by default: librdkafka's sticky partitioner sends each batch to one partition
    for ``sticky.partitioning.linger.ms``, so a short run fills only a few partitions of a big topic. Record
    ``i`` gets ``keys[i % len(keys)]`` when given (made before the clock starts), hashed to its partition."""
    failures: list[KafkaError] = []
    acked = 0

    def delivered(error: KafkaError | None, _message: Message) -> None:
        nonlocal acked
        if error is not None:
            failures.append(error)
        else:
            acked += 1

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG, **(config or {})})
    producer.list_topics(topic, timeout=30)
    value = bytes(record_bytes) if value is None else value
    send = producer.produce
    started = time.perf_counter()
    for index in range(records):
        key = keys[index % len(keys)] if keys else None
        while True:
            try:
                send(topic, value, key, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
    remaining = producer.flush(120)
    seconds = time.perf_counter() - started
    if failures or remaining or acked != records:
        first = failures[0] if failures else None
        raise RuntimeError(f"produce to {topic}: {acked}/{records} acked, {len(failures)} failed "
                           f"({first}), {remaining} unsent")
    return Measurement(records, record_bytes, seconds)


def consume(bootstrap: str, topic: str, records: int, record_bytes: int, idle_timeout_s: float = 30.0,
            partitions: int = 1, config: dict[str, object] | None = None,
            start: int = OFFSET_BEGINNING) -> Measurement:
    """Read ``records`` records from the start of partitions 0 to ``partitions - 1``; fails if the stream
    stalls or errs. ``config`` overrides ``CONSUMER_CONFIG``. ``start`` is librdkafka's OFFSET_BEGINNING,
    which it resolves with one ListOffsets request per partition before fetching it, or an offset (0 on a
    fresh topic), which it fetches at once, as a consumer resuming from committed offsets does."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
                         **CONSUMER_CONFIG, **(config or {})})
    try:
        consumer.list_topics(topic, timeout=30)
        received = 0
        started = time.perf_counter()
        consumer.assign([TopicPartition(topic, partition, start) for partition in range(partitions)])
        last_progress = started
        while received < records:
            # consume(n, t) waits for n records or t: asking for more than remain would add up to t to the figure
            batch = consumer.consume(min(10_000, records - received), 1.0)
            now = time.perf_counter()
            if not batch:
                if now - last_progress > idle_timeout_s:
                    raise RuntimeError(f"consume {topic}: stalled at {received}/{records}")
                continue
            for message in batch:
                error = message.error()
                if error is None:
                    received += 1
                elif error.code() != KafkaError._PARTITION_EOF:
                    raise RuntimeError(f"consume {topic}: {error}")
            last_progress = now
        seconds = time.perf_counter() - started
    finally:
        consumer.close()
    return Measurement(received, record_bytes, seconds)


def produce_then_consume(bootstrap: str, record_bytes: int, records: int, prefix: str = "bench",
                         consumer_configs: tuple[dict[str, object], ...] = ({},)
                         ) -> tuple[Measurement, ...]:
    """Fill a fresh one-partition topic, read it back from offset 0 once per consumer config (each a fresh
    consumer, overriding ``CONSUMER_CONFIG``), delete it: (produced, consumed, ...)."""
    topic = create_topic(bootstrap, f"{prefix}-{record_bytes}")
    try:
        produced = produce(bootstrap, topic, records, record_bytes)
        return produced, *(consume(bootstrap, topic, records, record_bytes, config=config)
                           for config in consumer_configs)
    finally:
        delete_topic(bootstrap, topic)
