"""Kafka's topic configs for segment files, flushing, replication throttles, recompression levels and tiered storage,
which logwright accepts without effect (`core/config/kafka_log_keys.py`), answered as Apache Kafka 4.4 answers
(``--against kafka``): their defaults and types, every value Kafka refuses (INVALID_CONFIG) and takes, and a topic
created with them.
"""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

import pytest
from kio.schema.alter_configs.v2 import request as legacy_alter_configs
from kio.schema.create_topics.v7 import request as create_topics
from kio.schema.describe_configs.v4 import request as describe_configs
from kio.schema.incremental_alter_configs.v1 import request as alter_configs
from logwright.compat.registry import make

from .test_controller_timeouts import ask
from .test_list_offsets_checks import two_partition_topic

pytestmark = pytest.mark.differential

NONE, INVALID_CONFIG, INVALID_REQUEST = 0, 40, 42
DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG = 5, 1
BOOLEAN, INT, LONG, LIST = 1, 3, 5, 7
SET, DELETE, APPEND = 0, 1, 2
LONG_MAX = str(2**63 - 1)
FIVE_SECONDS = datetime.timedelta(seconds=5)

DEFAULTS = {
    "compression.gzip.level": ("-1", INT), "compression.lz4.level": ("9", INT), "compression.zstd.level": ("3", INT),
    "file.delete.delay.ms": ("60000", LONG), "flush.messages": (LONG_MAX, LONG), "flush.ms": (LONG_MAX, LONG),
    "follower.replication.throttled.replicas": ("", LIST), "index.interval.bytes": ("4096", INT),
    "leader.replication.throttled.replicas": ("", LIST), "local.retention.bytes": ("-2", LONG),
    "local.retention.ms": ("-2", LONG), "max.decompressed.message.bytes": ("2147483639", INT),
    "preallocate": ("false", BOOLEAN), "remote.copy.lag.bytes": ("-1", LONG), "remote.copy.lag.ms": ("0", LONG),
    "remote.log.copy.disable": ("false", BOOLEAN), "remote.log.delete.on.disable": ("false", BOOLEAN),
    "remote.storage.enable": ("false", BOOLEAN), "segment.index.bytes": ("10485760", INT),
    "segment.jitter.ms": ("0", LONG),
}

TAKEN_AND_REFUSED = {
    "compression.gzip.level": (["-1", "1", "9"], ["0", "10", "-2", "x"]),
    "compression.lz4.level": (["1", "17", "9"], ["0", "18"]),
    "compression.zstd.level": (["-131072", "22", "0", "3"], ["-131073", "23"]),
    "flush.ms": (["0", "100"], ["-1"]),
    "flush.messages": (["1"], ["0", "-1"]),
    "file.delete.delay.ms": (["0"], ["-1"]),
    "index.interval.bytes": (["0", "4096"], ["-1"]),
    "segment.index.bytes": (["4", "2147483647"], ["3"]),
    "segment.jitter.ms": (["0"], ["-1"]),
    "preallocate": (["true", "TRUE", "false"], ["yes"]),
    "local.retention.ms": (["-2", "100"], ["-3"]),
    "local.retention.bytes": (["-2", "100"], ["-3"]),
    "remote.storage.enable": (["false"], ["true"]),
    "remote.log.copy.disable": (["true"], []),
    "remote.log.delete.on.disable": (["true"], []),
    "remote.copy.lag.ms": (["-1", "0", "5"], []),
    "remote.copy.lag.bytes": (["-1", "5"], ["-2"]),
    "leader.replication.throttled.replicas": (["*", "0:1", "0:1,1:1", " 0:1 ", "0:1,"], ["x", "0", "0:", ":1", "-1:1"]),
    "follower.replication.throttled.replicas": (["*", "0:1"], ["bad"]),
    "max.decompressed.message.bytes": (["1", "100", "1048588"], ["0", "-1", "2147483647"]),
}


def described(bootstrap: str, topic: str) -> dict[str, tuple[str, int, int]]:
    (answer,) = ask(bootstrap, make(describe_configs.DescribeConfigsRequest, resources=(make(
        describe_configs.DescribeConfigsResource, resource_type=2, resource_name=topic,
        configuration_keys=tuple(DEFAULTS)),), include_synonyms=False, include_documentation=False))
    return {entry.name: (entry.value, int(entry.config_source), int(entry.config_type))
            for entry in answer.results[0].configs}


def alter(bootstrap: str, topic: str, name: str, operation: int, value: str | None) -> int:
    (answer,) = ask(bootstrap, make(alter_configs.IncrementalAlterConfigsRequest, validate_only=True, resources=(make(
        alter_configs.AlterConfigsResource, resource_type=2, resource_name=topic, configs=(
            make(alter_configs.AlterableConfig, name=name, config_operation=operation, value=value),)),)))
    return int(answer.responses[0].error_code)


