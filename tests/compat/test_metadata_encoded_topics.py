"""Metadata keeps each topic's entry encoded (issue 18): the bytes must be what a fresh encoding of the
current state gives, in every version, and never an older state's."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.create_partitions.v3.request import CreatePartitionsRequest, CreatePartitionsTopic
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from logwright.compat import authorized_operations
from logwright.compat.broker import Broker
from logwright.compat.kafka import create_partitions, create_topics, delete_topics, metadata
from logwright.compat.registry import RequestContext, make, response_module
from logwright.compat.wire.messages import decode_response, encode_response, request_type
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker

TIMEOUT = datetime.timedelta(seconds=5)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    store = RocksEventStore(tmp_path / "data")
    yield in_process_broker(store)
    store.close()


def call(broker: Broker, handle: Any, version: int, request: Any) -> Any:
    return asyncio.run(handle(RequestContext(broker, 0, version, 1, "tester", 1, "127.0.0.1"), request))


def ask_metadata(broker: Broker, version: int, name: str = "t") -> tuple[bytes, Any]:
    """The answer's bytes and the answer as a client reads them."""
    topic = importlib.import_module(f"kio.schema.metadata.v{version}.request").MetadataRequestTopic
    request = make(request_type(3, version), topics=(make(topic, name=name, topic_id=None),),
                   allow_auto_topic_creation=False, include_topic_authorized_operations=False,
                   include_cluster_authorized_operations=False)
    wire = encode_response(3, version, 7, call(broker, metadata.handle, version, request))
    return wire, decode_response(3, version, wire)[1]


def create(broker: Broker, partitions: int) -> None:
    call(broker, create_topics.handle, 7, CreateTopicsRequest(topics=(CreatableTopic(
        name="t", num_partitions=partitions, replication_factor=1, assignments=(), configs=()),),
        timeout=TIMEOUT, validate_only=False))


def fresh_encoding(broker: Broker, version: int, answer: Any) -> bytes:
    """The same answer with the topic's entry built now, not taken from what Metadata keeps."""
    state = broker.topic("t")
    assert state is not None
    module = response_module("metadata", version)
    operations = int(getattr(answer.topics[0], "topic_authorized_operations", authorized_operations.UNKNOWN))
    rebuilt = dataclasses.replace(answer, topics=(metadata._topic_entity(module, state, broker.node_id, operations),))
    return encode_response(3, version, 7, rebuilt)


@pytest.mark.parametrize("version", [1, 5, 9, 10, 12, 13])
def test_kept_entries_are_the_bytes_of_the_current_state(broker: Broker, version: int) -> None:
    create(broker, 3)
    first_wire, first = ask_metadata(broker, version)
    again_wire, _ = ask_metadata(broker, version)
    assert first_wire == again_wire == fresh_encoding(broker, version, first)
    assert [p.partition_index for p in first.topics[0].partitions] == [0, 1, 2]

    grown = call(broker, create_partitions.handle, 3, CreatePartitionsRequest(topics=(CreatePartitionsTopic(
        name="t", count=5, assignments=None),), timeout=TIMEOUT, validate_only=False))
    assert grown.results[0].error_code == 0
    grown_wire, after = ask_metadata(broker, version)
    assert [p.partition_index for p in after.topics[0].partitions] == [0, 1, 2, 3, 4]
    assert grown_wire == fresh_encoding(broker, version, after)


def test_a_topic_deleted_and_created_again_is_answered_with_its_new_id(broker: Broker) -> None:
    create(broker, 2)
    _, before = ask_metadata(broker, 12)
    deleted = call(broker, delete_topics.handle, 6, DeleteTopicsRequest(
        topics=(DeleteTopicState(name=None, topic_id=before.topics[0].topic_id),), timeout=TIMEOUT))
    assert deleted.responses[0].error_code == 0
    create(broker, 1)
    _, after = ask_metadata(broker, 12)
    assert after.topics[0].topic_id != before.topics[0].topic_id
    assert len(after.topics[0].partitions) == 1
