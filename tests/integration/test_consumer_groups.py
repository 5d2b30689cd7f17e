"""Classic consumer groups with real clients: work shared between members, resumed from commits."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import OFFSET_INVALID, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def _topic(bootstrap: str, partitions: int) -> str:
    name = f"group-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions)])[name].result(20)
    return name


def _produce(bootstrap: str, topic: str, count: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for index in range(start, start + count):
        producer.produce(topic, key=str(index).encode(), value=str(index).encode())
    assert producer.flush(30) == 0


def _member(bootstrap: str, group: str, topic: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 6000,
                         "heartbeat.interval.ms": 500})
    consumer.subscribe([topic])
    return consumer


@pytest.mark.differential
def test_two_members_share_four_partitions_then_resume_from_commits(bootstrap: str) -> None:
    topic = _topic(bootstrap, 4)
    group = f"g-{uuid.uuid4().hex[:8]}"
    _produce(bootstrap, topic, 200)
    members = [_member(bootstrap, group, topic), _member(bootstrap, group, topic)]
    values: dict[int, list[int]] = {0: [], 1: []}
    deadline = time.monotonic() + 60
    while sum(len(v) for v in values.values()) < 200 and time.monotonic() < deadline:
        for number, member in enumerate(members):
            message = member.poll(0.1)
            if message is not None and not message.error():
                values[number].append(int(message.value()))
                member.commit(message, asynchronous=False)
    assignments = [{tp.partition for tp in member.assignment()} for member in members]
    for member in members:
        member.close()
    assert sorted(values[0] + values[1]) == list(range(200))
    assert assignments[0] and assignments[1] and not assignments[0] & assignments[1]
    assert assignments[0] | assignments[1] == {0, 1, 2, 3}

    _produce(bootstrap, topic, 20, start=200)
    resumed = _member(bootstrap, group, topic)
    again: list[int] = []
    deadline = time.monotonic() + 60
    while len(again) < 20 and time.monotonic() < deadline:
        message = resumed.poll(0.2)
        if message is not None and not message.error():
            again.append(int(message.value()))
    resumed.close()
    assert sorted(again) == list(range(200, 220))


def test_aiokafka_group_with_manual_commits(bootstrap: str) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    topic = _topic(bootstrap, 2)
    group = f"aio-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[int, int | None]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
        await producer.start()
        for index in range(40):
            await producer.send_and_wait(topic, str(index).encode(), partition=index % 2)
        await producer.stop()
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        seen = 0
        try:
            while seen < 40:
                batches = await asyncio.wait_for(consumer.getmany(timeout_ms=500), 30)
                seen += sum(len(messages) for messages in batches.values())
            await consumer.commit()
            committed = await consumer.committed(TopicPartition(topic, 0))
        finally:
            await consumer.stop()
        return seen, committed

    seen, committed = asyncio.run(scenario())
    assert seen == 40
    assert committed == 20


@pytest.mark.differential
def test_deleting_a_topic_deletes_every_groups_offsets_on_it(bootstrap: str) -> None:
    """Kafka's group coordinator deletes the offsets of a deleted topic's partitions (after the topic, so this
    polls): the topic created again under the same name starts without them, and so does its consumer."""
    topic = _topic(bootstrap, 2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 7)], asynchronous=False)
        assert [tp.offset for tp in consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)],
                                                       timeout=20)] == [5, 7]
        admin.delete_topics([topic])[topic].result(20)
        deadline = time.monotonic() + 30
        while True:  # Kafka creates a topic again only once the deleted one is gone
            try:
                admin.create_topics([NewTopic(topic, 2)])[topic].result(20)
                break
            except KafkaException:
                assert time.monotonic() < deadline, "the topic could not be created again within 30 s"
                time.sleep(0.2)
        deadline = time.monotonic() + 30
        while True:
            committed = [tp.offset for tp in consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)],
                                                                timeout=20)]
            if committed == [OFFSET_INVALID, OFFSET_INVALID] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert committed == [OFFSET_INVALID, OFFSET_INVALID]
    finally:
        consumer.close()
