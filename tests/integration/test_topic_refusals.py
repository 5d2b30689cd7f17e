"""CreateTopics and CreatePartitions refusals over the wire: Kafka 4.4's codes and messages, in its order.

The messages are what ``kafka-topics`` prints (its "Error while executing topic command : ..." line), so they are
Kafka's own words (probed against Apache Kafka 4.4; ``--against kafka`` runs the same requests there). The order
of the checks is Kafka's controller's: a name (invalid, or colliding with an existing topic's metric name), then
whether the topic exists (whatever else is wrong), then its partitions, replication factor and assignment.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.create_partitions.v3 import request as create_partitions
from kio.schema.create_topics.v7 import request as create_topics
from kio.schema.delete_topics.v6 import request as delete_topics
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .broker_process import BrokerProcess

TIMEOUT = datetime.timedelta(seconds=30)


def topic(name: str, partitions: int = -1, factor: int = -1,
          assignments: Sequence[tuple[int, Sequence[int]]] = ()) -> Any:
    return make(create_topics.CreatableTopic, name=name, num_partitions=partitions, replication_factor=factor,
                assignments=tuple(make(create_topics.CreatableReplicaAssignment, partition_index=index,
                                       broker_ids=tuple(brokers)) for index, brokers in assignments), configs=())


def created(bootstrap: str, *topics: Any, validate_only: bool = False) -> list[tuple[str, int, str | None]]:
    answer = one_request(bootstrap, make(create_topics.CreateTopicsRequest, topics=topics, timeout=TIMEOUT,
                                         validate_only=validate_only), "refusals")
    return [(result.name, result.error_code, result.error_message) for result in answer.topics]


def grown(bootstrap: str, name: str, count: int,
          assignments: Sequence[Sequence[int]] | None = None) -> tuple[int, str | None]:
    """One CreatePartitions entry's answer; ``assignments`` None is the null list, ``()`` an empty one."""
    listed = None if assignments is None else tuple(
        make(create_partitions.CreatePartitionsAssignment, broker_ids=tuple(brokers)) for brokers in assignments)
    request_topic = make(create_partitions.CreatePartitionsTopic, name=name, count=count, assignments=listed)
    answer = one_request(bootstrap, make(create_partitions.CreatePartitionsRequest, topics=(request_topic,),
                                         timeout=TIMEOUT, validate_only=False), "refusals")
    [result] = answer.results
    return result.error_code, result.error_message


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


NO_BROKER_2 = "The manual partition assignment includes broker 2, but no such broker is registered."
EMPTY_LIST = "The manual partition assignment includes an empty replica list."
TWICE = "The manual partition assignment includes the broker 1 more than once."


