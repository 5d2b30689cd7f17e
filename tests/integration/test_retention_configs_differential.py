"""DescribeConfigs of topic keys with broker synonyms (``retention.ms`` <- ``log.retention.*``, ``segment.bytes`` <-
``log.segment.bytes``, ``segment.ms`` <- ``log.roll.*``, ``cleanup.policy`` <- ``log.cleanup.policy``, ...) on a
broker started with some of them, on logwright and on Apache Kafka (``pytest --against kafka``): the value is the
effective one and the broker keys are listed as synonyms the way Kafka lists them (STATIC_BROKER_CONFIG, then
DEFAULT_CONFIG), including Kafka's quirk that a synonym listed after an unset higher one is dropped (only
``log.retention.minutes`` set: ``retention.ms`` without synonyms). A topic created without configs takes the
broker's values (compacted under ``log.cleanup.policy=compact``)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from kafka.admin import ConfigResource, KafkaAdminClient, NewTopic

STATIC = "STATIC_BROKER_CONFIG"
DEFAULT = "DEFAULT_CONFIG"
TOPIC = "DYNAMIC_TOPIC_CONFIG"
MS_AND_HOURS = {"log.retention.ms": "120000", "log.retention.hours": "2", "log.retention.bytes": "1000000"}
MINUTES_ONLY = {"log.retention.minutes": "60"}


def described(bootstrap: str, topic_configs: dict[str, str], names: list[str] | None = None) -> dict[str, Any]:
    """A new topic's retention.ms and retention.bytes (or ``names``): value, source, synonyms as (name, value,
    source)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        topic = f"syn-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs=topic_configs)])
        deadline = time.monotonic() + 30
        while True:  # kafka-python drops the error of a topic the broker does not know yet
            resource = ConfigResource("TOPIC", topic, names or ["retention.ms", "retention.bytes"])
            result = admin.describe_configs([resource], include_synonyms=True, config_filter="all")["topic"][topic]
            if result or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        return {name: (entry["value"], entry["config_source"],
                       [(synonym["name"], synonym["value"], synonym["source"]) for synonym in entry["synonyms"]])
                for name, entry in result.items()}
    finally:
        admin.close()


@pytest.mark.parametrize("started_with", [MS_AND_HOURS], indirect=True)
def test_broker_retention_configs_are_the_topic_defaults_and_its_synonyms(started_with: str) -> None:
    bytes_synonyms = [("log.retention.bytes", "1000000", STATIC), ("log.retention.bytes", "-1", DEFAULT)]
    ms_synonyms = [("log.retention.ms", "120000", STATIC), ("log.retention.hours", "2", STATIC),
                   ("log.retention.hours", "168", DEFAULT)]
    assert described(started_with, {}) == {
        "retention.ms": ("120000", STATIC, ms_synonyms),
        "retention.bytes": ("1000000", STATIC, bytes_synonyms),
    }
    assert described(started_with, {"retention.ms": "5000", "retention.bytes": "7000"}) == {
        "retention.ms": ("5000", TOPIC, [("retention.ms", "5000", TOPIC), *ms_synonyms]),
        "retention.bytes": ("7000", TOPIC, [("retention.bytes", "7000", TOPIC), *bytes_synonyms]),
    }


@pytest.mark.parametrize("started_with", [MINUTES_ONLY], indirect=True)
def test_minutes_alone_give_the_value_but_no_synonyms_as_on_kafka(started_with: str) -> None:
    assert described(started_with, {}) == {
        "retention.ms": ("3600000", DEFAULT, []),
        "retention.bytes": ("-1", DEFAULT, [("log.retention.bytes", "-1", DEFAULT)]),
    }


SEGMENTS_AND_POLICY = {"log.segment.bytes": "2097152", "log.roll.hours": "2", "log.cleanup.policy": "compact",
                       "log.cleaner.delete.retention.ms": "1000", "message.max.bytes": "2000000"}
ROLL_MS = {"log.roll.ms": "600000"}
INHERITED = ["segment.bytes", "segment.ms", "cleanup.policy", "delete.retention.ms", "max.message.bytes",
             "min.compaction.lag.ms", "max.compaction.lag.ms", "min.cleanable.dirty.ratio", "compression.type",
             "unclean.leader.election.enable", "message.timestamp.type", "message.timestamp.before.max.ms",
             "message.timestamp.after.max.ms", "max.decompressed.message.bytes"]
"""Not min.insync.replicas: Kafka 4.4 lists a cluster-wide dynamic min.insync.replicas=1 it stores itself when the
cluster is formatted (DYNAMIC_DEFAULT_BROKER_CONFIG, measured); logwright has no such stored default."""


@pytest.mark.parametrize("started_with", [{}], indirect=True)
def test_every_inherited_topic_key_lists_its_broker_default_as_kafka_does(started_with: str) -> None:
    long_max = "9223372036854775807"
    assert described(started_with, {}, INHERITED) == {
        "segment.bytes": ("1073741824", DEFAULT, [("log.segment.bytes", "1073741824", DEFAULT)]),
        "segment.ms": ("604800000", DEFAULT, []),  # log.roll.ms has no default: Kafka drops log.roll.hours
        "cleanup.policy": ("delete", DEFAULT, [("log.cleanup.policy", "delete", DEFAULT)]),
        "delete.retention.ms": ("86400000", DEFAULT, [("log.cleaner.delete.retention.ms", "86400000", DEFAULT)]),
        "max.message.bytes": ("1048588", DEFAULT, [("message.max.bytes", "1048588", DEFAULT)]),
        "min.compaction.lag.ms": ("0", DEFAULT, [("log.cleaner.min.compaction.lag.ms", "0", DEFAULT)]),
        "max.compaction.lag.ms": (long_max, DEFAULT, [("log.cleaner.max.compaction.lag.ms", long_max, DEFAULT)]),
        "min.cleanable.dirty.ratio": ("0.5", DEFAULT, [("log.cleaner.min.cleanable.ratio", "0.5", DEFAULT)]),
        "compression.type": ("producer", DEFAULT, [("compression.type", "producer", DEFAULT)]),
        "unclean.leader.election.enable": ("false", DEFAULT, [("unclean.leader.election.enable", "false", DEFAULT)]),
        "message.timestamp.type": ("CreateTime", DEFAULT, [("log.message.timestamp.type", "CreateTime", DEFAULT)]),
        "message.timestamp.before.max.ms": (long_max, DEFAULT,
                                            [("log.message.timestamp.before.max.ms", long_max, DEFAULT)]),
        "message.timestamp.after.max.ms": ("3600000", DEFAULT,
                                           [("log.message.timestamp.after.max.ms", "3600000", DEFAULT)]),
        "max.decompressed.message.bytes": ("2147483639", DEFAULT,
                                           [("max.decompressed.message.bytes", "2147483639", DEFAULT)]),
    }


