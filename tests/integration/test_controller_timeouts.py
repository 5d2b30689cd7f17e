"""Topic admin requests with a timeout that has passed, and names given twice, answered as Apache Kafka 4.4 answers
(``--against kafka``).

Kafka hands CreateTopics, CreatePartitions, DeleteTopics, ElectLeaders and AlterPartitionReassignments to its
controller with the request's timeout as a deadline: zero or less is REQUEST_TIMED_OUT for every topic or partition,
nothing changed, whatever else is wrong with it, and only a name given twice is answered before that (INVALID_REQUEST,
once). DeleteRecords answers a partition named twice once. A topic CreateTopics refuses carries an empty config list.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import pytest
from kio.schema.alter_partition_reassignments.v0 import request as reassignments
from kio.schema.create_partitions.v3 import request as create_partitions
from kio.schema.create_topics.v7 import request as create_topics
from kio.schema.delete_records.v2 import request as delete_records
from kio.schema.delete_topics.v2 import request as delete_topics_v2
from kio.schema.delete_topics.v6 import request as delete_topics
from kio.schema.elect_leaders.v2 import request as elect_leaders
from kio.schema.metadata.v12 import request as metadata
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .test_list_offsets_checks import two_partition_topic

pytestmark = pytest.mark.differential

NONE, UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT, INVALID_TOPIC_EXCEPTION = 0, 3, 7, 17
INVALID_REQUEST, ELECTION_NOT_NEEDED = 42, 84
PASSED = (0, -5)
"""Timeouts, in ms, that have passed before the controller would take the request."""
ZERO_UUID = uuid.UUID(int=0)


@pytest.fixture
def topic(bootstrap: str) -> str:
    """A two-partition topic with two records in partition 0."""
    return two_partition_topic(bootstrap, "controller-timeouts", (0, 0))


def ask(bootstrap: str, *requests: Any) -> list[Any]:
    """The answers to ``requests``, one after another on one connection."""
    async def exchange() -> list[Any]:
        connection = await Connection.open(bootstrap, "controller-timeouts")
        try:
            return [await connection.request(request) for request in requests]
        finally:
            await connection.close()

    return asyncio.run(exchange())


def partition_count(bootstrap: str, name: str) -> tuple[int, int]:
    """Metadata's error for ``name`` and its partition count."""
    (answer,) = ask(bootstrap, make(
        metadata.MetadataRequest, topics=(make(metadata.MetadataRequestTopic, topic_id=None, name=name),),
        allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False))
    (found,) = answer.topics
    return int(found.error_code), len(found.partitions)


def creatable(name: str) -> Any:
    return make(create_topics.CreatableTopic, name=name, num_partitions=1, replication_factor=1, assignments=(),
                configs=())


def create(bootstrap: str, names: list[str], timeout_ms: int, validate_only: bool = False
           ) -> list[tuple[str, int, int, int, tuple[Any, ...] | None]]:
    (answer,) = ask(bootstrap, make(create_topics.CreateTopicsRequest, topics=tuple(creatable(n) for n in names),
                                    timeout=datetime.timedelta(milliseconds=timeout_ms), validate_only=validate_only))
    return [(t.name, int(t.error_code), int(t.num_partitions), int(t.replication_factor), t.configs)
            for t in answer.topics]


@pytest.mark.parametrize("timeout_ms", PASSED)
def test_create_topics_past_its_deadline_creates_nothing(bootstrap: str, topic: str, timeout_ms: int) -> None:
    fresh = f"controller-timeouts-new-{uuid.uuid4().hex[:8]}"
    for validate_only in (True, False):
        assert create(bootstrap, [fresh, "bad name!", topic], timeout_ms, validate_only) == [
            (fresh, REQUEST_TIMED_OUT, -1, -1, ()), ("bad name!", REQUEST_TIMED_OUT, -1, -1, ()),
            (topic, REQUEST_TIMED_OUT, -1, -1, ())]
    assert partition_count(bootstrap, fresh) == (UNKNOWN_TOPIC_OR_PARTITION, 0)
    assert [(name, code) for name, code, *_ in create(bootstrap, [fresh, fresh], timeout_ms)] == [
        (fresh, INVALID_REQUEST)]


