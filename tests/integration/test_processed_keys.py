"""Consumer-side idempotency (F36) on a real broker process: ``acknowledge(msg, processed_key=...)``.

A subscription with ``logwright.processed.key`` keeps the keys its consumers acknowledged as processed; a record
with such a key — a duplicate another producer wrote, or the same business id later — is acknowledged by the
broker instead of delivered, also after a SIGKILL, until the time-to-live passes on the manual clock.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.client import BrokerError, Client, Consumer, Timeout

from .broker_process import BrokerProcess
from .test_share_groups import advance_clock, check_consistent

TTL_MS = 60_000


def _topic(bootstrap: str, partitions: int = 2) -> str:
    topic = f"processed-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)
    return topic


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes, int]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value, partition in records:
        producer.produce(topic, key=key, value=value, partition=partition)
    assert producer.flush(30) == 0


async def _subscribe(client: Client, topic: str, source: str | None = "record-key") -> Consumer:
    return await client.subscribe(topic, "billing", initial_position="earliest", ack_group_time_ms=0,
                                  processed_key_source=source, processed_keys_ttl_ms=TTL_MS)


async def _values(consumer: Consumer) -> list[bytes]:
    values = []
    while True:
        try:
            message = await consumer.receive(timeout=1.5)
        except Timeout:
            return values
        values.append(message.value or b"")
        await consumer.acknowledge(message)


def test_processed_keys_are_not_delivered_again_across_partitions_and_a_kill(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap)
    _produce(bootstrap, topic, [(b"order-1", b"first", 0)])

    async def process_first() -> None:
        client = await Client.connect(bootstrap)
        consumer = await _subscribe(client, topic)
        message = await consumer.receive(timeout=20)
        assert message.value == b"first"
        await consumer.acknowledge(message, processed_key=b"order-1")
        _produce(bootstrap, topic, [(b"order-1", b"duplicate", 1), (b"order-2", b"other", 0),
                                    (b"order-1", b"again", 0)])
        assert await _values(consumer) == [b"other"], "the processed key is acknowledged by the broker"
        await client.close()

    asyncio.run(process_first())
    clock_broker.kill()
    clock_broker.start()
    _produce(bootstrap, topic, [(b"order-1", b"after the kill", 1), (b"order-3", b"new", 1)])

    async def after_kill() -> list[bytes]:
        client = await Client.connect(bootstrap)
        consumer = await _subscribe(client, topic)
        values = await _values(consumer)
        await client.close()
        return values

    assert asyncio.run(after_kill()) == [b"new"], "processed keys survive a SIGKILL"
    advance_clock(bootstrap, TTL_MS)
    _produce(bootstrap, topic, [(b"order-1", b"after the ttl", 0)])
    assert asyncio.run(after_kill()) == [b"after the ttl"], "forgotten once the time-to-live passed"
    check_consistent(clock_broker)


def test_a_processed_key_needs_the_subscription_to_know_where_keys_are(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, partitions=1)
    _produce(bootstrap, topic, [(b"k", b"v", 0)])

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        consumer = await _subscribe(client, topic, source=None)
        message = await consumer.receive(timeout=20)
        with pytest.raises(BrokerError, match="logwright.processed.key"):
            await consumer.acknowledge(message, processed_key=b"k")
        await consumer.acknowledge(message)
        await client.close()

    asyncio.run(scenario())
