"""Static broker configs: node.id set at start-up, listeners reported as Kafka reports them.

Test harnesses written for Apache Kafka (kafka-python's own suite) run their broker as node 0 and read
``advertised.listeners`` back through DescribeConfigs; logwright must answer both like Kafka does.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.create_partitions.v3.request import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.schema.metadata.v12.request import MetadataRequest
from logwright.compat.broker import Broker, BrokerSettings
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import (
    create_partitions,
    create_topics,
    describe_configs,
    incremental_alter_configs,
    metadata,
)
from logwright.compat.kafka.config_resources import ConfigSource
from logwright.compat.registry import RequestContext
from logwright.compat.wire.messages import decode_response, encode_response
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker

BROKER = 4


@pytest.fixture
def node_zero(tmp_path: Path) -> Iterator[Broker]:
    store = RocksEventStore(tmp_path / "data")
    settings = BrokerSettings(host="127.0.0.1", port=19092, advertised_host="kafka.example", advertised_port=9093,
                              overrides={"node.id": "0"})
    yield in_process_broker(store, settings)
    store.close()


def call(broker: Broker, handle: Any, version: int, request: Any) -> Any:
    return asyncio.run(handle(RequestContext(broker, 0, version, 1, "tester", 1, "127.0.0.1"), request))


def as_received(api_key: int, version: int, answer: Any) -> Any:
    """The answer as a client reads it off the wire (Metadata answers topics it keeps encoded)."""
    return decode_response(api_key, version, encode_response(api_key, version, 7, answer))[1]


def test_node_id_is_the_id_in_metadata_and_partition_assignments(node_zero: Broker) -> None:
    timeout = datetime.timedelta(seconds=5)
    call(node_zero, create_topics.handle, 7, CreateTopicsRequest(topics=(CreatableTopic(
        name="t", num_partitions=1, replication_factor=1, assignments=(), configs=()),), timeout=timeout,
        validate_only=False))
    answer = as_received(3, 12, call(node_zero, metadata.handle, 12, MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)))
    assert [broker.node_id for broker in answer.brokers] == [0] and answer.controller_id == 0
    assert [p.leader_id for p in answer.topics[0].partitions] == [0]
    grown = call(node_zero, create_partitions.handle, 3, CreatePartitionsRequest(topics=(CreatePartitionsTopic(
        name="t", count=3, assignments=(CreatePartitionsAssignment(broker_ids=(0,)),) * 2),), timeout=timeout,
        validate_only=False))
    assert grown.results[0].error_code == ErrorCode.NONE, grown.results[0].error_message
    refused = call(node_zero, create_partitions.handle, 3, CreatePartitionsRequest(topics=(CreatePartitionsTopic(
        name="t", count=4, assignments=(CreatePartitionsAssignment(broker_ids=(1,)),)),), timeout=timeout,
        validate_only=False))
    assert refused.results[0].error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_listeners_are_static_read_only_and_cannot_be_altered(node_zero: Broker) -> None:
    request = DescribeConfigsRequest(resources=(DescribeConfigsResource(
        resource_type=BROKER, resource_name="0", configuration_keys=None),), include_synonyms=False,
        include_documentation=False)
    entries = {entry.name: entry for entry in call(node_zero, describe_configs.handle, 4, request).results[0].configs}
    advertised = entries["advertised.listeners"]
    assert (advertised.value, advertised.config_source, advertised.read_only, advertised.config_type) == (
        "PLAINTEXT://kafka.example:9093", ConfigSource.STATIC_BROKER_CONFIG, True, 7)
    assert advertised.synonyms == ()
    assert entries["listeners"].value == "PLAINTEXT://127.0.0.1:19092"
    assert (entries["node.id"].value, entries["node.id"].read_only) == ("0", True)
    altered = call(node_zero, incremental_alter_configs.handle, 1, IncrementalAlterConfigsRequest(resources=(
        AlterConfigsResource(resource_type=BROKER, resource_name="0", configs=(
            AlterableConfig(name="advertised.listeners", config_operation=0, value="PLAINTEXT://x:1"),)),),
        validate_only=False)).responses[0]
    assert (altered.error_code, altered.error_message) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [advertised.listeners]")


def test_a_node_id_that_is_not_a_number_is_refused_at_start(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "data")
    try:
        with pytest.raises(ValueError, match="node.id must be a non-negative integer, got 'one'"):
            Broker(store, BrokerSettings(overrides={"node.id": "one"}))
    finally:
        store.close()


@pytest.mark.parametrize("name", ["group.initial.rebalance.delay.ms", "group.min.session.timeout.ms",
                                  "group.max.session.timeout.ms"])
def test_the_group_timing_keys_are_static_as_in_kafka(node_zero: Broker, name: str) -> None:
    """A client setting the initial rebalance delay to 10**30 ms left every new group's joins unanswered."""
    altered = call(node_zero, incremental_alter_configs.handle, 1, IncrementalAlterConfigsRequest(resources=(
        AlterConfigsResource(resource_type=BROKER, resource_name="", configs=(
            AlterableConfig(name=name, config_operation=0, value="9" * 30),)),),
        validate_only=False)).responses[0]
    assert (altered.error_code, altered.error_message) == (
        ErrorCode.INVALID_REQUEST, f"Cannot update these configs dynamically: [{name}]")
