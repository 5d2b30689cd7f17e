"""Backlog quotas on a real broker process (manual clock) with confluent-kafka producers and consumer groups.

Each policy at the request that crosses the quota: *exception* refuses at once with POLICY_VIOLATION naming the
quota and the group; *hold* keeps the request (its connection open) until a commit drains the backlog, then
appends it at once, or answers THROTTLING_QUOTA_EXCEEDED with a throttle time at its timeout on the broker
clock; *eviction* moves the group's committed offset to exactly 90% with the append. An age quota evicts on a
clock advance; a restart keeps the quota and the audit trail, and `logwright check` agrees.
"""

from __future__ import annotations

import asyncio
import datetime
import subprocess
import sys
import time
import uuid
from typing import Any

from confluent_kafka import AcknowledgeType, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.produce.v9 import request as produce
from logwright.client import Client
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .test_share_groups import advance_clock, check_consistent, commit, consumer, poll_batch

THROTTLING_QUOTA_EXCEEDED = 89


def _topic(bootstrap: str, configs: dict[str, str]) -> str:
    topic = f"backlog-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, config=configs)])[topic].result(30)
    return topic


def _commit(bootstrap: str, group: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    consumer.close()


def _committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    [partition] = consumer.committed([TopicPartition(topic, 0)], timeout=30)
    consumer.close()
    return int(partition.offset)


def _producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "linger.ms": 0, "retries": 0,
                     "max.in.flight.requests.per.connection": 1, "message.timeout.ms": 60_000})


def _send(producer: Producer, topic: str, count: int) -> list[Any]:
    """``count`` records, one request each; their delivery errors (None for delivered)."""
    outcomes: list[Any] = []
    for number in range(count):
        producer.produce(topic, value=b"v%03d" % number, on_delivery=lambda error, _: outcomes.append(error))
        producer.flush(30)
    return outcomes


def _raw_produce(bootstrap: str, topic: str, timeout_ms: int) -> Any:
    """One record over a bare connection with the request timeout given; the partition answer and throttle."""
    async def run() -> Any:
        connection = await Connection.open(bootstrap, "backlog-tests")
        try:
            request = make(produce.ProduceRequest, transactional_id=None, acks=-1,
                           timeout=datetime.timedelta(milliseconds=timeout_ms),
                           topic_data=(make(produce.TopicProduceData, name=topic, partition_data=(
                               make(produce.PartitionProduceData, index=0,
                                    records=build_batch([Record(0, 0, None, b"late")])),)),))
            return await connection.request(request)
        finally:
            await connection.close()
    return run()


def _quota_state(bootstrap: str, subscription: str, topic: str) -> dict[str, Any]:
    """InspectCursor's ``backlog_quota`` of partition 0."""
    async def run() -> dict[str, Any]:
        client = await Client.connect(bootstrap)
        try:
            return dict((await client.inspect(subscription, topic))[0]["backlog_quota"])
        finally:
            await client.close()
    return asyncio.run(run())


def _backlog_of(state: dict[str, Any], subscription: str) -> dict[str, Any]:
    [entry] = [entry for entry in state["subscriptions"] if entry["subscription"] == subscription]
    return entry


def test_exception_refuses_at_once_naming_quota_and_group_and_proceeds_after_the_commit(
        clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.backlog.quota.records": "3",
                               "logwright.backlog.quota.policy": "producer_exception"})
    _commit(bootstrap, "slow-group", topic, 0)
    producer = _producer(bootstrap)
    assert _send(producer, topic, 3) == [None, None, None]
    started = time.monotonic()
    [error] = _send(producer, topic, 1)
    assert time.monotonic() - started < 5, "refused at once, not at a check interval"
    assert error is not None and error.code() == KafkaError.POLICY_VIOLATION and not error.retriable()
    answer = asyncio.run(_raw_produce(bootstrap, topic, 30_000)).responses[0].partition_responses[0]
    assert answer.error_code == KafkaError.POLICY_VIOLATION, "librdkafka does not show the message: read it raw"
    assert "logwright.backlog.quota.records=3" in answer.error_message and "'slow-group'" in answer.error_message
    _commit(bootstrap, "slow-group", topic, 1)
    assert _send(producer, topic, 1) == [None], "the first request after the drain goes through"


