"""Authorized operations as Apache Kafka 4.4 without an authorizer reports them (``--against kafka``).

Without an authorizer (the shared brokers have none), as on Kafka, every operation a resource's type supports is
allowed: asked for, Metadata reports a topic's (even one that does not exist) and, in v8-v10, the cluster's;
DescribeCluster the cluster's; DescribeGroups, ConsumerGroupDescribe and ShareGroupDescribe a group's, but not in an
answer that is an error; DescribeTopicPartitions always reports a topic's. Not asked for, they are INT32_MIN.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from kio.schema.consumer_group_describe.v1 import request as consumer_describe
from kio.schema.describe_cluster.v1 import request as describe_cluster
from kio.schema.describe_groups.v5 import request as describe_groups_v5
from kio.schema.describe_groups.v6 import request as describe_groups_v6
from kio.schema.describe_topic_partitions.v0 import request as describe_topic_partitions
from kio.schema.metadata.v9 import request as metadata_v9
from kio.schema.metadata.v12 import request as metadata_v12
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .classic_member import classic_member
from .coordinator_ready import coordinator_ready
from .test_group_id_namespace import consumer_heartbeat_request
from .test_share_close_order import topic_with_records

pytestmark = pytest.mark.differential

UNKNOWN, TOPIC, GROUP, CLUSTER = -(2**31), 3576, 3400, 8096
"""Kafka's bits of READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS for a topic; READ,
DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS for a group; CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE for the cluster."""


def test_authorized_operations_without_an_authorizer(bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    classic, consumer, share, missing = (f"authorized-{kind}-{tag}" for kind in ("classic", "consumer", "share",
                                                                                  "missing"))
    topic = topic_with_records(bootstrap, share)
    member = classic_member(bootstrap, classic, topic)
    answers: dict[str, Any] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "authorized-operations")
        request = connection.request
        try:
            for group in (consumer, share, missing):
                await coordinator_ready(connection, group)
            await request(consumer_heartbeat_request(consumer, str(uuid.uuid4()), 0, topic))
            await request(make(ShareGroupHeartbeatRequest, group_id=share, member_id=str(uuid.uuid4()),
                               member_epoch=0, rack_id=None, subscribed_topic_names=(topic,)))
            for asked in (False, True):
                found = await request(make(
                    metadata_v12.MetadataRequest, allow_auto_topic_creation=False,
                    include_topic_authorized_operations=asked, topics=(
                        make(metadata_v12.MetadataRequestTopic, topic_id=None, name=topic),
                        make(metadata_v12.MetadataRequestTopic, topic_id=None, name=f"authorized-none-{tag}"))))
                answers[f"Metadata, asked {asked}"] = sorted(
                    (int(entry.error_code), int(entry.topic_authorized_operations)) for entry in found.topics)
                cluster = await request(make(metadata_v9.MetadataRequest, topics=(), allow_auto_topic_creation=False,
                                             include_cluster_authorized_operations=asked,
                                             include_topic_authorized_operations=asked))
                answers[f"Metadata v9 cluster, asked {asked}"] = int(cluster.cluster_authorized_operations)
                described = await request(make(describe_cluster.DescribeClusterRequest, endpoint_type=1,
                                               include_cluster_authorized_operations=asked))
                answers[f"DescribeCluster, asked {asked}"] = int(described.cluster_authorized_operations)
                groups = await request(make(describe_groups_v5.DescribeGroupsRequest, groups=(classic, missing),
                                            include_authorized_operations=asked))
                answers[f"DescribeGroups v5, asked {asked}"] = sorted(  # in Kafka's order of coordinator partitions
                    (entry.group_state, int(entry.authorized_operations)) for entry in groups.groups)
                groups = await request(make(describe_groups_v6.DescribeGroupsRequest, groups=(missing,),
                                            include_authorized_operations=asked))
                answers[f"DescribeGroups v6 of a missing group, asked {asked}"] = [
                    (int(entry.error_code), int(entry.authorized_operations)) for entry in groups.groups]
                groups = await request(make(consumer_describe.ConsumerGroupDescribeRequest,
                                            group_ids=(consumer, missing), include_authorized_operations=asked))
                answers[f"ConsumerGroupDescribe, asked {asked}"] = sorted(  # Kafka's order: coordinator partitions
                    (int(entry.error_code), int(entry.authorized_operations),
                     [member.subscribed_topic_regex for member in entry.members]) for entry in groups.groups)
                groups = await request(make(ShareGroupDescribeRequest, group_ids=(share, missing),
                                            include_authorized_operations=asked))
                answers[f"ShareGroupDescribe, asked {asked}"] = sorted(
                    (int(entry.error_code), int(entry.authorized_operations)) for entry in groups.groups)
            partitions = await request(make(describe_topic_partitions.DescribeTopicPartitionsRequest, cursor=None,
                                            topics=(describe_topic_partitions.TopicRequest(name=topic),),
                                            response_partition_limit=10))
            answers["DescribeTopicPartitions"] = int(partitions.topics[0].topic_authorized_operations)
        finally:
            await connection.close()

    try:
        asyncio.run(scenario())
    finally:
        member.close()
    unknown_topic, not_found = 3, 69
    expected: dict[str, Any] = {"DescribeTopicPartitions": TOPIC}
    for asked in (False, True):
        def given(operations: int, asked: bool = asked) -> int:
            return operations if asked else UNKNOWN

        expected |= {
            f"Metadata, asked {asked}": sorted([(0, given(TOPIC)), (unknown_topic, given(TOPIC))]),
            f"Metadata v9 cluster, asked {asked}": given(CLUSTER),
            f"DescribeCluster, asked {asked}": given(CLUSTER),
            f"DescribeGroups v5, asked {asked}": [("Dead", given(GROUP)), ("Stable", given(GROUP))],
            f"DescribeGroups v6 of a missing group, asked {asked}": [(not_found, UNKNOWN)],
            f"ConsumerGroupDescribe, asked {asked}": sorted([(0, given(GROUP), [""]), (not_found, UNKNOWN, [])]),
            f"ShareGroupDescribe, asked {asked}": sorted([(0, given(GROUP)), (not_found, UNKNOWN)]),
        }
    assert answers == expected
