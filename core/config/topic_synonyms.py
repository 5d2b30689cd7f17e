"""Topic configs whose default is a broker config: Kafka's synonym table (``ServerTopicConfigSynonyms``).

A topic key left unset takes the broker's value of its synonyms, the first one with a value, converted to the
topic key's unit (``log.roll.hours`` is hours, ``segment.ms`` milliseconds). "With a value" counts every layer of
the broker's config (per broker, cluster-wide, static) and the broker key's own default, so with nothing set
``segment.ms`` is ``log.roll.hours``' 168 hours. DescribeConfigs lists the same broker keys as the topic key's
synonyms (`compat.kafka.config_resources`). Keys logwright does not know (jitter, flush, index, preallocate) are
left out; a logwright topic key without a synonym keeps its registry default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

HOURS: Final = 3_600_000
MINUTES: Final = 60_000


@dataclass(frozen=True, slots=True)
class BrokerSynonym:
    """A broker key standing for a topic key; ``factor`` turns its unit into the topic key's (1: the value as it
    is, not even parsed)."""

    name: str
    factor: int = 1


TOPIC_BROKER_SYNONYMS: Mapping[str, tuple[BrokerSynonym, ...]] = MappingProxyType({
    "segment.bytes": (BrokerSynonym("log.segment.bytes"),),
    "segment.ms": (BrokerSynonym("log.roll.ms"), BrokerSynonym("log.roll.hours", HOURS)),
    "retention.bytes": (BrokerSynonym("log.retention.bytes"),),
    "retention.ms": (BrokerSynonym("log.retention.ms"), BrokerSynonym("log.retention.minutes", MINUTES),
                     BrokerSynonym("log.retention.hours", HOURS)),
    "max.message.bytes": (BrokerSynonym("message.max.bytes"),),
    "delete.retention.ms": (BrokerSynonym("log.cleaner.delete.retention.ms"),),
    "min.compaction.lag.ms": (BrokerSynonym("log.cleaner.min.compaction.lag.ms"),),
    "max.compaction.lag.ms": (BrokerSynonym("log.cleaner.max.compaction.lag.ms"),),
    "min.cleanable.dirty.ratio": (BrokerSynonym("log.cleaner.min.cleanable.ratio"),),
    "cleanup.policy": (BrokerSynonym("log.cleanup.policy"),),
    "unclean.leader.election.enable": (BrokerSynonym("unclean.leader.election.enable"),),
    "min.insync.replicas": (BrokerSynonym("min.insync.replicas"),),
    "compression.type": (BrokerSynonym("compression.type"),),
    "compression.gzip.level": (BrokerSynonym("compression.gzip.level"),),
    "compression.lz4.level": (BrokerSynonym("compression.lz4.level"),),
    "compression.zstd.level": (BrokerSynonym("compression.zstd.level"),),
    "max.decompressed.message.bytes": (BrokerSynonym("max.decompressed.message.bytes"),),
    "message.timestamp.type": (BrokerSynonym("log.message.timestamp.type"),),
    "message.timestamp.before.max.ms": (BrokerSynonym("log.message.timestamp.before.max.ms"),),
    "message.timestamp.after.max.ms": (BrokerSynonym("log.message.timestamp.after.max.ms"),),
})
"""Each topic key's broker synonyms in Kafka's order of precedence (Kafka 4.4's table, restricted to the topic
keys logwright knows)."""


BROKER_KEY_FAMILIES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    synonym.name: tuple(member.name for member in synonyms)
    for synonyms in TOPIC_BROKER_SYNONYMS.values() if len(synonyms) > 1 for synonym in synonyms})
"""Broker keys that stand for one setting in different units (``log.roll.ms`` and ``log.roll.hours``), each to its
family in precedence order: Kafka lists a broker key's synonyms from its family (``brokerConfigSynonyms``)."""


def topic_default(name: str, broker_value: Callable[[str], str | None]) -> str | None:
    """The broker's default for topic key ``name`` given ``broker_value(key)`` (the broker's effective value,
    ``None`` when neither set nor defaulted); ``None`` when the key has no synonym or none has a value. A negative
    number in hours or minutes is -1 (forever), as Kafka converts it."""
    for synonym in TOPIC_BROKER_SYNONYMS.get(name, ()):
        value = broker_value(synonym.name)
        if value is None:
            continue
        if synonym.factor == 1:
            return value
        number = int(value)
        return str(-1 if number < 0 else number * synonym.factor)
    return None