@pytest.mark.parametrize("started_with", [SEGMENTS_AND_POLICY], indirect=True)
def test_broker_segment_and_policy_configs_are_the_topic_values(started_with: str) -> None:
    """Started with log.segment.bytes, log.roll.hours, log.cleanup.policy=compact: a topic created without configs
    has them as its values (and refuses a record without a key, being compacted); its own override comes first."""
    names = ["segment.bytes", "segment.ms", "cleanup.policy", "delete.retention.ms", "max.message.bytes"]
    segment_bytes = [("log.segment.bytes", "2097152", STATIC), ("log.segment.bytes", "1073741824", DEFAULT)]
    policy = [("log.cleanup.policy", "compact", STATIC), ("log.cleanup.policy", "delete", DEFAULT)]
    assert described(started_with, {}, names) == {
        "segment.bytes": ("2097152", STATIC, segment_bytes),
        "segment.ms": ("7200000", DEFAULT, []),
        "cleanup.policy": ("compact", STATIC, policy),
        "delete.retention.ms": ("1000", STATIC, [("log.cleaner.delete.retention.ms", "1000", STATIC),
                                                 ("log.cleaner.delete.retention.ms", "86400000", DEFAULT)]),
        "max.message.bytes": ("2000000", STATIC, [("message.max.bytes", "2000000", STATIC),
                                                  ("message.max.bytes", "1048588", DEFAULT)]),
    }
    assert described(started_with, {"segment.bytes": "1048576", "cleanup.policy": "delete"},
                     ["segment.bytes", "cleanup.policy"]) == {
        "segment.bytes": ("1048576", TOPIC, [("segment.bytes", "1048576", TOPIC), *segment_bytes]),
        "cleanup.policy": ("delete", TOPIC, [("cleanup.policy", "delete", TOPIC), *policy]),
    }
    topic = f"inherit-{uuid.uuid4().hex[:8]}"
    KafkaAdminClient(bootstrap_servers=started_with).create_topics([NewTopic(topic, 1, 1)])
    outcomes: list[Any] = []
    producer = Producer({"bootstrap.servers": started_with, "retries": 0})
    for key in (None, b"k"):  # one batch each: a keyless record refuses its whole batch
        producer.produce(topic, value=b"v", key=key, partition=0, on_delivery=lambda error, _: outcomes.append(error))
        assert producer.flush(30) == 0
    assert [None if error is None else error.code() for error in outcomes] == [KafkaError.INVALID_RECORD, None]


@pytest.mark.parametrize("started_with", [ROLL_MS], indirect=True)
def test_log_roll_ms_comes_before_log_roll_hours(started_with: str) -> None:
    assert described(started_with, {}, ["segment.ms"]) == {
        "segment.ms": ("600000", STATIC, [("log.roll.ms", "600000", STATIC), ("log.roll.hours", "168", DEFAULT)]),
    }


ROLL_BOTH = {"log.roll.ms": "600000", "log.roll.hours": "2", "log.segment.bytes": "2097152"}


@pytest.mark.parametrize("started_with", [ROLL_BOTH], indirect=True)
def test_broker_keys_list_their_family_from_their_own_name_as_kafka_does(started_with: str) -> None:
    """The BROKER resource: ``log.roll.ms`` lists ``log.roll.hours`` after it, ``log.roll.hours`` only itself, and a
    key without a default that is not set (``log.retention.ms``) has no value and no synonyms."""
    names = ["log.roll.ms", "log.roll.hours", "log.retention.ms", "log.retention.hours", "log.segment.bytes"]
    admin = KafkaAdminClient(bootstrap_servers=started_with, request_timeout_ms=30000)
    try:
        result = admin.describe_configs([ConfigResource("BROKER", "1", names)], include_synonyms=True,
                                        config_filter="all")["broker"]["1"]
    finally:
        admin.close()
    hours = [("log.roll.hours", "2", STATIC), ("log.roll.hours", "168", DEFAULT)]
    assert {name: (entry["value"], entry["config_source"],
                   [(synonym["name"], synonym["value"], synonym["source"]) for synonym in entry["synonyms"]])
            for name, entry in result.items()} == {
        "log.roll.ms": ("600000", STATIC, [("log.roll.ms", "600000", STATIC), *hours]),
        "log.roll.hours": ("2", STATIC, hours),
        "log.retention.ms": (None, DEFAULT, []),
        "log.retention.hours": ("168", DEFAULT, [("log.retention.hours", "168", DEFAULT)]),
        "log.segment.bytes": ("2097152", STATIC, [("log.segment.bytes", "2097152", STATIC),
                                                  ("log.segment.bytes", "1073741824", DEFAULT)]),
    }
