"""A topic key left unset takes its broker synonyms' value, first one set, in the topic key's unit."""

from __future__ import annotations

from logwright.core.config.configs import default_registry
from logwright.core.config.topic_synonyms import TOPIC_BROKER_SYNONYMS, topic_default


def test_the_first_synonym_with_a_value_is_converted_to_the_topic_keys_unit() -> None:
    assert topic_default("segment.ms", {"log.roll.hours": "2"}.get) == "7200000"
    assert topic_default("segment.ms", {"log.roll.ms": "5", "log.roll.hours": "2"}.get) == "5"
    assert topic_default("retention.ms", {"log.retention.minutes": "-1", "log.retention.hours": "1"}.get) == "-1"
    assert topic_default("cleanup.policy", {"log.cleanup.policy": "compact,delete"}.get) == "compact,delete"
    assert topic_default("segment.bytes", {}.get) is None
    assert topic_default("logwright.dedup.key", {"log.segment.bytes": "1"}.get) is None


def test_every_synonym_is_a_broker_key_and_every_topic_key_is_known() -> None:
    registry = default_registry()
    for topic_key, synonyms in TOPIC_BROKER_SYNONYMS.items():
        assert registry.get("topic", topic_key) is not None
        for synonym in synonyms:
            assert registry.get("broker", synonym.name) is not None, synonym.name


def test_with_nothing_set_the_broker_defaults_are_the_registry_topic_defaults() -> None:
    registry = default_registry()

    def broker_default(name: str) -> str | None:
        key = registry.get("broker", name)
        return key.default if key is not None else None

    for topic_key in TOPIC_BROKER_SYNONYMS:
        key = registry.get("topic", topic_key)
        assert key is not None and topic_default(topic_key, broker_default) == key.default, topic_key