def test_a_topic_refused_carries_an_empty_config_list(bootstrap: str, topic: str) -> None:
    assert create(bootstrap, ["bad name!", topic, topic + "x", topic + "x"], 5_000, validate_only=True) == [
        ("bad name!", INVALID_TOPIC_EXCEPTION, -1, -1, ()), (topic, 36, -1, -1, ()),
        (topic + "x", INVALID_REQUEST, -1, -1, ())]


def grow(bootstrap: str, names: list[str], count: int, timeout_ms: int, validate_only: bool = False
         ) -> list[tuple[str, int]]:
    (answer,) = ask(bootstrap, make(
        create_partitions.CreatePartitionsRequest, topics=tuple(
            make(create_partitions.CreatePartitionsTopic, name=name, count=count, assignments=None) for name in names),
        timeout=datetime.timedelta(milliseconds=timeout_ms), validate_only=validate_only))
    return [(r.name, int(r.error_code)) for r in answer.results]


@pytest.mark.parametrize("timeout_ms", PASSED)
def test_create_partitions_past_its_deadline_adds_none(bootstrap: str, topic: str, timeout_ms: int) -> None:
    unknown = f"controller-timeouts-none-{uuid.uuid4().hex[:8]}"
    assert grow(bootstrap, [topic, unknown], 3, timeout_ms) == [
        (topic, REQUEST_TIMED_OUT), (unknown, REQUEST_TIMED_OUT)]
    assert grow(bootstrap, [topic], 1, timeout_ms, validate_only=True) == [(topic, REQUEST_TIMED_OUT)]
    assert partition_count(bootstrap, topic) == (NONE, 2)
    assert grow(bootstrap, [topic, topic], 3, timeout_ms) == [(topic, INVALID_REQUEST)]


def test_a_topic_named_twice_is_answered_once(bootstrap: str, topic: str) -> None:
    assert grow(bootstrap, [topic, topic], 3, 5_000) == [(topic, INVALID_REQUEST)]
    missing = f"controller-timeouts-none-{uuid.uuid4().hex[:8]}"
    assert delete(bootstrap, [(missing, ZERO_UUID)] * 2, 5_000) == [(missing, INVALID_REQUEST)]
    (answer,) = ask(bootstrap, make(delete_records.DeleteRecordsRequest, timeout=datetime.timedelta(seconds=5), topics=(
        make(delete_records.DeleteRecordsTopic, name=topic, partitions=tuple(
            make(delete_records.DeleteRecordsPartition, partition_index=index, offset=offset)
            for index, offset in ((0, 2), (1, 0), (0, 1)))),)))
    assert sorted((int(p.partition_index), int(p.error_code), int(p.low_watermark))
                  for t in answer.topics for p in t.partitions) == [(0, NONE, 1), (1, NONE, 0)]  # the last offset named


def delete(bootstrap: str, entries: list[tuple[str | None, uuid.UUID]], timeout_ms: int
           ) -> list[tuple[str | None, int]]:
    (answer,) = ask(bootstrap, make(delete_topics.DeleteTopicsRequest, topics=tuple(
        make(delete_topics.DeleteTopicState, name=name, topic_id=topic_id) for name, topic_id in entries),
        timeout=datetime.timedelta(milliseconds=timeout_ms)))
    return [(r.name, int(r.error_code)) for r in answer.responses]


@pytest.mark.parametrize("timeout_ms", PASSED)
def test_delete_topics_past_its_deadline_deletes_nothing(bootstrap: str, topic: str, timeout_ms: int) -> None:
    missing = f"controller-timeouts-none-{uuid.uuid4().hex[:8]}"
    assert delete(bootstrap, [(topic, ZERO_UUID), (missing, ZERO_UUID), (None, uuid.uuid4())], timeout_ms) == [
        (topic, REQUEST_TIMED_OUT), (missing, REQUEST_TIMED_OUT), (None, REQUEST_TIMED_OUT)]
    assert partition_count(bootstrap, topic) == (NONE, 2)


TOPIC_DELETION_DISABLED = 73


