"""The topic catalog: topics, their partitions and config overrides, and the commands that change them.

Partition ids are allocated from one global counter so that the records column family can key by a
fixed-width u32 instead of a topic name; the ids are written into the events, so replay never
re-allocates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import singledispatch

from logwright.core.config.configs import ConfigRegistry
from logwright.core.errors import InvalidPartitions, InvalidTopicName, TopicAlreadyExists, UnknownTopic
from logwright.core.events import (
    ConfigChanged,
    ConfigChanges,
    ConfigEntries,
    Event,
    FeatureLevelsUpdated,
    PartitionsCreated,
    TopicCreated,
    TopicDeleted,
)
from logwright.core.log.features import FinalizedFeatures
from logwright.core.projection import Projection

MAX_PARTITIONS_PER_TOPIC = 10_000
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._%-]+$")


@dataclass(frozen=True, slots=True)
class TopicState:
    name: str
    topic_id: bytes
    partition_ids: tuple[int, ...]
    configs: ConfigEntries = ()

    def config(self, key: str) -> str | None:
        for name, value in self.configs:
            if name == key:
                return value
        return None


@dataclass(frozen=True, slots=True)
class ResourceConfig:
    """Config overrides of a non-topic resource (a group or the broker)."""

    overrides: ConfigEntries = ()


@dataclass(frozen=True, slots=True)
class PartitionIdCounter:
    next_partition_id: int = 0


COUNTER_KEY = "next-partition-id"
FEATURES_KEY = "features"
"""The finalized feature levels (`core.log.features`), once an UpdateFeatures changed them."""


def topic_key(topic: str) -> str:
    return f"topic/{topic}"


def resource_key(resource_type: str, name: str) -> str:
    return f"config/{resource_type}/{name}"


def apply_changes(entries: ConfigEntries, changes: ConfigChanges) -> ConfigEntries:
    merged = dict(entries)
    for name, value in changes:
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = value
    return tuple(sorted(merged.items()))


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, TopicCreated | PartitionsCreated):
        return (topic_key(event.topic), COUNTER_KEY)
    if isinstance(event, TopicDeleted):
        return (topic_key(event.topic),)
    if isinstance(event, ConfigChanged):
        if event.resource_type == "topic":
            return (topic_key(event.resource_name),)
        return (resource_key(event.resource_type, event.resource_name),)
    if isinstance(event, FeatureLevelsUpdated):
        return (FEATURES_KEY,)
    return ()


@singledispatch
def _evolve(event: Event, state: object, key: str) -> object:
    return state


@_evolve.register
def _(event: TopicCreated, state: object, key: str) -> object:
    if key == COUNTER_KEY:
        return PartitionIdCounter(max(event.partition_ids, default=-1) + 1)
    return TopicState(event.topic, event.topic_id, event.partition_ids, event.configs)


@_evolve.register
def _(event: PartitionsCreated, state: object, key: str) -> object:
    if key == COUNTER_KEY:
        return PartitionIdCounter(max(event.partition_ids, default=-1) + 1)
    assert isinstance(state, TopicState), f"partitions added to unknown topic {event.topic!r}"
    return replace(state, partition_ids=state.partition_ids + event.partition_ids)


@_evolve.register
def _(event: TopicDeleted, state: object, key: str) -> object:
    return None


@_evolve.register
def _(event: ConfigChanged, state: object, key: str) -> object:
    if isinstance(state, TopicState):
        return replace(state, configs=apply_changes(state.configs, event.changes))
    if event.resource_type == "topic":
        return state
    current = state if isinstance(state, ResourceConfig) else ResourceConfig()
    overrides = apply_changes(current.overrides, event.changes)
    return ResourceConfig(overrides) if overrides else None


@_evolve.register
def _(event: FeatureLevelsUpdated, state: object, key: str) -> object:
    return FinalizedFeatures(event.levels, event.epoch)


CATALOG: Projection[object] = Projection(
    name="catalog", entity_keys=_keys, evolve=lambda state, event, key: _evolve(event, state, key),
    handles=frozenset({TopicCreated, PartitionsCreated, TopicDeleted, ConfigChanged, FeatureLevelsUpdated})
)


def topic_name_problem(topic: str) -> str | None:
    """Why ``topic`` cannot name a topic, in Kafka 4.4's words (its answers to CreateTopics, DescribeConfigs and
    DescribeProducers carry them), checked in Kafka's order; ``None`` for a valid name."""
    if not topic:
        return "Topic name is invalid: the empty string is not allowed"
    if topic in (".", ".."):
        return f"Topic name is invalid: '{topic}' is not allowed"
    if len(topic) > 249:
        return f"Topic name is invalid: the length of '{topic}' is longer than the max allowed length 249"
    if not _TOPIC_NAME.match(topic):
        return (f"Topic name is invalid: '{topic}' contains one or more characters other than ASCII alphanumerics, "
                "'.', '_' and '-'")
    return None