def test_the_keys_and_their_defaults(bootstrap: str) -> None:
    topic = two_partition_topic(bootstrap, "topic-config-keys", ())
    assert described(bootstrap, topic) == {
        name: (value, DEFAULT_CONFIG, value_type) for name, (value, value_type) in DEFAULTS.items()}


@pytest.mark.parametrize("name", sorted(TAKEN_AND_REFUSED))
def test_what_each_key_takes_and_refuses(bootstrap: str, name: str) -> None:
    topic = two_partition_topic(bootstrap, "topic-config-keys", ())
    taken, refused = TAKEN_AND_REFUSED[name]
    answers = {value: alter(bootstrap, topic, name, SET, value) for value in (*taken, *refused)}
    assert answers == {**dict.fromkeys(taken, NONE), **dict.fromkeys(refused, INVALID_CONFIG)}
    assert alter(bootstrap, topic, name, DELETE, None) == NONE
    list_typed = DEFAULTS[name][1] == LIST
    assert alter(bootstrap, topic, name, APPEND, "0:1") == (NONE if list_typed else INVALID_CONFIG)


def test_a_topic_created_with_them(bootstrap: str) -> None:
    name = f"topic-config-keys-{uuid.uuid4().hex[:8]}"
    configs: dict[str, Any] = {"flush.ms": "100", "preallocate": "true", "compression.zstd.level": "7",
                               "segment.index.bytes": "4096", "leader.replication.throttled.replicas": "*"}
    (answer,) = ask(bootstrap, make(create_topics.CreateTopicsRequest, validate_only=False, timeout=FIVE_SECONDS,
                                    topics=(make(create_topics.CreatableTopic, name=name, num_partitions=1,
                                                 replication_factor=1, assignments=(), configs=tuple(
                                                     make(create_topics.CreatableTopicConfig, name=key, value=value)
                                                     for key, value in configs.items())),)))
    assert int(answer.topics[0].error_code) == NONE
    found = described(bootstrap, name)
    deadline = time.monotonic() + 10
    while not found and time.monotonic() < deadline:  # Kafka's broker learns of a new topic from its metadata log
        time.sleep(0.1)  # a moment after the controller answered (its DescribeConfigs has no configs until then)
        found = described(bootstrap, name)
    assert {key: found[key][:2] for key in configs} == {key: (value, DYNAMIC_TOPIC_CONFIG)
                                                         for key, value in configs.items()}
    (refused,) = ask(bootstrap, make(create_topics.CreateTopicsRequest, validate_only=True, timeout=FIVE_SECONDS,
                                     topics=(make(create_topics.CreatableTopic, name=name + "-x", num_partitions=1,
                                                  replication_factor=1, assignments=(), configs=(
                                                      make(create_topics.CreatableTopicConfig, name="flush.ms",
                                                           value="-1"),)),)))
    assert int(refused.topics[0].error_code) == INVALID_CONFIG


def test_cleanup_policy_values_and_what_a_change_may_leave_out(bootstrap: str) -> None:
    """An empty cleanup.policy is Kafka 4.1+'s infinite retention (neither delete nor compact); entries are exact."""
    topic = two_partition_topic(bootstrap, "topic-config-keys", ())
    answers = {value: alter(bootstrap, topic, "cleanup.policy", SET, value)
               for value in ("", " ", "compact", "delete, compact", ",", " , ", "compact,", ",delete", "Compact")}
    assert answers == {"": NONE, " ": NONE, "compact": NONE, "delete, compact": NONE, ",": INVALID_CONFIG,
                       " , ": INVALID_CONFIG, "compact,": INVALID_CONFIG, ",delete": INVALID_CONFIG,
                       "Compact": INVALID_CONFIG}
    assert alter(bootstrap, topic, "cleanup.policy", 3, "delete") == NONE  # SUBTRACT down to the empty list
    assert alter(bootstrap, topic, "no.such.key", DELETE, None) == NONE  # nothing there: nothing to delete
    assert alter(bootstrap, topic, "no.such.key", SET, "1") == INVALID_CONFIG
    assert alter(bootstrap, topic, "no.such.key", 9, None) == INVALID_REQUEST  # a null value first
    assert alter(bootstrap, topic, "retention.ms", SET, None) == INVALID_REQUEST
    (legacy,) = ask(bootstrap, make(legacy_alter_configs.AlterConfigsRequest, validate_only=True, resources=(make(
        legacy_alter_configs.AlterConfigsResource, resource_type=2, resource_name=topic, configs=(
            make(legacy_alter_configs.AlterableConfig, name="retention.ms", value=None),)),)))
    assert (int(legacy.responses[0].error_code), legacy.responses[0].error_message) == (
        INVALID_REQUEST, "Null value not supported for : retention.ms")
