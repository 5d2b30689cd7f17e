"""Requests that decode but carry what a version cannot serve get Kafka's answer, not a logged exception and a
closed connection (a hostile-input campaign in session 32). Differential: Apache Kafka 4.4 answers the same."""

from __future__ import annotations

import datetime
import time
import uuid

import pytest
from kio.schema.create_partitions.v3 import request as create_partitions_v3
from kio.schema.create_topics.v7 import request as create_topics_v7
from kio.schema.metadata.v10 import request as metadata_v10
from kio.schema.metadata.v11 import request as metadata_v11

from .consumer_protocol_wire import request

INVALID_REQUEST = 42


@pytest.mark.differential
def test_metadata_v10_and_v11_refuse_topics_named_by_id(bootstrap: str) -> None:
    topic_id = uuid.uuid4()
    by_id = request(bootstrap, metadata_v10.MetadataRequest(
        topics=(metadata_v10.MetadataRequestTopic(topic_id=topic_id, name=None),), allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False, include_topic_authorized_operations=False))
    assert [(int(t.error_code), t.name, t.topic_id) for t in by_id.topics] == [(INVALID_REQUEST, "", topic_id)]
    both = request(bootstrap, metadata_v11.MetadataRequest(
        topics=(metadata_v11.MetadataRequestTopic(topic_id=topic_id, name="named-too"),
                metadata_v11.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name="plain")),
        allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    assert [(int(t.error_code), t.name) for t in both.topics] == [(INVALID_REQUEST, "named-too"),
                                                                   (INVALID_REQUEST, "plain")]


POLICY_VIOLATION = 44


def _create_topics(bootstrap: str, counts: list[int]) -> list[tuple[int, str | None]]:
    answer = request(bootstrap, create_topics_v7.CreateTopicsRequest(topics=tuple(
        create_topics_v7.CreatableTopic(name=f"flood-{uuid.uuid4().hex[:8]}", num_partitions=count,
                                        replication_factor=1, assignments=(), configs=()) for count in counts),
        timeout=datetime.timedelta(seconds=30), validate_only=False))
    return [(int(topic.error_code), topic.error_message) for topic in answer.topics]


@pytest.mark.differential
def test_a_request_for_more_than_10000_partitions_is_refused_whole(bootstrap: str) -> None:
    """One CreateTopics of 50 topics x 10,000 partitions made 500,000 partitions at once; Kafka's controller refuses
    a request that adds up to more than 10,000, and so does logwright, CreatePartitions alike."""
    excessive = (POLICY_VIOLATION, "Excessively large number of partitions per request.")
    assert _create_topics(bootstrap, [6000, 6000]) == [excessive, excessive]
    assert _create_topics(bootstrap, [10_001]) == [excessive]
    names = [f"grow-{uuid.uuid4().hex[:8]}" for _ in range(2)]
    created = request(bootstrap, create_topics_v7.CreateTopicsRequest(topics=tuple(
        create_topics_v7.CreatableTopic(name=name, num_partitions=1, replication_factor=1, assignments=(),
                                        configs=()) for name in names),
        timeout=datetime.timedelta(seconds=30), validate_only=False))
    assert [int(topic.error_code) for topic in created.topics] == [0, 0]
    time.sleep(1)  # Kafka's brokers learn of the new topics from the controller
    grown = request(bootstrap, create_partitions_v3.CreatePartitionsRequest(topics=tuple(
        create_partitions_v3.CreatePartitionsTopic(name=name, count=6000, assignments=None) for name in names),
        timeout=datetime.timedelta(seconds=30), validate_only=False))
    assert [(int(result.error_code), result.error_message) for result in grown.results] == [
        (POLICY_VIOLATION, "Excessively large number of additional partitions per request.")] * 2
