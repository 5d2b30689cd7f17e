"""The bundled client's Reader (Pulsar's Reader over Kafka offsets, F35) on a real broker: every start kind, one
partition or all, has_message_available, seek, a restart from a stored id, and transactions left out as aborted."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.client import Client, ClientError, MessageId, PublishTime, Reader, Timeout


def _topic(bootstrap: str, partitions: int = 1) -> str:
    topic = f"reader-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)
    return topic


def _produce(bootstrap: str, topic: str, values: list[str], partition: int = 0, timestamp: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value=value.encode(), partition=partition, timestamp=timestamp)
    assert producer.flush(30) == 0


def _with_client(bootstrap: str, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        client = await Client.connect(bootstrap)
        try:
            return await body(client)
        finally:
            await client.close()
    return asyncio.run(run())


async def _drain(reader: Reader) -> list[tuple[int, int, str]]:
    read = []
    while await reader.has_message_available():
        message = await reader.read_next(timeout=10)
        read.append((message.partition, message.offset, (message.value or b"").decode()))
    return read


@pytest.mark.differential
def test_each_start_kind_on_one_partition(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    _produce(bootstrap, topic, [f"m{n}" for n in range(5)], timestamp=1_000)
    _produce(bootstrap, topic, [f"m{n}" for n in range(5, 10)], timestamp=2_000)

    async def body(client: Client) -> None:
        values = lambda read: [value for _, _, value in read]  # noqa: E731
        assert values(await _drain(await client.create_reader(topic, "earliest"))) == [f"m{n}" for n in range(10)]
        assert values(await _drain(await client.create_reader(topic, MessageId(0, 4)))) == [
            f"m{n}" for n in range(5, 10)], "a start id is exclusive, as in Pulsar"
        inclusive = await client.create_reader(topic, MessageId(0, 4), start_inclusive=True)
        assert values(await _drain(inclusive)) == [f"m{n}" for n in range(4, 10)]
        assert values(await _drain(await client.create_reader(topic, 7, partition=0))) == ["m8", "m9"]
        assert values(await _drain(await client.create_reader(topic, PublishTime(1_500)))) == [
            f"m{n}" for n in range(5, 10)]
        assert values(await _drain(await client.create_reader(topic, PublishTime(9_000)))) == []

        latest = await client.create_reader(topic, "latest")
        assert not await latest.has_message_available()
        with pytest.raises(Timeout):
            await latest.read_next(timeout=0.3)
        _produce(bootstrap, topic, ["m10"])
        message = await latest.read_next(timeout=10)
        assert (message.offset, message.value) == (10, b"m10")

        await latest.seek(MessageId(0, 1))
        assert values(await _drain(latest))[:2] == ["m2", "m3"]
        await latest.seek("earliest")
        assert (await latest.read_next(timeout=10)).value == b"m0"

    _with_client(bootstrap, body)


def test_a_restarted_reader_resumes_from_the_stored_id_without_gaps_or_duplicates(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    _produce(bootstrap, topic, [f"m{n}" for n in range(10)])

    async def first(client: Client) -> MessageId:
        reader = await client.create_reader(topic, "earliest")
        for _ in range(4):
            message = await reader.read_next(timeout=10)
        return MessageId(message.partition, message.offset)

    stored = _with_client(bootstrap, first)

    async def second(client: Client) -> list[tuple[int, int, str]]:
        return await _drain(await client.create_reader(topic, stored))

    assert [offset for _, offset, _ in _with_client(bootstrap, second)] == list(range(4, 10))


def test_across_partitions_each_in_order_and_one_partition_alone(bootstrap: str) -> None:
    topic = _topic(bootstrap, partitions=3)
    for partition in range(3):
        _produce(bootstrap, topic, [f"p{partition}-{n}" for n in range(4)], partition=partition)

    async def body(client: Client) -> None:
        read = await _drain(await client.create_reader(topic))
        assert sorted(read) == [(p, n, f"p{p}-{n}") for p in range(3) for n in range(4)]
        for partition in range(3):
            offsets = [offset for p, offset, _ in read if p == partition]
            assert offsets == sorted(offsets)
        alone = await client.create_reader(topic, "earliest", partition=2)
        assert [value for _, _, value in await _drain(alone)] == [f"p2-{n}" for n in range(4)]
        by_partition = await client.create_reader(topic, {0: 2, 2: 0})
        assert sorted(await _drain(by_partition)) == [(0, 3, "p0-3"), *((1, n, f"p1-{n}") for n in range(4)),
                                                      (2, 1, "p2-1"), (2, 2, "p2-2"), (2, 3, "p2-3")]
        with pytest.raises(ClientError, match="no partition 3"):
            await client.create_reader(topic, partition=3)
        with pytest.raises(ClientError, match="start position"):
            await client.create_reader(topic, "oldest")

    _with_client(bootstrap, body)


def test_aborted_transactions_and_their_markers_are_left_out(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    _produce(bootstrap, topic, ["before"])
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"reader-{uuid.uuid4().hex[:6]}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"aborted-1")
    producer.produce(topic, value=b"aborted-2")
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"committed")
    producer.commit_transaction(30)
    _produce(bootstrap, topic, ["after"])

    async def body(client: Client) -> list[str]:
        return [value for _, _, value in await _drain(await client.create_reader(topic))]

    assert _with_client(bootstrap, body) == ["before", "committed", "after"]
