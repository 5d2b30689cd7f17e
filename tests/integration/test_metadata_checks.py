"""Metadata, DescribeCluster and DescribeConfigs details answered as Apache Kafka 4.4 answers (``--against kafka``):
a name that cannot be a topic's, a topic named by id (the id wins over a name beside it), an endpoint type that does
not exist, the message of a resource described.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kio.schema.describe_cluster.v1 import request as describe_cluster
from kio.schema.describe_configs.v4 import request as describe_configs
from kio.schema.metadata.v12 import request as metadata
from logwright.compat.registry import make

from .test_controller_timeouts import ask
from .test_list_offsets_checks import two_partition_topic

pytestmark = pytest.mark.differential

NONE, INVALID_TOPIC_EXCEPTION, UNKNOWN_TOPIC_ID, UNSUPPORTED_ENDPOINT_TYPE = 0, 17, 100, 115


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