@pytest.mark.parametrize(("partitions", "factor", "assignments", "code", "message"), [
    (1, 0, (), ErrorCode.INVALID_REPLICATION_FACTOR,
     "Replication factor must be larger than 0, or -1 to use the default value."),
    (1, -2, (), ErrorCode.INVALID_REPLICATION_FACTOR,
     "Replication factor must be larger than 0, or -1 to use the default value."),
    (1, 2, (), ErrorCode.INVALID_REPLICATION_FACTOR,
     "Unable to replicate the partition 2 time(s): The target replication factor of 2 cannot be reached because "
     "only 1 broker(s) are registered or some brokers have all their log directories cordoned."),
    (0, 1, (), ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."),
    (-2, 1, (), ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."),
    (-1, -1, ((0, ()),), ErrorCode.INVALID_REPLICA_ASSIGNMENT, EMPTY_LIST),
    (-1, -1, ((0, (1, 1)),), ErrorCode.INVALID_REPLICA_ASSIGNMENT, TWICE),
    (-1, -1, ((0, (2,)),), ErrorCode.INVALID_REPLICA_ASSIGNMENT, NO_BROKER_2),
    (-1, -1, ((0, (1, 2)),), ErrorCode.INVALID_REPLICA_ASSIGNMENT, NO_BROKER_2),
    (-1, -1, ((0, (1,)), (2, (1,))), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "partitions should be a consecutive 0-based integer sequence"),
    (2, -1, ((0, (1,)),), ErrorCode.INVALID_REQUEST,
     "A manual partition assignment was specified, but numPartitions was not set to -1."),
])
def test_a_topic_is_refused_in_kafkas_words(bootstrap: str, partitions: int, factor: int,
                                            assignments: Sequence[tuple[int, Sequence[int]]], code: ErrorCode,
                                            message: str) -> None:
    name = unique("refused")
    assert created(bootstrap, topic(name, partitions, factor, assignments)) == [(name, code, message)]


def test_a_name_of_an_existing_topics_metric_name_collides(bootstrap: str) -> None:
    """'.' and '_' map to one metric name: a second topic of one form is INVALID_TOPIC_EXCEPTION, validated or not;
    the same name again is TOPIC_ALREADY_EXISTS, whatever else is wrong with the request (a replication factor of 3).
    Topics created together in one request are not checked against each other, as on Kafka."""
    stem = uuid.uuid4().hex[:8]
    dotted, underscored = f"metric.{stem}", f"metric_{stem}"
    assert created(bootstrap, topic(dotted, 1)) == [(dotted, ErrorCode.NONE, None)]
    collides = (ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{underscored}' collides with existing topic: {dotted}")
    assert created(bootstrap, topic(underscored, 1)) == [(underscored, *collides)]
    assert created(bootstrap, topic(underscored, 1), validate_only=True) == [(underscored, *collides)]
    assert created(bootstrap, topic(underscored, 1, 3)) == [(underscored, *collides)]
    assert created(bootstrap, topic(dotted, 1, 3)) == [
        (dotted, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{dotted}' already exists.")]
    together = f"pair.{stem}", f"pair_{stem}"
    assert created(bootstrap, topic(together[0], 1), topic(together[1], 1)) == [
        (together[0], ErrorCode.NONE, None), (together[1], ErrorCode.NONE, None)]


@pytest.mark.parametrize(("count", "assignments", "code", "message"), [
    (1, None, ErrorCode.INVALID_PARTITIONS, "Topic already has 1 partition(s)."),
    (0, None, ErrorCode.INVALID_PARTITIONS,
     "The topic {name} currently has 1 partition(s); 0 would not be an increase."),
    (3, (), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Attempted to add 2 additional partition(s), but only 0 assignment(s) were specified."),
    (3, ((1,),), ErrorCode.INVALID_REPLICA_ASSIGNMENT,
     "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."),
    (2, ((2,),), ErrorCode.INVALID_REPLICA_ASSIGNMENT, NO_BROKER_2),
    (2, ((),), ErrorCode.INVALID_REPLICA_ASSIGNMENT, EMPTY_LIST),
    (2, ((1, 1),), ErrorCode.INVALID_REPLICA_ASSIGNMENT, TWICE),
    (2, ((1,),), ErrorCode.NONE, None),
])
def test_partitions_are_refused_in_kafkas_words(bootstrap: str, count: int,
                                                assignments: Sequence[Sequence[int]] | None, code: ErrorCode,
                                                message: str | None) -> None:
    name = unique("grow")
    assert created(bootstrap, topic(name, 1)) == [(name, ErrorCode.NONE, None)]
    expected = None if message is None else message.format(name=name)
    assert grown(bootstrap, name, count, assignments) == (code, expected)


def test_partitions_of_no_topic_are_unknown_without_a_message(bootstrap: str) -> None:
    assert grown(bootstrap, unique("nosuch"), 2) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)


@pytest.mark.logwright_only(reason="restarts a private broker")
def test_collisions_are_known_after_a_restart_and_end_with_the_topic(broker: BrokerProcess) -> None:
    assert created(broker.bootstrap, topic("kept.one", 1)) == [("kept.one", ErrorCode.NONE, None)]
    assert broker.stop() == 0, broker.log_tail()
    broker.start()
    assert created(broker.bootstrap, topic("kept_one", 1))[0][1] == ErrorCode.INVALID_TOPIC_EXCEPTION
    deleted = one_request(broker.bootstrap, make(delete_topics.DeleteTopicsRequest, topics=(
        make(delete_topics.DeleteTopicState, name="kept.one", topic_id=uuid.UUID(int=0)),), timeout=TIMEOUT),
        "refusals")
    assert [result.error_code for result in deleted.responses] == [ErrorCode.NONE]
    assert created(broker.bootstrap, topic("kept_one", 1)) == [("kept_one", ErrorCode.NONE, None)]
