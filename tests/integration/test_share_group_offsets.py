"""Share group offset administration (DescribeShareGroupOffsets 90, AlterShareGroupOffsets 91,
DeleteShareGroupOffsets 92) with kio requests, and a confluent-kafka ShareConsumer as the group's member.

Differential: these are Apache Kafka 4.4's answers (``--against kafka`` runs them there). Kafka's coordinator
may answer NOT_COORDINATOR until it has loaded the group's partition, and applies a member's leave in the
background, so those two waits poll.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.alter_share_group_offsets.v0 import request as alter_request
from kio.schema.delete_share_group_offsets.v0 import request as delete_request
from kio.schema.describe_share_group_offsets.v1 import request as describe_request
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from logwright.compat.registry import make
from logwright.testing.clients import one_request

pytestmark = pytest.mark.differential

NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_GROUP_ID, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 0, 3, 24, 68, 69
NOT_READY = (14, 15, 16)
"""COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR: Kafka's group partition is loading."""


def request(bootstrap: str, message: Any) -> Any:
    return one_request(bootstrap, message, "share-offsets-test")


Offsets = dict[tuple[str, int], tuple[int, int]]


def describe(bootstrap: str, group: str, topics: dict[str, list[int]] | None = None) -> Offsets:
    """(topic, partition) → (start offset, lag) of the group's answer, which must carry no error."""
    entries = None if topics is None else tuple(
        make(describe_request.DescribeShareGroupOffsetsRequestTopic, topic_name=name, partitions=tuple(partitions))
        for name, partitions in topics.items())
    response = request(bootstrap, make(describe_request.DescribeShareGroupOffsetsRequest, groups=(
        make(describe_request.DescribeShareGroupOffsetsRequestGroup, group_id=group, topics=entries),)))
    [answer] = response.groups
    assert answer.error_code == NONE, answer.error_message
    found = {}
    for topic in answer.topics:
        for partition in topic.partitions:
            assert (partition.error_code, partition.leader_epoch) == (NONE, 0)
            found[(topic.topic_name, partition.partition_index)] = (partition.start_offset, partition.lag)
    return found


def alter(bootstrap: str, group: str, topics: dict[str, dict[int, int]]) -> tuple[int, dict[tuple[str, int], int]]:
    """The top-level error code and each partition's."""
    response = request(bootstrap, make(alter_request.AlterShareGroupOffsetsRequest, group_id=group, topics=tuple(
        make(alter_request.AlterShareGroupOffsetsRequestTopic, topic_name=name, partitions=tuple(
            make(alter_request.AlterShareGroupOffsetsRequestPartition, partition_index=index, start_offset=offset)
            for index, offset in partitions.items()))
        for name, partitions in topics.items())))
    return response.error_code, {(topic.topic_name, partition.partition_index): partition.error_code
                                 for topic in response.responses for partition in topic.partitions}


def delete(bootstrap: str, group: str, topics: list[str]) -> tuple[int, dict[str, int]]:
    response = request(bootstrap, make(delete_request.DeleteShareGroupOffsetsRequest, group_id=group, topics=tuple(
        make(delete_request.DeleteShareGroupOffsetsRequestTopic, topic_name=name) for name in topics)))
    return response.error_code, {topic.topic_name: topic.error_code for topic in response.responses}


def coordinator_ready(bootstrap: str, group: str) -> None:
    """Wait until the group's coordinator answers (Kafka creates and loads __consumer_offsets first)."""
    deadline = time.monotonic() + 60
    while True:
        response = request(bootstrap, make(FindCoordinatorRequest, key="", key_type=0, coordinator_keys=(group,)))
        answer = request(bootstrap, make(describe_request.DescribeShareGroupOffsetsRequest, groups=(
            make(describe_request.DescribeShareGroupOffsetsRequestGroup, group_id=group, topics=None),)))
        codes = {c.error_code for c in response.coordinators} | {g.error_code for g in answer.groups}
        if not codes & set(NOT_READY):
            return
        assert time.monotonic() < deadline, f"the coordinator of {group} never became ready: {codes}"
        time.sleep(0.3)


