"""Kafka's topic configs for what logwright's store does not have: segment files and their indexes, flushing,
replication throttles and tiered storage.

Topic definitions written for Kafka set these (``flush.ms``, ``segment.index.bytes``, ``preallocate``,
``local.retention.ms``, ...) and a broker that refused them would refuse the whole CreateTopics or config change. So
they are accepted with Kafka 4.4's defaults, types and validation (each value Kafka refuses is refused here,
INVALID_CONFIG: tests/integration/test_topic_config_keys.py checks every key on both brokers), listed by
DescribeConfigs, and have no effect, which each key's documentation says: logwright keeps batches in RocksDB and
batch files, not segments; it has one replica; it has no remote tier, so ``remote.storage.enable=true`` is refused,
as Kafka refuses it on a broker without tiered storage.
"""

from __future__ import annotations

import re

from logwright.core.config.configs import ConfigKey, Validator, boolean, long_at_least

_LONG_MAX = str(2**63 - 1)
_THROTTLED = re.compile(r"\*|(\d+:\d+)?(,\d+:\d+)*,?")
"""Kafka's ``ThrottledReplicaListValidator``: ``*`` or ``partition:broker`` pairs, spaces around them ignored."""


def throttled_replicas(value: str) -> str | None:
    return None if _THROTTLED.fullmatch(",".join(part.strip() for part in value.split(","))) else (
        "must be * or a list of partition:broker pairs")


def tiered_storage_off(value: str) -> str | None:
    """``remote.storage.enable`` may only be false: the broker has no remote tier (Kafka's answer on a broker whose
    remote log storage is disabled)."""
    problem = boolean(value)
    if problem is not None:
        return problem
    return None if value.lower() == "false" else "Tiered Storage functionality is disabled in the broker"


def _no_effect(what: str) -> str:
    return f"Accepted for compatibility with Kafka; {what}."


_NO_SEGMENTS = "logwright keeps batches in RocksDB and batch files, not segment files"
_ONE_REPLICA = "there is one replica, so nothing is replicated or throttled"
_NO_TIER = "logwright has no remote storage tier"


def _key(name: str, default: str, validate: Validator, what: str, value_type: str) -> ConfigKey:
    return ConfigKey(name, "topic", default, validate, _no_effect(what), value_type)


KAFKA_LOG_TOPIC_KEYS = (
    _key("file.delete.delay.ms", "60000", long_at_least(0), _NO_SEGMENTS, "LONG"),
    _key("flush.messages", _LONG_MAX, long_at_least(1), "the store's durability setting decides when writes are "
         "synced", "LONG"),
    _key("flush.ms", _LONG_MAX, long_at_least(0), "the store's durability setting decides when writes are synced",
         "LONG"),
    _key("follower.replication.throttled.replicas", "", throttled_replicas, _ONE_REPLICA, "LIST"),
    _key("index.interval.bytes", "4096", long_at_least(0), _NO_SEGMENTS, "INT"),
    _key("leader.replication.throttled.replicas", "", throttled_replicas, _ONE_REPLICA, "LIST"),
    _key("local.retention.bytes", "-2", long_at_least(-2), _NO_TIER, "LONG"),
    _key("local.retention.ms", "-2", long_at_least(-2), _NO_TIER, "LONG"),
    _key("preallocate", "false", boolean, _NO_SEGMENTS, "BOOLEAN"),
    _key("remote.copy.lag.bytes", "-1", long_at_least(-1), _NO_TIER, "LONG"),
    _key("remote.copy.lag.ms", "0", long_at_least(-1), _NO_TIER, "LONG"),
    _key("remote.log.copy.disable", "false", boolean, _NO_TIER, "BOOLEAN"),
    _key("remote.log.delete.on.disable", "false", boolean, _NO_TIER, "BOOLEAN"),
    _key("remote.storage.enable", "false", tiered_storage_off, _NO_TIER + ", so only false is accepted", "BOOLEAN"),
    _key("segment.index.bytes", "10485760", long_at_least(4), _NO_SEGMENTS, "INT"),
    _key("segment.jitter.ms", "0", long_at_least(0), _NO_SEGMENTS, "LONG"),
)
