"""Redelivery backoff policies as group configs, with confluent-kafka's `ShareConsumer` on a manual-clock broker.

Kafka has no backoff: with the default policy (``none``) a RELEASE is available again at once. With
``logwright.redelivery.backoff.policy`` set, RELEASE, lock expiry and a broker restart in between all
follow the policy for the persisted delivery count. Time only moves when the test advances the broker's
clock, so "not 1 ms before" is checked exactly; the empty polls wait a little wall time to be sure.
Logwright's own configs: ``clock_broker`` skips the file ``--against kafka`` (Kafka has no backoff).
"""

from __future__ import annotations

import asyncio

import pytest
from confluent_kafka import AcknowledgeType, KafkaError, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from logwright.client import Client, Timeout

from .broker_process import BrokerProcess
from .test_share_groups import LOCK_MS, advance_clock, check_consistent, commit, consumer, poll_batch, setup_topic

QUIET_S = 2.0
"""Wall time an empty poll waits for a record that must not come (the broker clock is stopped meanwhile)."""

MULTIPLIER = {"logwright.redelivery.backoff.policy": "multiplier", "logwright.redelivery.backoff.min.ms": "1000",
              "logwright.redelivery.backoff.max.ms": "60000", "logwright.redelivery.backoff.multiplier": "2"}


def release_once(share: ShareConsumer, topic: str, expected_count: int) -> None:
    """Poll the one record, check its delivery count and RELEASE it."""
    batch = poll_batch(share)
    assert [(m.offset(), m.delivery_count()) for m in batch] == [(0, expected_count)]
    share.acknowledge(batch[0], AcknowledgeType.RELEASE)
    assert commit(share) == {(topic, 0): None}


def comes_back_after(bootstrap: str, share: ShareConsumer, delay_ms: int) -> None:
    """Nothing at ``delay_ms - 1`` of broker time; the record is there once the last millisecond passes."""
    advance_clock(bootstrap, delay_ms - 1)
    assert poll_batch(share, QUIET_S) == [], f"redelivered before its {delay_ms} ms backoff"
    advance_clock(bootstrap, 1)


def test_release_backs_off_1_2_4_seconds_and_keeps_growing_across_a_restart(clock_broker: BrokerProcess) -> None:
    bootstrap, group = clock_broker.bootstrap, "backoff-multiplier"
    topic = setup_topic(bootstrap, group, 1, **MULTIPLIER)
    share = consumer(bootstrap, group, topic)
    release_once(share, topic, 1)
    comes_back_after(bootstrap, share, 1_000)
    release_once(share, topic, 2)
    comes_back_after(bootstrap, share, 2_000)
    release_once(share, topic, 3)
    share.close()
    clock_broker.kill()  # the record waits 4 s; the count of 3 and its due time are in the event log
    clock_broker.start()
    after = consumer(bootstrap, group, topic)
    comes_back_after(bootstrap, after, 4_000)
    release_once(after, topic, 4)
    comes_back_after(bootstrap, after, 8_000)
    batch = poll_batch(after)
    assert [(m.offset(), m.delivery_count()) for m in batch] == [(0, 5)]
    after.acknowledge(batch[0])
    assert commit(after) == {(topic, 0): None}
    after.close()
    check_consistent(clock_broker)


def test_the_level_table_and_lock_expiry(clock_broker: BrokerProcess) -> None:
    bootstrap, group = clock_broker.bootstrap, "backoff-levels"
    topic = setup_topic(bootstrap, group, 1, **{"logwright.redelivery.backoff.policy": "levels",
                                                "share.record.lock.duration.ms": str(LOCK_MS)})
    holder = consumer(bootstrap, group, topic)
    batch = poll_batch(holder)
    assert [(m.offset(), m.delivery_count()) for m in batch] == [(0, 1)]
    advance_clock(bootstrap, LOCK_MS)  # the lock runs out: the first level (1 s) applies
    other = consumer(bootstrap, group, topic)
    comes_back_after(bootstrap, other, 1_000)
    release_once(other, topic, 2)  # the second level: 5 s
    comes_back_after(bootstrap, other, 5_000)
    batch = poll_batch(other)
    assert [(m.offset(), m.delivery_count()) for m in batch] == [(0, 3)]
    other.acknowledge(batch[0])
    assert commit(other) == {(topic, 0): None}
    holder.close()
    other.close()
    check_consistent(clock_broker)


