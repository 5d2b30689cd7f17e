"""Dead-lettering seen from outside: the bundled client on a real broker process with a manual clock.

A delayed record a subscription negatively acknowledges up to ``logwright.dead.letter.max.deliveries``
lands on Pulsar's default ``<topic>-<subscription>-DLQ``, created on first use with the source's partition
count, without its delay headers; InspectCursor then lists it under the partition's ``dead_lettered``.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from logwright.client import Client, Timeout

from .broker_process import BrokerProcess
from .test_dead_letter import headers_of, read_all
from .test_share_groups import check_consistent, setup_topic


def test_a_dead_lettered_record_shows_in_inspect_cursor_and_on_the_auto_created_dlq(
        clock_broker: BrokerProcess) -> None:
    bootstrap, subscription = clock_broker.bootstrap, "audit"
    topic = setup_topic(bootstrap, subscription, 0, partitions=2, **{"logwright.dead.letter.max.deliveries": "2"})
    dlq = f"{topic}-{subscription}-DLQ"
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value=b"late", partition=1, headers=[("logwright.deliver.after.ms", b"500"),
                                                                  ("trace", b"t-1")])
    assert producer.flush(30) == 0

    async def scenario() -> list[dict[str, Any]]:
        client = await Client.connect(bootstrap)
        consumer = await client.subscribe(topic, subscription, initial_position="earliest",
                                          negative_ack_redelivery_delay_ms=1_000)
        with_delay = await client.inspect(subscription, topic)
        assert [entry["dead_lettered"] for entry in with_delay] == [[], []]
        await client.advance_clock(500)
        for expected in (0, 1):
            message = await consumer.receive(timeout=20)
            assert (message.value, message.redelivery_count) == (b"late", expected)
            await consumer.negative_acknowledge(message)
            await client.advance_clock(1_000)
        with pytest.raises(Timeout):
            await consumer.receive(timeout=2)
        cursors = await client.inspect(subscription, topic)
        await client.close()
        return cursors

    cursors = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert cursors[0]["dead_lettered"] == []
    [span] = cursors[1]["dead_lettered"]
    assert {key: span[key] for key in ("first", "last", "delivery_count", "reason", "dead_letter_topic",
                                       "dead_letter_partition", "dead_letter_offset")} == {
        "first": 0, "last": 0, "delivery_count": 2, "reason": "dead letter max deliveries reached",
        "dead_letter_topic": dlq, "dead_letter_partition": 1, "dead_letter_offset": 0}
    described = AdminClient({"bootstrap.servers": bootstrap}).list_topics(dlq, timeout=30).topics[dlq]
    assert len(described.partitions) == 2
    [copy] = read_all(bootstrap, dlq, 1)
    headers = headers_of(copy)
    assert (copy.partition(), copy.value(), headers["trace"]) == (1, b"late", b"t-1")
    assert not any(name.startswith("logwright.deliver.") for name in headers), headers
    check_consistent(clock_broker)



def test_a_copy_that_cannot_be_written_waits_in_inspect_cursor_for_the_groups_deferred_retry_ms(
        clock_broker: BrokerProcess) -> None:
    bootstrap, subscription = clock_broker.bootstrap, "ledger"
    dlq = f"dlq-{uuid.uuid4().hex[:8]}"  # named, so it must exist: it does not yet
    topic = setup_topic(bootstrap, subscription, 1, **{"logwright.dead.letter.max.deliveries": "1",
                                                      "logwright.dead.letter.topic": dlq,
                                                      "logwright.dead.letter.deferred.retry.ms": "2000"})
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.GROUP, subscription)])
    entry = next(iter(described.values())).result(30)["logwright.dead.letter.deferred.retry.ms"]
    assert entry.value == "2000"

    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        client = await Client.connect(bootstrap)
        consumer = await client.subscribe(topic, subscription, initial_position="earliest")
        message = await consumer.receive(timeout=20)
        await consumer.negative_acknowledge(message)  # the limit of 1: archived, but the copy cannot be written
        with pytest.raises(Timeout):
            await consumer.receive(timeout=1)
        waiting = await client.inspect(subscription, topic)
        admin.create_topics([NewTopic(dlq, 1)])[dlq].result(30)
        await client.advance_clock(2_000)
        again = await consumer.receive(timeout=20)
        assert (again.value, again.redelivery_count) == (b"r0", 1)
        await consumer.negative_acknowledge(again)
        with pytest.raises(Timeout):
            await consumer.receive(timeout=1)
        copied = await client.inspect(subscription, topic)
        await client.close()
        return waiting, copied

    waiting, copied = asyncio.run(asyncio.wait_for(scenario(), 120))
    [deferred] = waiting[0]["dead_letter_deferred"]
    assert (deferred["first"], deferred["last"], deferred["delivery_count"], deferred["dead_letter_topic"]) == (
        0, 0, 1, dlq)
    assert "does not exist" in deferred["error"] and deferred["available_at_ms"] == deferred["time_ms"] + 2_000
    assert waiting[0]["dead_lettered"] == []
    assert copied[0]["dead_letter_deferred"] == []
    [span] = copied[0]["dead_lettered"]
    assert (span["first"], span["delivery_count"], span["dead_letter_topic"]) == (0, 2, dlq)
    [copy] = read_all(bootstrap, dlq, 1)
    assert copy.value() == b"r0"
    check_consistent(clock_broker)
