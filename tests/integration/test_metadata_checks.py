"""Metadata, DescribeTopicPartitions, DescribeCluster, DescribeConfigs and FindCoordinator details answered as Apache
Kafka 4.4 answers (``--against kafka``): a name that cannot be a topic's, a topic named by id (the id wins over a
name beside it), pages of partitions and the cursors Kafka refuses, an endpoint type that does not exist, the
messages of a resource described and a coordinator found.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from kio.schema.describe_cluster.v1 import request as describe_cluster
from kio.schema.describe_configs.v4 import request as describe_configs
from kio.schema.describe_topic_partitions.v0 import request as describe_topic_partitions
from kio.schema.find_coordinator.v3 import request as find_coordinator_v3
from kio.schema.find_coordinator.v4 import request as find_coordinator_v4
from kio.schema.metadata.v12 import request as metadata
from logwright.compat.registry import make

from .test_controller_timeouts import ask
from .test_list_offsets_checks import two_partition_topic

pytestmark = pytest.mark.differential

UNKNOWN_SERVER_ERROR, NONE, INVALID_TOPIC_EXCEPTION, INVALID_REQUEST, UNKNOWN_TOPIC_ID = -1, 0, 17, 42, 100
UNSUPPORTED_ENDPOINT_TYPE, COORDINATOR_NOT_AVAILABLE = 115, 15


def topics(bootstrap: str, *named: tuple[str | None, uuid.UUID | None], create: bool = False) -> list[Any]:
    (answer,) = ask(bootstrap, make(
        metadata.MetadataRequest, topics=tuple(make(metadata.MetadataRequestTopic, name=name, topic_id=topic_id)
                                               for name, topic_id in named),
        allow_auto_topic_creation=create, include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False))
    return [(t.name, int(t.error_code), len(t.partitions)) for t in answer.topics]


def topic_id(bootstrap: str, name: str) -> uuid.UUID:
    (answer,) = ask(bootstrap, make(
        metadata.MetadataRequest, topics=(make(metadata.MetadataRequestTopic, name=name, topic_id=None),),
        allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
        include_topic_authorized_operations=False))
    (found,) = answer.topics
    return uuid.UUID(str(found.topic_id))


@pytest.mark.parametrize("create", [False, True])
def test_a_name_that_cannot_be_a_topics_is_invalid(bootstrap: str, create: bool) -> None:
    for name in ("bad name!", "", "x" * 250, ".."):
        assert topics(bootstrap, (name, None), create=create) == [(name, INVALID_TOPIC_EXCEPTION, 0)], name


def test_a_topic_id_names_the_topic_whatever_name_comes_with_it(bootstrap: str) -> None:
    topic = two_partition_topic(bootstrap, "metadata-checks", ())
    known = topic_id(bootstrap, topic)
    assert topics(bootstrap, (None, known)) == [(topic, NONE, 2)]
    assert topics(bootstrap, ("some-other-name", known)) == [(topic, NONE, 2)]
    assert topics(bootstrap, (topic, uuid.uuid4())) == [(None, UNKNOWN_TOPIC_ID, 0)]


def test_an_endpoint_type_that_does_not_exist(bootstrap: str) -> None:
    (answer,) = ask(bootstrap, make(describe_cluster.DescribeClusterRequest, endpoint_type=3,
                                    include_cluster_authorized_operations=False))
    assert (int(answer.error_code), answer.error_message, int(answer.endpoint_type), answer.brokers) == (
        UNSUPPORTED_ENDPOINT_TYPE, "Unsupported endpoint type 3", 1, ())


def test_a_resource_described_carries_an_empty_message(bootstrap: str) -> None:
    topic = two_partition_topic(bootstrap, "metadata-checks", ())
    (answer,) = ask(bootstrap, make(describe_configs.DescribeConfigsRequest, resources=(
        make(describe_configs.DescribeConfigsResource, resource_type=2, resource_name=topic,
             configuration_keys=("retention.ms",)),
        make(describe_configs.DescribeConfigsResource, resource_type=32, resource_name="metadata-checks-group",
             configuration_keys=("consumer.session.timeout.ms",))), include_synonyms=False,
        include_documentation=False))
    assert [(int(r.error_code), r.error_message, [c.name for c in r.configs]) for r in answer.results] == [
        (NONE, "", ["retention.ms"]), (NONE, "", ["consumer.session.timeout.ms"])]


def describe_partitions(bootstrap: str, names: list[str], limit: int = 2000,
                        cursor: tuple[str, int] | None = None) -> tuple[list[tuple[str, int, list[int]]], Any]:
    (answer,) = ask(bootstrap, make(
        describe_topic_partitions.DescribeTopicPartitionsRequest,
        topics=tuple(make(describe_topic_partitions.TopicRequest, name=name) for name in names),
        response_partition_limit=limit,
        cursor=make(describe_topic_partitions.Cursor, topic_name=cursor[0], partition_index=cursor[1])
        if cursor else None))
    found = [(t.name, int(t.error_code), [int(p.partition_index) for p in t.partitions]) for t in answer.topics]
    cursor_back = answer.next_cursor
    return found, (cursor_back.topic_name, int(cursor_back.partition_index)) if cursor_back is not None else None


def test_topic_partitions_pages_and_what_kafka_refuses(bootstrap: str) -> None:
    first = two_partition_topic(bootstrap, "metadata-checks-a", ())
    second = two_partition_topic(bootstrap, "metadata-checks-b", ())
    assert describe_partitions(bootstrap, [first, second], 0) == ([(first, NONE, [0])], (first, 1))  # at least one
    assert describe_partitions(bootstrap, [first, second], -5, (first, 1)) == ([(first, NONE, [1])], (second, 0))
    assert describe_partitions(bootstrap, [first, second], 3, (second, 0)) == ([(second, NONE, [0, 1])], None)
    assert describe_partitions(bootstrap, ["bad name!"]) == ([("bad name!", INVALID_TOPIC_EXCEPTION, [])], None)
    assert describe_partitions(bootstrap, [""]) == ([("", UNKNOWN_SERVER_ERROR, [])], None)
    assert describe_partitions(bootstrap, [second], 5, (first, 0)) == ([(second, INVALID_REQUEST, [])], None)
    assert describe_partitions(bootstrap, [first, second], 5, (first, -1)) == (
        [(first, INVALID_REQUEST, []), (second, INVALID_REQUEST, [])], None)


@pytest.mark.parametrize("started_with", [{"max.request.partition.size.limit": "3"}], indirect=True)
def test_the_brokers_partition_limit_bounds_every_page(started_with: str) -> None:
    """``max.request.partition.size.limit`` (a static broker key) caps the limit a request asks for."""
    first = two_partition_topic(started_with, "metadata-limit-a", ())
    second = two_partition_topic(started_with, "metadata-limit-b", ())
    assert describe_partitions(started_with, [first, second]) == (
        [(first, NONE, [0, 1]), (second, NONE, [0])], (second, 1))
    assert describe_partitions(started_with, [first, second], 2) == ([(first, NONE, [0, 1])], (second, 0))


def test_a_coordinator_found_carries_kafkas_message(bootstrap: str) -> None:
    """A fresh Kafka answers COORDINATOR_NOT_AVAILABLE while the first FindCoordinator creates its offsets and
    transaction topics; clients ask again, and so does this (logwright has its coordinators from the start)."""
    deadline = time.monotonic() + 30
    while True:
        (batched, single) = ask(
            bootstrap,
            make(find_coordinator_v4.FindCoordinatorRequest, key_type=0, coordinator_keys=("metadata-checks",)),
            make(find_coordinator_v3.FindCoordinatorRequest, key_type=1, key="metadata-checks"))
        not_yet = [c for c in batched.coordinators if int(c.error_code) == COORDINATOR_NOT_AVAILABLE]
        if not (not_yet or int(single.error_code) == COORDINATOR_NOT_AVAILABLE) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert [(int(c.error_code), c.error_message) for c in batched.coordinators] == [(NONE, "")]
    assert (int(single.error_code), single.error_message) == (NONE, "NONE")