def test_without_a_policy_a_release_comes_back_at_once_as_in_kafka(clock_broker: BrokerProcess) -> None:
    bootstrap, group = clock_broker.bootstrap, "backoff-none"
    topic = setup_topic(bootstrap, group, 1)
    share = consumer(bootstrap, group, topic)
    release_once(share, topic, 1)
    release_once(share, topic, 2)  # no clock advance needed
    share.close()
    check_consistent(clock_broker)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("logwright.redelivery.backoff.policy", "exponential", "must be one of none, fixed, multiplier, levels"),
    ("logwright.redelivery.backoff.delay.ms", "-1", "at least 100 ms"),
    ("logwright.redelivery.backoff.max.ms", "50", "below the minimum"),
    ("logwright.redelivery.backoff.multiplier", "0.5", "at least 1.0"),
    ("logwright.redelivery.backoff.levels", "1s 5x", "not a whole number with a unit"),
    ("logwright.redelivery.backoff.min.ms", "700000", "is above the maximum"),
])
def test_bad_backoff_configs_get_invalid_config_with_a_message(clock_broker: BrokerProcess, key: str, value: str,
                                                               message: str) -> None:
    admin = AdminClient({"bootstrap.servers": clock_broker.bootstrap})
    entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.GROUP, "backoff-configs", incremental_configs=[entry])
    with pytest.raises(Exception) as refused:
        admin.incremental_alter_configs([resource])[resource].result(30)
    error = refused.value.args[0]
    assert error.code() == KafkaError.INVALID_CONFIG and key in error.str() and message in error.str()


def test_a_logwright_subscription_backs_off_after_an_ack_timeout_and_an_explicit_nack_delay_wins(
        clock_broker: BrokerProcess) -> None:
    bootstrap, subscription = clock_broker.bootstrap, "backoff-subscription"
    topic = setup_topic(bootstrap, subscription, 1, **{"logwright.redelivery.backoff.policy": "levels",
                                                       "logwright.redelivery.backoff.levels": "2s 7s"})

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        consumer = await client.subscribe(topic, subscription, initial_position="earliest", ack_timeout_ms=LOCK_MS,
                                          negative_ack_redelivery_delay_ms=30_000)
        first = await consumer.receive(timeout=30)
        assert (first.offset, first.redelivery_count) == (0, 0)
        now = await client.advance_clock(LOCK_MS)  # never acknowledged: the ack timeout uses the first level
        [cursor] = await client.inspect(subscription, topic)
        assert [(r["delivery_count"], r["available_at_ms"] - now) for r in cursor["redeliveries"]] == [(1, 2_000)]
        await client.advance_clock(1_999)
        with pytest.raises(Timeout):
            await consumer.receive(timeout=QUIET_S)
        await client.advance_clock(1)
        again = await consumer.receive(timeout=30)
        assert (again.offset, again.redelivery_count) == (0, 1)
        now = await client.advance_clock(0)
        await consumer.negative_acknowledge(again)  # the consumer's own 30 s, not the second level's 7 s
        [cursor] = await client.inspect(subscription, topic)
        assert [(r["delivery_count"], r["available_at_ms"] - now) for r in cursor["redeliveries"]] == [(2, 30_000)]
        await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
    check_consistent(clock_broker)


def test_the_bundled_client_asks_for_no_delay_by_default_so_the_group_policy_applies(
        clock_broker: BrokerProcess) -> None:
    bootstrap, subscription = clock_broker.bootstrap, "backoff-client-default"
    topic = setup_topic(bootstrap, subscription, 1, **{"logwright.redelivery.backoff.policy": "levels",
                                                       "logwright.redelivery.backoff.levels": "2s 7s"})

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        consumer = await client.subscribe(topic, subscription, initial_position="earliest")
        first = await consumer.receive(timeout=30)
        now = await client.advance_clock(0)
        await consumer.negative_acknowledge(first)  # no delay asked for: the first level, 2 s
        [cursor] = await client.inspect(subscription, topic)
        assert [(r["delivery_count"], r["available_at_ms"] - now) for r in cursor["redeliveries"]] == [(1, 2_000)]
        await client.advance_clock(2_000)
        again = await consumer.receive(timeout=30)
        assert (again.offset, again.redelivery_count) == (0, 1)
        now = await client.advance_clock(0)
        await consumer.negative_acknowledge(again, delay_ms=30_000)  # asked for: wins over the 7 s level
        [cursor] = await client.inspect(subscription, topic)
        assert [(r["delivery_count"], r["available_at_ms"] - now) for r in cursor["redeliveries"]] == [(2, 30_000)]
        await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))


def test_due_redeliveries_come_back_in_due_order_not_offset_order(clock_broker: BrokerProcess) -> None:
    """Offsets 0, 1, 2 nacked for 3 s, 2 s and 1 s: once all are due, a consumer taking one record per fetch gets
    2, 1, 0 (earliest due first), and only then the records never delivered."""
    bootstrap, subscription = clock_broker.bootstrap, "due-order"
    topic = setup_topic(bootstrap, subscription, 5)

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        consumer = await client.subscribe(topic, subscription, initial_position="earliest", receiver_queue_size=1)
        for offset, delay_ms in ((0, 3_000), (1, 2_000), (2, 1_000)):
            message = await consumer.receive(timeout=30)
            assert message.offset == offset
            await consumer.negative_acknowledge(message, delay_ms=delay_ms)
        await client.advance_clock(3_000)
        order = []
        for _ in range(5):
            message = await consumer.receive(timeout=30)
            order.append((message.offset, message.redelivery_count))
            await consumer.acknowledge(message)
        assert order == [(2, 1), (1, 1), (0, 1), (3, 0), (4, 0)]
        await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
    check_consistent(clock_broker)
