"""Retry letter topics (Pulsar's ``reconsumeLater``) with the bundled client on a manual-clock broker process.

The subscription consumes its topic and its retry topic (one consumer with ``retry_enable``); each
``reconsume_later`` moves the record to the retry topic, delayed on the broker clock, and acknowledges
the original in one WriteBatch; past ``logwright.retry.max.reconsume.times`` the record lands on the
dead-letter topic. A SIGKILL after each move loses and duplicates nothing.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.client import BrokerError, Client, Timeout
from logwright.client.consumer import Consumer, Message
from logwright.compat.errors import ErrorCode

from .broker_process import BrokerProcess
from .test_dead_letter import headers_of, read_all
from .test_share_groups import check_consistent, setup_topic

SUBSCRIPTION = "orders-sub"
DELAY_MS = 1_000


def create_topics(bootstrap: str, *names: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1) for name in names]).values():
        future.result(30)


async def subscribe_with_retry(client: Client, topic: str, retry: str) -> Consumer:
    """One consumer with ``retry_enable``: it reads the topic and its retry letter topic."""
    consumer = await client.subscribe(topic, SUBSCRIPTION, initial_position="earliest", retry_enable=True)
    assert consumer.retry_consumer is not None and consumer.retry_consumer.settings.topic == retry
    return consumer


async def due_after_delay(client: Client, consumer: Consumer) -> Message:
    """The retried copy: absent until the broker clock passed the delay, then delivered."""
    await client.advance_clock(DELAY_MS - 1)
    with pytest.raises(Timeout):
        await consumer.receive(timeout=1.5)
    await client.advance_clock(1)
    return await consumer.receive(timeout=20)


def moved_events(broker: BrokerProcess) -> list[dict[str, object]]:
    """The ``MovedToRetry`` events of the broker's log (read beside the running broker)."""
    command = [sys.executable, "-m", "logwright", "events", "--data-dir", str(broker.data_dir), "--json"]
    listed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    events = [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]
    return [event for event in events if event.get("type") == "MovedToRetry"]


@pytest.mark.parametrize("kill_between", [False, True], ids=["steady", "sigkill-between-moves"])
def test_reconsume_later_twice_then_the_dead_letter_topic(clock_broker: BrokerProcess, kill_between: bool) -> None:
    bootstrap = clock_broker.bootstrap
    topic = setup_topic(bootstrap, SUBSCRIPTION, 1, **{"logwright.retry.max.reconsume.times": "2"})
    retry, dlq = f"{topic}-{SUBSCRIPTION}-RETRY", f"{topic}-{SUBSCRIPTION}-DLQ"
    create_topics(bootstrap, retry, dlq)
    seen: list[dict[str, bytes | None]] = []
    moves: list[tuple[str, int, bool]] = []

    async def step(number: int) -> None:
        client = await Client.connect(bootstrap)
        consumer = await subscribe_with_retry(client, topic, retry)
        message = await (consumer.receive(timeout=20) if number == 0 else due_after_delay(client, consumer))
        assert (message.topic, message.value) == (topic if number == 0 else retry, b"r0")
        if number:
            seen.append(dict(message.headers))
        moved = await consumer.reconsume_later(message, DELAY_MS)
        moves.append((moved.topic, moved.reconsume_times, moved.dead_lettered))
        with pytest.raises(BrokerError) as refused:  # no longer held: acknowledged with the move
            await consumer.reconsume_later(message, DELAY_MS)
        assert refused.value.code == ErrorCode.INVALID_RECORD_STATE
        await client.close()

    for number in range(3):
        asyncio.run(asyncio.wait_for(step(number), 120))
        if kill_between:
            clock_broker.kill()
            clock_broker.start()

    assert moves == [(retry, 1, False), (retry, 2, False), (dlq, 3, True)]
    origin = f"{topic}-0@0".encode()
    assert [(h["RECONSUMETIMES"], h["DELAY_TIME"], h["REAL_TOPIC"], h["ORIGIN_MESSAGE_ID"],
             h["logwright.deliver.after.ms"]) for h in seen] == [
        (b"1", b"1000", topic.encode(), origin, b"1000"), (b"2", b"1000", topic.encode(), origin, b"1000")]

    async def drained() -> None:
        client = await Client.connect(bootstrap)
        consumer = await subscribe_with_retry(client, topic, retry)
        await client.advance_clock(60_000)
        with pytest.raises(Timeout):
            await consumer.receive(timeout=2)
        for name in (topic, retry):
            for partition in await client.inspect(SUBSCRIPTION, name):
                assert partition["in_flight"] == [] and partition["redeliveries"] == [], partition
                assert partition["mark_delete_position"] == partition["log_end_offset"] - 1, partition
        await client.close()

    asyncio.run(asyncio.wait_for(drained(), 120))
    copies = read_all(bootstrap, retry, 2)
    assert [headers_of(m)["RECONSUMETIMES"] for m in copies] == [b"1", b"2"]
    dead = read_all(bootstrap, dlq, 1)
    assert len(dead) == 1 and dead[0].value() == b"r0"
    headers = headers_of(dead[0])
    assert (headers["RECONSUMETIMES"], headers["REAL_TOPIC"], headers["ORIGIN_MESSAGE_ID"]) == (
        b"3", topic.encode(), origin)
    assert [(e["offset"], e["reconsume_times"], e["retry_topic"]) for e in moved_events(clock_broker)] == [
        (0, 1, retry), (0, 2, retry)]
    check_consistent(clock_broker)


