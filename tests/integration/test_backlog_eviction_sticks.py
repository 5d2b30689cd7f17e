"""An eviction sticks: a running member of the evicted group committing its older position moves nothing back.

confluent-kafka consumers in a classic group and in a KIP-848 group (``group.protocol=consumer``) keep their
own fetch position, so after the broker evicts their group's backlog they commit where they were. Pulsar treats
an ack below the mark-delete position after an eviction as a no-op; here the commit answers success, the
stored offset stays at the eviction point until the group commits past it, and the producer goes on without a
second eviction, across a restart. An explicit reset of the empty group (AdminClient) still moves it back.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import AdminClient

from .broker_process import BrokerProcess
from .test_backlog_quota import _backlog_of, _committed, _producer, _quota_state, _send, _topic
from .test_share_groups import check_consistent


def _member(bootstrap: str, group: str, topic: str, protocol: str) -> tuple[Consumer, Message]:
    """A member of ``group`` that has read the first record (its own position is then 1)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        message = consumer.poll(0.2)
        if message is not None and not message.error():
            return consumer, message
    raise AssertionError(f"the {protocol} member read nothing")


def _commit_once_the_coordinator_is_back(member: Consumer, offsets: list[TopicPartition]) -> list[TopicPartition]:
    """The member's first commit after the broker restarted. librdkafka may fail it locally with _WAIT_COORD
    while it is still finding the coordinator again (once in a CI run on a loaded machine): nothing reached the
    broker then, so it is tried again, as an application retries a retriable error; a coordinator that never
    comes back still fails the test."""
    deadline = time.monotonic() + 30
    while True:
        try:
            answers: list[TopicPartition] = member.commit(offsets=offsets, asynchronous=False)
            return answers
        except KafkaException as error:
            if error.args[0].code() != KafkaError._WAIT_COORD or time.monotonic() > deadline:
                raise
            member.poll(0.1)  # serves the client's queue while it reconnects


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_members_older_commit_does_not_undo_the_eviction(clock_broker: BrokerProcess, protocol: str) -> None:
    bootstrap = clock_broker.bootstrap
    group = f"evicted-{protocol}"
    topic = _topic(bootstrap, {"logwright.backlog.quota.records": "10",
                               "logwright.backlog.quota.policy": "consumer_backlog_eviction"})
    producer = _producer(bootstrap)
    assert _send(producer, topic, 10) == [None] * 10
    member, first = _member(bootstrap, group, topic, protocol)
    assert first.offset() == 0
    member.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    assert _send(producer, topic, 2) == [None, None], "11 records from offset 1: evicted to 9 left"
    assert _committed(bootstrap, group, topic) == 3
    clock_broker.kill()
    clock_broker.start()  # the eviction point is stored state: it holds after a restart

    [answer] = _commit_once_the_coordinator_is_back(member, [TopicPartition(topic, 0, 1)])
    assert answer.error is None, "the member's commit answers success"
    assert _committed(bootstrap, group, topic) == 3, "the committed offset stays at the eviction point"
    entry = _backlog_of(_quota_state(bootstrap, group, topic), group)
    assert entry["records"] == 9 and entry["evicted"]["evictions"] == 1
    assert entry["evicted"]["commits_raised_to"] == 3
    assert _send(producer, topic, 1) == [None], "10 records from the point: at the quota, nothing evicted"
    entry = _backlog_of(_quota_state(bootstrap, group, topic), group)
    assert (entry["records"], entry["evicted"]["evictions"]) == (10, 1), "no second eviction"

    member.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    member.commit(offsets=[TopicPartition(topic, 0, 4)], asynchronous=False)
    assert _committed(bootstrap, group, topic) == 4, "past the point once, the group may go back itself"
    assert _backlog_of(_quota_state(bootstrap, group, topic), group)["evicted"]["commits_raised_to"] is None
    member.close()

    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert _send(producer, topic, 2) == [None] * 2, "the second evicts to 9 again"
    assert _committed(bootstrap, group, topic) == 6
    [reset] = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 0)])]).values()
    reset.result(30)
    assert _committed(bootstrap, group, topic) == 0, "an explicit reset of the empty group moves it back"
    check_consistent(clock_broker)