def eventually(check: Any, timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(0.3)


@pytest.fixture
def topic(bootstrap: str) -> str:
    """Two partitions, 20 records on partition 0, and an empty companion topic ``<topic>-empty``."""
    name = f"share-offsets-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for created in (name, f"{name}-empty"):
        admin.create_topics([NewTopic(created, 2)])[created].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in range(20):
        producer.produce(name, value=str(value).encode(), partition=0)
    assert producer.flush(30) == 0
    for known in (name, f"{name}-empty"):  # Kafka's group coordinator learns of a new topic a moment after it exists
        probe = f"share-offsets-probe-{uuid.uuid4().hex[:8]}"
        coordinator_ready(bootstrap, probe)
        assert eventually(lambda probe=probe, known=known:
                          alter(bootstrap, probe, {known: {0: 0}}) == (NONE, {(known, 0): NONE}))
    return name


def test_alter_describe_delete_round_trip(bootstrap: str, topic: str) -> None:
    group = f"share-offsets-{uuid.uuid4().hex[:8]}"
    coordinator_ready(bootstrap, group)
    assert describe(bootstrap, group, {topic: [0, 1], "no-such-topic": [0]}) == {
        (topic, 0): (-1, -1), (topic, 1): (-1, -1), ("no-such-topic", 0): (-1, -1)}
    assert describe(bootstrap, group) == {}
    assert alter(bootstrap, group, {topic: {0: 8, 5: 1}, "no-such-topic": {0: 1}}) == (NONE, {
        (topic, 0): NONE, (topic, 5): UNKNOWN_TOPIC_OR_PARTITION, ("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION})
    [described] = request(bootstrap, make(ShareGroupDescribeRequest, group_ids=(group,),
                                          include_authorized_operations=False)).groups
    assert (described.error_code, described.group_state) == (NONE, "Empty"), "alter creates the share group"
    assert describe(bootstrap, group, {topic: [0, 1]}) == {(topic, 0): (8, 12), (topic, 1): (-1, -1)}
    assert describe(bootstrap, group) == {(topic, 0): (8, 12)}
    assert delete(bootstrap, group, [topic, f"{topic}-empty", "no-such-topic"]) == (NONE, {
        topic: NONE, f"{topic}-empty": UNKNOWN_TOPIC_OR_PARTITION, "no-such-topic": UNKNOWN_TOPIC_OR_PARTITION})
    assert describe(bootstrap, group, {topic: [0]}) == {(topic, 0): (-1, -1)}
    assert describe(bootstrap, group) == {}
    assert delete(bootstrap, group, [topic]) == (NONE, {topic: UNKNOWN_TOPIC_OR_PARTITION})


@pytest.mark.parametrize(("start", "lag"), [(-1, -1), (-5, 25), (-(2**63), -(2**63) + 20), (2**63 - 1, 21 - 2**63)])
def test_any_int64_start_offset_is_taken_and_its_lag_wraps_as_kafkas(bootstrap: str, topic: str, start: int,
                                                                      lag: int) -> None:
    """Kafka 4.4 takes any start offset: -1 reads back as uninitialized (lag -1), others as given, with the lag
    ``20 - start`` wrapped into a long. -2**63 used to fail the commit (a cursor at -2**63 - 1 msgpack could not
    write) and leave the store read-only; the fuzz test (seed 202) found it."""
    group = f"share-offsets-{uuid.uuid4().hex[:8]}"
    coordinator_ready(bootstrap, group)
    assert alter(bootstrap, group, {topic: {0: start}}) == (NONE, {(topic, 0): NONE})
    assert describe(bootstrap, group, {topic: [0]}) == {(topic, 0): (start, lag)}
    assert alter(bootstrap, group, {topic: {0: 3}}) == (NONE, {(topic, 0): NONE}), "and the broker writes on"
    assert describe(bootstrap, group, {topic: [0]}) == {(topic, 0): (3, 17)}


def test_refusals_of_the_whole_request(bootstrap: str, topic: str) -> None:
    group = f"share-offsets-{uuid.uuid4().hex[:8]}"
    classic = f"classic-{uuid.uuid4().hex[:8]}"
    coordinator_ready(bootstrap, group)
    assert delete(bootstrap, group, [topic]) == (GROUP_ID_NOT_FOUND, {})
    assert alter(bootstrap, "", {topic: {0: 1}}) == (INVALID_GROUP_ID, {})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": classic})
    consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
    consumer.close()
    assert alter(bootstrap, classic, {topic: {0: 1}}) == (GROUP_ID_NOT_FOUND, {})
    assert delete(bootstrap, classic, [topic]) == (GROUP_ID_NOT_FOUND, {})
    assert describe(bootstrap, classic) == {}


def test_a_member_blocks_changes_and_its_acks_count_in_the_lag(bootstrap: str, topic: str) -> None:
    group = f"share-offsets-{uuid.uuid4().hex[:8]}"
    coordinator_ready(bootstrap, group)
    assert alter(bootstrap, group, {topic: {0: 8}}) == (NONE, {(topic, 0): NONE})
    share = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group, "share.acknowledgement.mode": "explicit"})
    try:
        share.subscribe([topic])
        messages: list[Any] = []
        deadline = time.monotonic() + 60
        while not messages and time.monotonic() < deadline:
            messages = list(share.poll(0.5))
        assert [(m.partition(), m.offset()) for m in messages] == [(0, offset) for offset in range(8, 20)]
        for message in messages:
            accepted = message.offset() in (10, 11)
            share.acknowledge(message, AcknowledgeType.ACCEPT if accepted else AcknowledgeType.RELEASE)
        share.commit_sync(30)
        assert describe(bootstrap, group, {topic: [0]}) == {(topic, 0): (8, 10)}, "20 - 8 - 2 accepted"
        assert alter(bootstrap, group, {topic: {0: 3}}) == (NON_EMPTY_GROUP, {})
        assert delete(bootstrap, group, [topic]) == (NON_EMPTY_GROUP, {})
    finally:
        share.close()
    assert eventually(lambda: delete(bootstrap, group, [topic]) == (NONE, {topic: NONE}))
    assert describe(bootstrap, group) == {}
