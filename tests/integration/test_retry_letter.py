"""Retry letter topics (Pulsar's ``reconsumeLater``) with the bundled client on a manual-clock broker process.

The subscription consumes its topic and its retry topic (one consumer each, same subscription); each
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


async def subscribe_both(client: Client, topic: str, retry: str) -> tuple[Consumer, Consumer]:
    main = await client.subscribe(topic, SUBSCRIPTION, initial_position="earliest")
    retried = await client.subscribe(retry, SUBSCRIPTION, initial_position="earliest")
    return main, retried


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
        main, retried = await subscribe_both(client, topic, retry)
        if number == 0:
            message = await main.receive(timeout=20)
            assert message.value == b"r0"
        else:
            message = await due_after_delay(client, retried)
            assert message.value == b"r0"
            seen.append(dict(message.headers))
        moved = await (main if number == 0 else retried).reconsume_later(message, DELAY_MS)
        moves.append((moved.topic, moved.reconsume_times, moved.dead_lettered))
        with pytest.raises(BrokerError) as refused:  # no longer held: acknowledged with the move
            await (main if number == 0 else retried).reconsume_later(message, DELAY_MS)
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
        main, retried = await subscribe_both(client, topic, retry)
        await client.advance_clock(60_000)
        for consumer in (main, retried):
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