def test_hold_parks_the_request_until_the_commit_that_drains_the_backlog(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.backlog.quota.records": "3"})
    _commit(bootstrap, "slow-group", topic, 0)
    producer = _producer(bootstrap)
    assert _send(producer, topic, 3) == [None, None, None]
    outcomes: list[Any] = []
    producer.produce(topic, value=b"held", on_delivery=lambda error, message: outcomes.append((error, message)))
    deadline = time.monotonic() + 1.5
    while time.monotonic() < deadline:
        producer.poll(0.1)
    assert outcomes == [], "held while the backlog is at the quota"
    other = _producer(bootstrap)
    other_topic = _topic(bootstrap, {})
    assert _send(other, other_topic, 1) == [None], "other connections carry on"
    _commit(bootstrap, "slow-group", topic, 2)
    released = time.monotonic()
    producer.flush(30)
    [(error, message)] = outcomes
    assert error is None and message.offset() == 3
    assert time.monotonic() - released < 2, "released by the commit itself"


def test_hold_answers_a_retriable_error_with_throttle_time_at_the_request_timeout(
        clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.backlog.quota.records": "2"})
    _commit(bootstrap, "slow-group", topic, 0)
    assert _send(_producer(bootstrap), topic, 2) == [None, None]

    async def scenario() -> Any:
        held = asyncio.ensure_future(_raw_produce(bootstrap, topic, 5000))
        await asyncio.sleep(0.5)
        assert not held.done()
        await asyncio.to_thread(advance_clock, bootstrap, 4999)
        await asyncio.sleep(0.3)
        assert not held.done(), "the timeout runs on the broker clock"
        await asyncio.to_thread(advance_clock, bootstrap, 1)
        return await asyncio.wait_for(held, 10)

    response = asyncio.run(scenario())
    answer = response.responses[0].partition_responses[0]
    assert answer.error_code == THROTTLING_QUOTA_EXCEEDED
    assert "logwright.backlog.quota.records=2" in (answer.error_message or "")
    assert response.throttle_time == datetime.timedelta(milliseconds=1000)


def test_eviction_moves_the_slowest_group_to_ninety_percent_with_the_append_and_survives_a_restart(
        clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.backlog.quota.records": "10",
                               "logwright.backlog.quota.policy": "consumer_backlog_eviction"})
    _commit(bootstrap, "slow-group", topic, 0)
    _commit(bootstrap, "fast-group", topic, 9)
    producer = _producer(bootstrap)
    assert _send(producer, topic, 10) == [None] * 10
    assert _committed(bootstrap, "slow-group", topic) == 0, "at the quota, nothing is evicted"
    assert _send(producer, topic, 1) == [None], "eviction admits the append"
    assert _committed(bootstrap, "slow-group", topic) == 2, "11 records, 9 (90% of 10) left unread"
    assert _committed(bootstrap, "fast-group", topic) == 9, "a subscription under the quota keeps its place"
    state = _quota_state(bootstrap, "slow-group", topic)
    assert state["quota"] == {"bytes": -1, "records": 10, "age_ms": -1, "policy": "consumer_backlog_eviction"}
    slow = _backlog_of(state, "slow-group")
    assert (slow["kind"], slow["records"], slow["over"]) == ("group", 9, None) and slow["bytes"] > 0
    assert slow["evicted"] == {"evictions": 1, "records": 2, "bytes": slow["evicted"]["bytes"],
                               "last_from_offset": 0, "last_to_offset": 2,
                               "last_reason": "backlog quota logwright.backlog.quota.records=10 exceeded; "
                                              "evicted to 90%", "commits_raised_to": 2}
    assert slow["evicted"]["bytes"] * 9 == slow["bytes"] * 2, "each one-record batch counted with its stored size"
    assert _backlog_of(state, "fast-group")["evicted"] is None and state["slowest"] == "slow-group"
    shown = subprocess.run([sys.executable, "-m", "logwright", "backlog", "--bootstrap", bootstrap, topic],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "quota: records=10 (consumer_backlog_eviction)" in shown.stdout
    assert f"group slow-group: 9 records, {slow['bytes']} bytes" in shown.stdout
    assert "evicted 2 records in 1, commits raised to 2  (slowest)" in shown.stdout, shown.stdout
    clock_broker.kill()
    clock_broker.start()
    assert _backlog_of(_quota_state(bootstrap, "slow-group", topic), "slow-group")["evicted"]["evictions"] == 1
    assert _send(_producer(bootstrap), topic, 2) == [None, None]
    assert _committed(bootstrap, "slow-group", topic) == 4, "the 12th fits the quota, the 13th evicts to 9 again"
    check_consistent(clock_broker)


def test_age_quota_evicts_on_the_broker_clock_without_a_produce(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap, {"logwright.backlog.quota.age.ms": "10000", "message.timestamp.type": "LogAppendTime",
                               "logwright.backlog.quota.policy": "consumer_backlog_eviction"})
    _commit(bootstrap, "slow-group", topic, 0)
    producer = _producer(bootstrap)
    assert _send(producer, topic, 1) == [None]
    advance_clock(bootstrap, 8000)
    assert _send(producer, topic, 1) == [None]
    advance_clock(bootstrap, 2000)
    assert _committed(bootstrap, "slow-group", topic) == 0, "10 s old is not over a 10 s limit"
    advance_clock(bootstrap, 1)
    assert _committed(bootstrap, "slow-group", topic) == 1, \
        "evicted before the advance answers: the record older than 9 s (90% of the limit) goes, the 2 s old one stays"


def _three_records_at_a_quota_of_three(bootstrap: str, group: str, start_key: str) -> tuple[str, Producer]:
    """A producer_exception topic with records=3 holding 3 records, and ``group`` set to start at the earliest."""
    topic = _topic(bootstrap, {"logwright.backlog.quota.records": "3",
                               "logwright.backlog.quota.policy": "producer_exception"})
    set_group_configs(bootstrap, group, {start_key: "earliest"})
    producer = _producer(bootstrap)
    assert _send(producer, topic, 3) == [None] * 3
    return topic, producer


def test_a_share_group_holding_acquired_records_counts_them_until_acknowledged(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic, producer = _three_records_at_a_quota_of_three(bootstrap, "share-group", "share.auto.offset.reset")
    share = consumer(bootstrap, "share-group", topic)
    held = poll_batch(share)
    assert len(held) == 3
    [refused] = _send(producer, topic, 1)
    assert refused is not None and refused.code() == KafkaError.POLICY_VIOLATION, "acquired is not settled"
    entry = _backlog_of(_quota_state(bootstrap, "share-group", topic), "share-group")
    assert (entry["kind"], entry["records"]) == ("cursor", 3)
    for message in held[:2]:
        share.acknowledge(message, AcknowledgeType.ACCEPT)
    assert all(error is None for error in commit(share).values())
    assert _send(producer, topic, 1) == [None], "two acknowledged, room for one"
    share.close()


def test_aiokafka_producers_are_held_then_released_and_refused_with_policy_violation(
        clock_broker: BrokerProcess) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import PolicyViolationError

    bootstrap = clock_broker.bootstrap
    held_topic = _topic(bootstrap, {"logwright.backlog.quota.records": "2"})
    refused_topic = _topic(bootstrap, {"logwright.backlog.quota.records": "2",
                                       "logwright.backlog.quota.policy": "producer_exception"})
    for name in (held_topic, refused_topic):
        _commit(bootstrap, "slow-group", name, 0)

    async def scenario() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
        await producer.start()
        try:
            for name in (held_topic, refused_topic):
                for _ in range(2):
                    await producer.send_and_wait(name, b"fill", partition=0)
            try:
                await producer.send_and_wait(refused_topic, b"over", partition=0)
                raise AssertionError("the record over a producer_exception quota was stored")
            except PolicyViolationError:
                pass
            held = asyncio.ensure_future(producer.send_and_wait(held_topic, b"held", partition=0))
            await asyncio.sleep(1.0)
            assert not held.done(), "held while the backlog is at the quota"
            await asyncio.to_thread(_commit, bootstrap, "slow-group", held_topic, 1)
            metadata = await asyncio.wait_for(held, 5)
            assert metadata.offset == 2
        finally:
            await producer.stop()

    asyncio.run(scenario())


def test_quota_configs_are_validated_and_described(clock_broker: BrokerProcess) -> None:
    from confluent_kafka.admin import ConfigResource

    bootstrap = clock_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for key, value in (("logwright.backlog.quota.records", "0"), ("logwright.backlog.quota.bytes", "ten"),
                       ("logwright.backlog.quota.policy", "drop_everything")):
        name = f"backlog-{uuid.uuid4().hex[:8]}"
        future = admin.create_topics([NewTopic(name, 1, config={key: value})])[name]
        error = future.exception(30)
        assert error is not None and error.args[0].code() == KafkaError.INVALID_CONFIG, (key, error)
        assert key in error.args[0].str(), error.args[0].str()
    name = _topic(bootstrap, {"logwright.backlog.quota.bytes": "4096"})
    [described] = admin.describe_configs([ConfigResource("topic", name)]).values()
    entries = described.result(30)
    assert entries["logwright.backlog.quota.bytes"].value == "4096"
    assert "logwright.backlog.quota.policy" in entries
    [broker] = admin.describe_configs([ConfigResource("broker", "1")]).values()
    assert broker.result(30)["logwright.backlog.quota.default.policy"].value == "producer_request_hold"


def test_a_pop_group_holding_popped_records_counts_them_until_acknowledged(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic, producer = _three_records_at_a_quota_of_three(bootstrap, "pop-group", "logwright.pop.init.mode")

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        try:
            popped = await client.pop(topic, "pop-group", max_messages=3)
            assert len(popped) == 3
            [refused] = await asyncio.to_thread(_send, producer, topic, 1)
            assert refused is not None and refused.code() == KafkaError.POLICY_VIOLATION, "popped is not settled"
            state = await asyncio.to_thread(_quota_state, bootstrap, "pop-group", topic)
            entry = _backlog_of(state, "pop-group")
            assert (entry["kind"], entry["records"]) == ("pop", 3)
            for message in popped[:2]:
                await client.ack(message)
            assert await asyncio.to_thread(_send, producer, topic, 1) == [None], "two acknowledged, room for one"
        finally:
            await client.close()

    asyncio.run(scenario())


def test_an_inspection_of_many_partitions_reports_every_one_across_its_slices(clock_broker: BrokerProcess) -> None:
    """InspectCursor answers a topic of many partitions in slices (`cursor_inspection.PARTITIONS_PER_TURN`), each
    reading the subscriptions afresh: every partition lists its own groups and backlogs, none another's."""
    bootstrap = clock_broker.bootstrap
    topic = f"backlog-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 600, config={"logwright.backlog.quota.records": "1000"})])[topic].result(30)
    producer = _producer(bootstrap)
    for partition in (0, 255, 256, 300, 599):
        producer.produce(topic, value=b"v", partition=partition)
    assert producer.flush(30) == 0
    everywhere = Consumer({"bootstrap.servers": bootstrap, "group.id": "everywhere", "enable.auto.commit": False})
    everywhere.commit(offsets=[TopicPartition(topic, partition, 1 if partition == 300 else 0)
                               for partition in range(600)], asynchronous=False)
    everywhere.close()
    _commit(bootstrap, "first-only", topic, 0)

    async def inspect() -> list[dict[str, Any]]:
        client = await Client.connect(bootstrap)
        try:
            return await client.inspect("everywhere", topic)
        finally:
            await client.close()

    partitions = asyncio.run(inspect())
    assert [entry["partition"] for entry in partitions] == list(range(600))
    backlogs = {entry["partition"]: {each["subscription"]: each["records"]
                                     for each in entry["backlog_quota"]["subscriptions"]} for entry in partitions}
    assert backlogs[0] == {"everywhere": 1, "first-only": 1}
    assert backlogs[1] == {"everywhere": 0}
    assert [backlogs[partition] for partition in (255, 256, 300, 599)] == [{"everywhere": 1}, {"everywhere": 1},
                                                                           {"everywhere": 0}, {"everywhere": 1}]
    assert {partitions[599]["backlog_quota"]["slowest"], partitions[1]["backlog_quota"]["slowest"]} == {"everywhere"}