def test_a_retried_record_is_acknowledged_through_the_same_consumer(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = setup_topic(bootstrap, SUBSCRIPTION, 1)
    retry = f"{topic}-{SUBSCRIPTION}-RETRY"
    create_topics(bootstrap, retry)

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        consumer = await subscribe_with_retry(client, topic, retry)
        original = await consumer.receive(timeout=20)
        assert (await consumer.reconsume_later(original, 0)).topic == retry  # no delay: due at once
        copy = await consumer.receive(timeout=20)
        assert (copy.topic, copy.value, dict(copy.headers)["RECONSUMETIMES"]) == (retry, b"r0", b"1")
        await consumer.acknowledge(copy)
        [partition] = await client.inspect(SUBSCRIPTION, retry)
        assert (partition["mark_delete_position"], partition["in_flight"]) == (0, [])
        await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))


@pytest.mark.parametrize("legacy", [False, True], ids=["default", "legacy"])
def test_default_retry_and_dead_letter_topics_are_created_on_first_use_unless_the_legacy_ones_exist(
        clock_broker: BrokerProcess, legacy: bool) -> None:
    """Without names, ``<topic>-<subscription>-RETRY`` and ``-DLQ`` are created on first use; when
    ``<subscription>-RETRY`` and ``<subscription>-DLQ`` exist (Pulsar's names before the topic-qualified ones, taken
    by its client when they exist) the consumer reads that retry topic, the moves go there and then to that
    dead-letter topic, and neither default topic is created."""
    bootstrap = clock_broker.bootstrap
    topic = setup_topic(bootstrap, SUBSCRIPTION, 1, **{"logwright.retry.max.reconsume.times": "1"})
    default_retry, default_dlq = f"{topic}-{SUBSCRIPTION}-RETRY", f"{topic}-{SUBSCRIPTION}-DLQ"
    retry, dlq = (f"{SUBSCRIPTION}-RETRY", f"{SUBSCRIPTION}-DLQ") if legacy else (default_retry, default_dlq)
    if legacy:
        create_topics(bootstrap, retry, dlq)

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        consumer = await subscribe_with_retry(client, topic, retry)  # a default retry topic created by subscribing
        original = await consumer.receive(timeout=20)
        assert (await consumer.reconsume_later(original, 0)).topic == retry
        copy = await consumer.receive(timeout=20)
        moved = await consumer.reconsume_later(copy, 0)
        assert (moved.topic, moved.reconsume_times, moved.dead_lettered) == (dlq, 2, True)
        await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
    [dead] = read_all(bootstrap, dlq, 1)
    assert (dead.value(), headers_of(dead)["RECONSUMETIMES"], headers_of(dead)["REAL_TOPIC"]) == (
        b"r0", b"2", topic.encode())
    listed = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics
    assert (default_retry in listed, default_dlq in listed) == (not legacy, not legacy)
    check_consistent(clock_broker)