@pytest.mark.parametrize("started_with", [{"delete.topic.enable": "false"}], indirect=True)
def test_a_broker_started_without_topic_deletion_deletes_nothing(started_with: str) -> None:
    """``delete.topic.enable=false``: every entry TOPIC_DELETION_DISABLED with no message, as the request gave it
    (named twice, a passed deadline and a missing topic make no difference); INVALID_REQUEST before v3."""
    topic = two_partition_topic(started_with, "deletion-disabled", ())
    missing = f"deletion-disabled-none-{uuid.uuid4().hex[:8]}"
    (answer,) = ask(started_with, make(delete_topics.DeleteTopicsRequest, topics=tuple(
        make(delete_topics.DeleteTopicState, name=name, topic_id=topic_id)
        for name, topic_id in ((topic, ZERO_UUID), (topic, ZERO_UUID), (missing, ZERO_UUID), (None, uuid.uuid4()))),
        timeout=datetime.timedelta(milliseconds=0)))
    assert [(r.name, int(r.error_code), r.error_message) for r in answer.responses] == [
        (topic, TOPIC_DELETION_DISABLED, None), (topic, TOPIC_DELETION_DISABLED, None),
        (missing, TOPIC_DELETION_DISABLED, None), (None, TOPIC_DELETION_DISABLED, None)]
    (old,) = ask(started_with, make(delete_topics_v2.DeleteTopicsRequest, topic_names=(topic,),
                                    timeout=datetime.timedelta(seconds=30)))
    assert [(r.name, int(r.error_code)) for r in old.responses] == [(topic, INVALID_REQUEST)]
    assert partition_count(started_with, topic) == (NONE, 2)


@pytest.mark.parametrize("timeout_ms", PASSED)
def test_elections_and_reassignments_past_their_deadline(bootstrap: str, topic: str, timeout_ms: int) -> None:
    timeout = datetime.timedelta(milliseconds=timeout_ms)
    named, everything, reassigned, none_named = ask(
        bootstrap,
        make(elect_leaders.ElectLeadersRequest, election_type=0, timeout=timeout, topic_partitions=(
            make(elect_leaders.TopicPartitions, topic=topic, partitions=(0, 9)),)),
        make(elect_leaders.ElectLeadersRequest, election_type=0, timeout=timeout, topic_partitions=None),
        make(reassignments.AlterPartitionReassignmentsRequest, timeout=timeout, topics=(
            make(reassignments.ReassignableTopic, name=topic, partitions=(
                make(reassignments.ReassignablePartition, partition_index=0, replicas=None),)),)),
        make(reassignments.AlterPartitionReassignmentsRequest, timeout=timeout, topics=()))
    assert int(named.error_code) == REQUEST_TIMED_OUT
    assert [(p.partition_id, p.error_code, p.error_message) for r in named.replica_election_results
            for p in r.partition_result] == [(0, REQUEST_TIMED_OUT, None), (9, REQUEST_TIMED_OUT, None)]
    assert (int(everything.error_code), everything.replica_election_results) == (REQUEST_TIMED_OUT, ())
    assert (int(reassigned.error_code), reassigned.error_message) == (REQUEST_TIMED_OUT, None)
    assert [(p.partition_index, p.error_code, p.error_message) for r in reassigned.responses
            for p in r.partitions] == [(0, REQUEST_TIMED_OUT, None)]
    assert (int(none_named.error_code), none_named.error_message, none_named.responses) == (NONE, "", ())


def test_an_election_type_that_does_not_exist_fails_the_request(bootstrap: str, topic: str) -> None:
    (answer,) = ask(bootstrap, make(elect_leaders.ElectLeadersRequest, election_type=5,
                                    timeout=datetime.timedelta(seconds=5), topic_partitions=(
                                        make(elect_leaders.TopicPartitions, topic=topic, partitions=(0,)),)))
    assert int(answer.error_code) == INVALID_REQUEST
    assert [(p.partition_id, p.error_code) for r in answer.replica_election_results for p in r.partition_result] == [
        (0, INVALID_REQUEST)]
    (answer,) = ask(bootstrap, make(elect_leaders.ElectLeadersRequest, election_type=1,
                                    timeout=datetime.timedelta(seconds=5), topic_partitions=(
                                        make(elect_leaders.TopicPartitions, topic=topic, partitions=(0,)),)))
    assert (int(answer.error_code), [(p.partition_id, p.error_code) for r in answer.replica_election_results
                                     for p in r.partition_result]) == (NONE, [(0, ELECTION_NOT_NEEDED)])
