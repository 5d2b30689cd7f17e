"""``__consumer_offsets``: created on the first coordinator lookup, reported internal, closed to writes.

logwright keeps committed offsets as events, but clients look for Kafka's internal topic: a regex
subscription skips topics Metadata marks ``is_internal`` (franz-go and kafka-python do; librdkafka
matches internal topics too, on Kafka as on logwright). Runs on Apache Kafka too (``--against kafka``),
whose answers these expectations copy; the partition count is the broker's ``offsets.topic.num.partitions``.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka import KafkaConsumer
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from logwright.client.connection import Connection
from logwright.compat.registry import make

OFFSETS_TOPIC = "__consumer_offsets"
UNKNOWN_TOPIC_OR_PARTITION = 3

pytestmark = pytest.mark.differential


async def _metadata(bootstrap: str, names: tuple[str, ...] | None = None, find_group: str | None = None) -> Any:
    connection = await Connection.open(bootstrap, "internal-topics-test")
    try:
        if find_group is not None:
            await connection.request(make(FindCoordinatorRequest, key="", key_type=0, coordinator_keys=(find_group,)))
        topics = None if names is None else tuple(
            make(MetadataRequestTopic, topic_id=uuid.UUID(int=0), name=name) for name in names)
        return await connection.request(make(MetadataRequest, topics=topics, allow_auto_topic_creation=False,
                                             include_topic_authorized_operations=False))
    finally:
        await connection.close()


def _offsets_topic(bootstrap: str) -> Any:
    """The topic once a group coordinator was looked up (Kafka creates it in the background: poll)."""
    deadline = time.monotonic() + 60
    while True:
        response = asyncio.run(_metadata(bootstrap, find_group=f"lookup-{uuid.uuid4().hex[:8]}"))
        found = [topic for topic in response.topics if topic.name == OFFSETS_TOPIC]
        if found and found[0].partitions:
            return found[0]
        assert time.monotonic() < deadline, f"{OFFSETS_TOPIC} did not appear in Metadata"
        time.sleep(0.5)


def test_the_offsets_topic_is_listed_as_internal_with_the_configured_partitions(bootstrap: str) -> None:
    topic = _offsets_topic(bootstrap)
    assert topic.error_code == 0 and topic.is_internal
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = admin.describe_configs([resource])[resource].result(30)
    assert len(topic.partitions) == int(configs["offsets.topic.num.partitions"].value)
    resource = ConfigResource(ConfigResource.Type.TOPIC, OFFSETS_TOPIC)
    assert admin.describe_configs([resource])[resource].result(30)["cleanup.policy"].value == "compact"


def test_an_unknown_topic_named_like_an_internal_one_is_reported_internal(bootstrap: str) -> None:
    [answer] = asyncio.run(_metadata(bootstrap, names=(OFFSETS_TOPIC,))).topics
    assert answer.is_internal
    [regular] = asyncio.run(_metadata(bootstrap, names=(f"absent-{uuid.uuid4().hex[:8]}",))).topics
    assert (regular.error_code, regular.is_internal) == (UNKNOWN_TOPIC_OR_PARTITION, False)


def test_producing_to_the_offsets_topic_is_refused_as_an_invalid_topic(bootstrap: str) -> None:
    _offsets_topic(bootstrap)
    errors: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": bootstrap, "retries": 0})
    producer.produce(OFFSETS_TOPIC, value=b"forged", partition=0, on_delivery=lambda error, _: errors.append(error))
    assert producer.flush(30) == 0
    assert [error.code() if error else None for error in errors] == [KafkaError.TOPIC_EXCEPTION]


def test_a_regex_subscription_skips_the_internal_topic(bootstrap: str) -> None:
    """kafka-python's consumer leaves out topics Metadata marks internal (``exclude_internal_topics``)."""
    _offsets_topic(bootstrap)
    prefix = f"regex-{uuid.uuid4().hex[:8]}"
    topic = f"{prefix}-a"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=prefix, metadata_max_age_ms=500)
    try:
        consumer.subscribe(pattern=f"^({OFFSETS_TOPIC}|{prefix}-.*)$")
        deadline = time.monotonic() + 60
        while not consumer.assignment():
            assert time.monotonic() < deadline, "the regex subscription was never assigned"
            consumer.poll(200)
        assert {partition.topic for partition in consumer.assignment()} == {topic}
    finally:
        consumer.close()