def validate_topic_name(topic: str) -> None:
    problem = topic_name_problem(topic)
    if problem is not None:
        raise InvalidTopicName(problem)


def collision_form(topic: str) -> str | None:
    """``topic`` with every '.' as '_' when it holds either (Kafka's ``Topic.unifyCollisionChars``): two names of
    one form would share their metric names, so Kafka refuses the second."""
    return topic.replace(".", "_") if "." in topic or "_" in topic else None


def check_new_topic_name(topic: str, existing: TopicState | None, colliding: str | None) -> None:
    """A CreateTopics entry's name, in the order Kafka's controller decides it: a valid name, then whether the topic
    exists (TOPIC_ALREADY_EXISTS, whatever else), then whether ``colliding``, an existing topic of its
    `collision_form`, is in the way (INVALID_TOPIC_EXCEPTION); its partitions and configs come after."""
    validate_topic_name(topic)
    if existing is not None:
        raise TopicAlreadyExists(f"Topic '{topic}' already exists.")
    if colliding is not None:
        raise InvalidTopicName(f"Topic '{topic}' collides with existing topic: {colliding}")


def create_topic(
    existing: TopicState | None,
    counter: PartitionIdCounter | None,
    topic: str,
    partitions: int,
    configs: ConfigEntries,
    topic_id: bytes,
    registry: ConfigRegistry,
) -> TopicCreated:
    """Decide a CreateTopics entry; the caller supplies a fresh random ``topic_id``."""
    validate_topic_name(topic)
    if existing is not None:
        raise TopicAlreadyExists(f"Topic '{topic}' already exists.")
    if not 1 <= partitions <= MAX_PARTITIONS_PER_TOPIC:
        raise InvalidPartitions(f"a topic needs 1 to {MAX_PARTITIONS_PER_TOPIC} partitions, not {partitions}")
    registry.validate("topic", configs)
    registry.check_together("topic", dict(configs), (name for name, _ in configs))
    first = (counter or PartitionIdCounter()).next_partition_id
    return TopicCreated(topic, topic_id, tuple(range(first, first + partitions)), tuple(sorted(configs)))


def create_partitions(
    existing: TopicState | None, counter: PartitionIdCounter | None, topic: str, new_total: int
) -> PartitionsCreated:
    if existing is None:
        raise UnknownTopic(f"topic {topic!r} does not exist")
    current = len(existing.partition_ids)
    if new_total == current:
        raise InvalidPartitions(f"Topic already has {current} partition(s).")
    if new_total < current:
        raise InvalidPartitions(f"The topic {topic} currently has {current} partition(s); {new_total} would not be an "
                                "increase.")
    if new_total > MAX_PARTITIONS_PER_TOPIC:
        raise InvalidPartitions(f"a topic can have at most {MAX_PARTITIONS_PER_TOPIC} partitions")
    first = (counter or PartitionIdCounter()).next_partition_id
    return PartitionsCreated(topic, tuple(range(first, first + new_total - current)))


def delete_topic(existing: TopicState | None, topic: str) -> TopicDeleted:
    if existing is None:
        raise UnknownTopic(f"topic {topic!r} does not exist")
    return TopicDeleted(topic, existing.topic_id, existing.partition_ids)


def change_config(
    registry: ConfigRegistry, resource_type: str, resource_name: str, changes: ConfigChanges
) -> ConfigChanged:
    registry.validate(resource_type, changes)
    return ConfigChanged(resource_type, resource_name, changes)
