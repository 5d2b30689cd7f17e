"""Delayed delivery (``logwright.deliver.after.ms`` / ``logwright.deliver.at.ms``) with real clients.

A manual-clock broker process: confluent-kafka produces with the header, a `ShareConsumer` must not get
the record before its time on the broker clock and gets it after; a classic consumer sees it at once;
the delay survives a broker kill; records behind a delayed one are not held up by it.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from logwright.client import Client, Timeout

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .test_share_groups import advance_clock, check_consistent, commit, consumer, poll_batch, share_broker

__all__ = ["share_broker"]  # the fixture, used by name


def _produce(bootstrap: str, topic: str, records: list[tuple[str, list[tuple[str, bytes]]]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50})
    for value, headers in records:
        producer.produce(topic, value=value.encode(), headers=headers)
    assert producer.flush(30) == 0


def _inspect(bootstrap: str, group: str, topic: str) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        client = await Client.connect(bootstrap)
        try:
            return (await client.inspect(group, topic))[0]
        finally:
            await client.close()
    return asyncio.run(run())


def _new_topic(bootstrap: str, group: str, mode: str | None = None) -> str:
    topic = f"delayed-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the topic exists
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    configs = {"share.auto.offset.reset": "earliest"}
    if mode is not None:
        configs["logwright.subscription.mode"] = mode
    set_group_configs(bootstrap, group, configs)
    return topic


def _values_seen_by_a_classic_consumer(bootstrap: str, topic: str, count: int) -> list[str]:
    classic = Consumer({"bootstrap.servers": bootstrap, "group.id": f"classic-{uuid.uuid4().hex[:6]}",
                        "auto.offset.reset": "earliest"})
    classic.subscribe([topic])
    values: list[str] = []
    for _ in range(60):
        message = classic.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value().decode())
        if len(values) == count:
            break
    classic.close()
    return values


def test_a_delayed_record_waits_for_broker_time_and_survives_a_restart(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "delayed-share-group"
    topic = _new_topic(bootstrap, group)
    _produce(bootstrap, topic, [("now-0", []), ("later", [("logwright.deliver.after.ms", b"3000")]),
                                ("now-2", [])])
    assert _values_seen_by_a_classic_consumer(bootstrap, topic, 3) == ["now-0", "later", "now-2"]

    share = consumer(bootstrap, group, topic)
    batch = poll_batch(share)
    assert [(m.offset(), m.value()) for m in batch] == [(0, b"now-0"), (2, b"now-2")], "behind a delayed record"
    for message in batch:
        share.acknowledge(message)
    assert commit(share) == {(topic, 0): None}
    assert poll_batch(share, timeout_s=2) == []
    partition = _inspect(bootstrap, group, topic)
    assert [entry["offset"] for entry in partition["delayed"]] == [1]
    assert partition["mark_delete_position"] == 0, "the cursor went past a delayed record"
    advance_clock(bootstrap, 2999)
    assert poll_batch(share, timeout_s=2) == []
    share.close()

    share_broker.kill()
    share_broker.start()
    assert [entry["offset"] for entry in _inspect(bootstrap, group, topic)["delayed"]] == [1]
    after = consumer(bootstrap, group, topic)
    assert poll_batch(after, timeout_s=2) == [], "the delay was lost in the restart"
    advance_clock(bootstrap, 1)
    batch = poll_batch(after)
    assert [(m.offset(), m.value(), m.delivery_count()) for m in batch] == [(1, b"later", 1)]
    after.acknowledge(batch[0])
    assert commit(after) == {(topic, 0): None}
    assert _inspect(bootstrap, group, topic)["delayed"] == []
    after.close()
    check_consistent(share_broker)


def test_deliver_at_and_invalid_values(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "delayed-at-group"
    topic = _new_topic(bootstrap, group)
    now = advance_clock(bootstrap, 0)
    _produce(bootstrap, topic, [
        ("at", [("logwright.deliver.at.ms", str(now + 5000).encode())]),
        ("negative", [("logwright.deliver.after.ms", b"-5000")]),
        ("words", [("logwright.deliver.after.ms", b"soon")]),
        ("past", [("logwright.deliver.at.ms", str(now - 1).encode())]),
    ])
    share = consumer(bootstrap, group, topic)
    batch = poll_batch(share)
    assert [m.value() for m in batch] == [b"negative", b"words", b"past"], "invalid values deliver at once"
    for message in batch:
        share.acknowledge(message)
    assert commit(share) == {(topic, 0): None}
    advance_clock(bootstrap, 4999)
    assert poll_batch(share, timeout_s=2) == []
    advance_clock(bootstrap, 1)
    assert [m.value() for m in poll_batch(share)] == [b"at"]
    share.close()
    check_consistent(share_broker)


def test_an_exclusive_subscription_delivers_at_once(share_broker: BrokerProcess) -> None:
    """Pulsar's Exclusive and Failover ignore the delay; so do logwright's (they acknowledge cumulatively)."""
    bootstrap, group = share_broker.bootstrap, "delayed-exclusive-group"
    topic = _new_topic(bootstrap, group, mode="exclusive")
    _produce(bootstrap, topic, [("later", [("logwright.deliver.after.ms", b"60000")]), ("now", [])])
    share = consumer(bootstrap, group, topic)
    batch = poll_batch(share)
    assert [m.value() for m in batch] == [b"later", b"now"]
    share.close()


def test_a_shared_subscription_of_the_bundled_client_waits_too(share_broker: BrokerProcess) -> None:
    bootstrap = share_broker.bootstrap
    topic = _new_topic(bootstrap, "delayed-client-group")
    _produce(bootstrap, topic, [("later", [("logwright.deliver.after.ms", b"10000")])])

    async def run() -> bytes | None:
        client = await Client.connect(bootstrap)
        try:
            subscription = await client.subscribe(topic, "delayed-client-group", initial_position="earliest")
            with pytest.raises(Timeout):
                await subscription.receive(timeout=2)
            await client.advance_clock(10_000)
            message = await subscription.receive(timeout=20)
            await subscription.acknowledge(message)
            return message.value
        finally:
            await client.close()

    assert asyncio.run(run()) == b"later"


def test_disabling_the_plugin_delivers_delayed_records_at_once(tmp_path: Path) -> None:
    """``plugins.disabled=delayed_delivery``: no index is written, nothing is held back, the topic config is
    unknown; the data directory opens again with the plugin on, and a record produced then waits as usual."""
    broker = BrokerProcess(tmp_path / "data", manual_clock=True, disabled=("delayed_delivery",)).start()
    try:
        bootstrap, group = broker.bootstrap, "delayed-disabled-group"
        topic = _new_topic(bootstrap, group)
        _produce(bootstrap, topic, [("later", [("logwright.deliver.after.ms", b"60000")]), ("now", [])])
        share = consumer(bootstrap, group, topic)
        batch = poll_batch(share)
        assert [m.value() for m in batch] == [b"later", b"now"], "held back with the plugin disabled"
        for message in batch:
            share.acknowledge(message)
        assert commit(share) == {(topic, 0): None}
        share.close()
        assert _inspect(bootstrap, group, topic)["delayed"] == []
        admin = AdminClient({"bootstrap.servers": bootstrap})
        entry = ConfigEntry("logwright.delayed.delivery.compressed.enable", "true",
                            incremental_operation=AlterConfigOpType.SET)
        resource = ConfigResource("topic", topic, incremental_configs=[entry])
        with pytest.raises(KafkaException, match="INVALID_CONFIG"):
            admin.incremental_alter_configs([resource])[resource].result(30)
        assert broker.stop() == 0, broker.log_tail()

        broker = BrokerProcess(tmp_path / "data", port=broker.port, manual_clock=True).start()
        _produce(bootstrap, topic, [("later-again", [("logwright.deliver.after.ms", b"1000")])])
        share = consumer(bootstrap, group, topic)
        assert poll_batch(share, timeout_s=2) == []
        advance_clock(bootstrap, 1000)
        assert [m.value() for m in poll_batch(share)] == [b"later-again"]
        share.close()
        check_consistent(broker)
    finally:
        broker.kill()


def test_large_records_numbered_in_their_request_frame_keep_their_delay_and_offsets(share_broker: BrokerProcess
                                                                                    ) -> None:
    """Three 200 KB records in one batch: a Produce frame of 600 KB, whose batch the broker numbers in the frame
    itself (`record_batch.numbered`) and whose headers the plugin walks there. A classic consumer reads the batch
    file, a share consumer the tail cache's copy; after a restart both read the stored batch."""
    bootstrap, group = share_broker.bootstrap, "delayed-large-group"
    topic = _new_topic(bootstrap, group)
    _produce(bootstrap, topic, [("small", [])])  # the large batch is numbered from 1, not 0
    values = [bytes([65 + index]) * 200_000 for index in range(3)]
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200})
    for index, value in enumerate(values):
        producer.produce(topic, value=value, headers=[("logwright.deliver.after.ms", b"5000")] if index == 1 else [])
    assert producer.flush(30) == 0
    expected = [b"small", *values]
    classic = Consumer({"bootstrap.servers": bootstrap, "group.id": f"classic-{uuid.uuid4().hex[:6]}",
                        "auto.offset.reset": "earliest"})
    classic.subscribe([topic])
    seen: list[tuple[int, bytes]] = []
    for _ in range(60):
        message = classic.poll(0.5)
        if message is not None and message.error() is None:
            seen.append((message.offset(), message.value()))
        if len(seen) == 4:
            break
    classic.close()
    assert seen == list(enumerate(expected))

    share = consumer(bootstrap, group, topic)
    taken: list[tuple[int, bytes]] = []
    while len(taken) < 3:
        batch = poll_batch(share)
        assert batch, f"only {taken} arrived"
        for message in batch:
            taken.append((message.offset(), message.value()))
            share.acknowledge(message)
    assert taken == [(0, b"small"), (1, values[0]), (3, values[2])], "the delayed record went early"
    assert commit(share) == {(topic, 0): None}
    assert [entry["offset"] for entry in _inspect(bootstrap, group, topic)["delayed"]] == [2]
    share.close()

    share_broker.kill()
    share_broker.start()
    advance_clock(bootstrap, 5000)
    after = consumer(bootstrap, group, topic)
    batch = poll_batch(after)
    assert [(m.offset(), m.value()) for m in batch] == [(2, values[1])]
    after.acknowledge(batch[0])
    assert commit(after) == {(topic, 0): None}
    after.close()
    check_consistent(share_broker)
