"""F41 on a broker process: an admin reset of a pop group's position (LogwrightPopReset, the bundled client's
``reset_pop``) to earliest, latest, an offset or a timestamp takes precedence over what the pops reached and
drops what was in flight; a pop-mode share group is reset by Kafka's AlterShareGroupOffsets; a new group starts
where ``logwright.pop.init.mode`` says, on a log whose oldest records were deleted too."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.client import BrokerError, Client
from logwright.client.pop import UnknownReceiptHandle

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .test_pop import INVISIBLE_MS, logged_events, run
from .test_share_group_offsets import alter, delete
from .test_share_groups import check_consistent, commit, consumer, poll_batch

BASE_MS = 1_700_000_000_000


def timed_topic(bootstrap: str, group: str, count: int) -> str:
    """A one-partition topic with records ``r0..`` stamped ``BASE_MS + 1000 * i``, and a pop group from earliest."""
    topic = f"reset-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    set_group_configs(bootstrap, group, {"logwright.pop.init.mode": "earliest"})
    append(bootstrap, topic, range(count))
    return topic


def append(bootstrap: str, topic: str, numbers: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for number in numbers:
        producer.produce(topic, f"r{number}".encode(), partition=0, timestamp=BASE_MS + 1_000 * number)
    assert producer.flush(30) == 0


def test_a_reset_moves_the_position_and_drops_what_was_in_flight(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = timed_topic(bootstrap, "g", 5)

    async def scenario(client: Client) -> None:
        held = await client.pop(topic, "g", 3, INVISIBLE_MS)
        assert [m.offset for m in held] == [0, 1, 2]
        assert await client.reset_pop(topic, "g", "latest") == {0: 5}
        with pytest.raises(UnknownReceiptHandle, match="dropped by a reset"):
            await client.ack(held[0])
        [partition] = (await client.inspect_pop(topic, "g"))["partitions"]
        assert (partition["next_offset"], partition["entries"]) == (5, [])
        assert list(await client.pop(topic, "g", 32, INVISIBLE_MS)) == []
        append(bootstrap, topic, range(5, 6))
        [fresh] = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert fresh.value == b"r5"

        assert await client.reset_pop(topic, "g", "earliest") == {0: 0}  # r5's handle goes too: popped afresh
        again = await client.pop(topic, "g", 32, INVISIBLE_MS)
        assert [(m.offset, m.reconsume_times) for m in again] == [(offset, 0) for offset in range(6)]
        await client.advance_clock(INVISIBLE_MS)  # nothing revived: the reset dropped the old checkpoints
        assert await client.reset_pop(topic, "g", "offset", 4) == {0: 4}
        assert [m.value for m in await client.pop(topic, "g", 32, INVISIBLE_MS)] == [b"r4", b"r5"]
        assert await client.reset_pop(topic, "g", "timestamp", BASE_MS + 2_500) == {0: 3}
        assert [m.offset for m in await client.pop(topic, "g", 32, INVISIBLE_MS)] == [3, 4, 5]
        assert await client.reset_pop(topic, "g", "offset", 99) == {0: 6}, "clamped to the log end"
        assert await client.reset_pop(topic, "g", "timestamp", BASE_MS + 99_000) == {0: 6}, "none that late: end"
        for to, partitions, match in (("middle", None, "must be one of"), ("offset", None, "'value'"),
                                      ("earliest", [1], "partition indexes"), ("earliest", [0, 0], "distinct")):
            with pytest.raises(BrokerError, match=match):
                await client.reset_pop(topic, "g", to, None, partitions)

    run(scenario, bootstrap)
    check_consistent(clock_broker)
    moved = [event for event in logged_events(clock_broker) if event["type"] == "PopPositionMoved"]
    assert [(event["offset"], event["reason"]) for event in moved] == [
        (5, "admin reset to latest"), (0, "admin reset to earliest"), (4, "admin reset to offset 4"),
        (3, f"admin reset to timestamp {BASE_MS + 2_500}"), (6, "admin reset to offset 99"),
        (6, f"admin reset to timestamp {BASE_MS + 99_000}")]


def test_a_reset_takes_precedence_over_the_init_mode_of_a_new_group(clock_broker: BrokerProcess) -> None:
    """A group that never popped starts where the reset put it; a partition not named keeps the init mode."""
    bootstrap = clock_broker.bootstrap
    topic = f"reset-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for number in range(6):
        producer.produce(topic, f"r{number}".encode(), partition=number % 2)
    assert producer.flush(30) == 0  # offsets 0-2 on each partition; the group's init mode is latest

    async def scenario(client: Client) -> None:
        assert await client.reset_pop(topic, "new", "offset", 1, partitions=[1]) == {1: 1}
        popped = await client.pop(topic, "new", 32, INVISIBLE_MS)
        assert sorted((m.partition, m.offset) for m in popped) == [(1, 1), (1, 2)]

    run(scenario, bootstrap)


def test_init_mode_on_a_log_whose_oldest_records_were_deleted(clock_broker: BrokerProcess) -> None:
    """F41: earliest starts at the oldest record still there (the log start after DeleteRecords), latest at the
    log end (Kafka's ``latest``; RocketMQ's MAX starts one earlier, at the newest record: not copied)."""
    bootstrap = clock_broker.bootstrap
    topic = timed_topic(bootstrap, "first", 5)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [trimmed] = admin.delete_records([TopicPartition(topic, 0, 3)]).values()
    assert trimmed.result(30).low_watermark == 3
    set_group_configs(bootstrap, "oldest", {"logwright.pop.init.mode": "earliest"})
    set_group_configs(bootstrap, "newest", {"logwright.pop.init.mode": "latest"})

    async def scenario(client: Client) -> None:
        assert [m.offset for m in await client.pop(topic, "oldest", 32, INVISIBLE_MS)] == [3, 4]
        assert list(await client.pop(topic, "newest", 32, INVISIBLE_MS)) == []
        append(bootstrap, topic, range(5, 6))
        assert [m.offset for m in await client.pop(topic, "newest", 32, INVISIBLE_MS)] == [5]

    run(scenario, bootstrap)


def test_kafkas_share_group_offset_admin_resets_a_pop_mode_share_group(clock_broker: BrokerProcess) -> None:
    """A share group with ``logwright.subscription.mode=pop`` keeps its position in its share-group cursor: the
    AlterShareGroupOffsets that kafka-share-groups.sh --reset-offsets sends (the group empty) moves it, and
    DeleteShareGroupOffsets (--delete-offsets) makes it start afresh from share.auto.offset.reset."""
    bootstrap = clock_broker.bootstrap
    group = f"pop-share-{uuid.uuid4().hex[:6]}"
    topic = timed_topic(bootstrap, group, 4)
    set_group_configs(bootstrap, group, {"logwright.subscription.mode": "pop", "share.auto.offset.reset": "earliest"})
    share = consumer(bootstrap, group, topic)
    taken = []
    while len(taken) < 4:
        batch = poll_batch(share)
        assert batch
        for message in batch:
            share.acknowledge(message)
        taken.extend(message.offset() for message in batch)
    assert all(error is None for error in commit(share).values())
    share.close()
    assert alter(bootstrap, group, {topic: {0: 2}}) == (0, {(topic, 0): 0})
    again = consumer(bootstrap, group, topic)
    batch = poll_batch(again)
    assert [(m.offset(), m.value()) for m in batch] == [(2, b"r2"), (3, b"r3")]
    for message in batch:
        again.acknowledge(message)
    commit(again)
    again.close()
    assert delete(bootstrap, group, [topic]) == (0, {topic: 0})
    afresh = consumer(bootstrap, group, topic)
    batch = poll_batch(afresh)
    assert [m.offset() for m in batch] == [0, 1, 2, 3], "earliest again"
    for message in batch:
        afresh.acknowledge(message)
    commit(afresh)
    afresh.close()

