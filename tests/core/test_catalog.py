"""Topic catalog decisions as given events / when command / then events; no I/O."""

from __future__ import annotations

from typing import Any

import pytest
from logwright.core.config.configs import ConfigKey, ConfigRegistry, any_value, default_registry
from logwright.core.errors import (
    InvalidConfig,
    InvalidPartitions,
    InvalidRequest,
    InvalidTopicName,
    TopicAlreadyExists,
    UnknownTopic,
)
from logwright.core.events import (
    ConfigChanged,
    Event,
    OffsetCommitted,
    PartitionsCreated,
    RecordsAppended,
    TopicCreated,
    TopicDeleted,
)
from logwright.core.log.catalog import (
    CATALOG,
    COUNTER_KEY,
    MAX_PARTITIONS_PER_TOPIC,
    PartitionIdCounter,
    ResourceConfig,
    TopicState,
    change_config,
    check_new_topic_name,
    collision_form,
    create_partitions,
    create_topic,
    delete_topic,
    resource_key,
    topic_key,
)
from logwright.core.projection import fold

REGISTRY = default_registry()
ID_A = b"\x01" * 16
ID_B = b"\x02" * 16


class Catalog:
    """The catalog folded from the given events, with the commands' inputs looked up like the broker does."""

    def __init__(self, *events: Event) -> None:
        self.states: dict[str, Any] = fold(CATALOG, events)

    def topic(self, name: str) -> TopicState | None:
        return self.states.get(topic_key(name))

    @property
    def counter(self) -> PartitionIdCounter | None:
        return self.states.get(COUNTER_KEY)

    def create_topic(self, name: str, partitions: int = 1, configs: tuple[tuple[str, str], ...] = (),
                     topic_id: bytes = ID_A, registry: ConfigRegistry = REGISTRY) -> TopicCreated:
        return create_topic(self.topic(name), self.counter, name, partitions, configs, topic_id, registry)

    def create_partitions(self, name: str, new_total: int) -> PartitionsCreated:
        return create_partitions(self.topic(name), self.counter, name, new_total)

    def delete_topic(self, name: str) -> TopicDeleted:
        return delete_topic(self.topic(name), name)


def given(*events: Event) -> Catalog:
    return Catalog(*events)


# -- create_topic ------------------------------------------------------------------------------


def test_create_topic_on_an_empty_catalog_takes_the_first_partition_ids() -> None:
    assert given().create_topic("orders", 3) == TopicCreated("orders", ID_A, (0, 1, 2))


def test_create_topic_continues_the_global_partition_counter() -> None:
    catalog = given(TopicCreated("a", ID_A, (0, 1)), TopicCreated("b", ID_B, (2,)))
    assert catalog.create_topic("c", 2).partition_ids == (3, 4)


def test_create_topic_sorts_its_configs() -> None:
    event = given().create_topic("t", 1, (("retention.ms", "1000"), ("cleanup.policy", "delete")))
    assert event.configs == (("cleanup.policy", "delete"), ("retention.ms", "1000"))


def test_create_topic_refuses_an_existing_topic() -> None:
    with pytest.raises(TopicAlreadyExists, match="'t' already exists"):
        given(TopicCreated("t", ID_A, (0,))).create_topic("t")


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "with space", "slash/ed", "ünïcode"])
def test_create_topic_refuses_invalid_names(name: str) -> None:
    with pytest.raises(InvalidTopicName):
        given().create_topic(name)


def test_create_topic_accepts_the_longest_legal_name() -> None:
    assert given().create_topic("a" * 249).topic == "a" * 249


@pytest.mark.parametrize("partitions", [0, -1, MAX_PARTITIONS_PER_TOPIC + 1])
def test_create_topic_refuses_a_bad_partition_count(partitions: int) -> None:
    with pytest.raises(InvalidPartitions, match=str(partitions)):
        given().create_topic("t", partitions)


def test_create_topic_refuses_an_unknown_config_key() -> None:
    with pytest.raises(InvalidConfig, match="unknown topic config 'retention.mss'"):
        given().create_topic("t", 1, (("retention.ms", "1"), ("retention.mss", "1")))


@pytest.mark.parametrize(
    ("key", "value"),
    [("retention.ms", "soon"), ("retention.ms", "-2"), ("cleanup.policy", "shred"),
     ("unclean.leader.election.enable", "maybe"), ("min.cleanable.dirty.ratio", "1.5")],
)
def test_create_topic_refuses_a_bad_config_value(key: str, value: str) -> None:
    with pytest.raises(InvalidConfig, match=f"invalid value '{value}' for topic config '{key}'"):
        given().create_topic("t", 1, ((key, value),))


def test_folding_topic_created_gives_the_topic_and_the_next_partition_id() -> None:
    catalog = given(TopicCreated("t", ID_A, (0, 1), (("retention.ms", "5"),)))
    assert catalog.topic("t") == TopicState("t", ID_A, (0, 1), (("retention.ms", "5"),))
    assert catalog.counter == PartitionIdCounter(2)
    assert catalog.topic("t").config("retention.ms") == "5"  # type: ignore[union-attr]
    assert catalog.topic("t").config("retention.bytes") is None  # type: ignore[union-attr]


# -- create_partitions -------------------------------------------------------------------------


def test_create_partitions_adds_ids_from_the_global_counter() -> None:
    catalog = given(TopicCreated("a", ID_A, (0, 1)), TopicCreated("b", ID_B, (2, 3, 4)))
    event = catalog.create_partitions("a", 4)
    assert event == PartitionsCreated("a", (5, 6))
    after = given(TopicCreated("a", ID_A, (0, 1)), TopicCreated("b", ID_B, (2, 3, 4)), event)
    assert after.topic("a").partition_ids == (0, 1, 5, 6)  # type: ignore[union-attr]
    assert after.counter == PartitionIdCounter(7)


def test_create_partitions_refuses_an_unknown_topic() -> None:
    with pytest.raises(UnknownTopic, match="'nope'"):
        given().create_partitions("nope", 2)


@pytest.mark.parametrize(("new_total", "message"), [
    (1, r"The topic t currently has 2 partition\(s\); 1 would not be an increase."),
    (2, r"Topic already has 2 partition\(s\)."),
])
def test_create_partitions_refuses_a_count_that_does_not_grow(new_total: int, message: str) -> None:
    with pytest.raises(InvalidPartitions, match=message):
        given(TopicCreated("t", ID_A, (0, 1))).create_partitions("t", new_total)


def test_a_new_name_exists_first_then_collides() -> None:
    """Kafka's controller's order: an existing topic wins over a collision; a name of another's metric form collides."""
    existing = given(TopicCreated("a.b", ID_A, (0,))).topic("a.b")
    with pytest.raises(TopicAlreadyExists, match=r"^Topic 'a.b' already exists.$"):
        check_new_topic_name("a.b", existing, "a_b")
    with pytest.raises(InvalidTopicName, match="^Topic 'a_b' collides with existing topic: a.b$"):
        check_new_topic_name("a_b", None, "a.b")
    with pytest.raises(InvalidTopicName, match="Topic name is invalid"):
        check_new_topic_name("a/b", None, None)
    check_new_topic_name("a_c", None, None)
    assert (collision_form("a.b_c"), collision_form("a-b")) == ("a_b_c", None)


def test_create_partitions_refuses_more_than_the_maximum() -> None:
    with pytest.raises(InvalidPartitions, match="at most"):
        given(TopicCreated("t", ID_A, (0,))).create_partitions("t", MAX_PARTITIONS_PER_TOPIC + 1)


# -- delete_topic ------------------------------------------------------------------------------


def test_delete_topic_names_its_id_and_partitions() -> None:
    catalog = given(TopicCreated("t", ID_A, (0,)), PartitionsCreated("t", (1,)))
    assert catalog.delete_topic("t") == TopicDeleted("t", ID_A, (0, 1))


def test_delete_topic_refuses_an_unknown_topic() -> None:
    with pytest.raises(UnknownTopic):
        given().delete_topic("t")


def test_a_deleted_topic_is_gone_and_its_partition_ids_are_never_reused() -> None:
    created = TopicCreated("t", ID_A, (0, 1))
    catalog = given(created, TopicDeleted("t", ID_A, (0, 1)))
    assert catalog.topic("t") is None
    recreated = catalog.create_topic("t", 2, topic_id=ID_B)
    assert recreated == TopicCreated("t", ID_B, (2, 3))


# -- change_config -----------------------------------------------------------------------------


def test_change_config_sets_and_resets_topic_overrides() -> None:
    created = TopicCreated("t", ID_A, (0,), (("cleanup.policy", "delete"), ("retention.ms", "5")))
    changed = change_config(REGISTRY, "topic", "t", (("retention.ms", None), ("retention.bytes", "100")))
    assert changed == ConfigChanged("topic", "t", (("retention.ms", None), ("retention.bytes", "100")))
    topic = given(created, changed).topic("t")
    assert topic is not None
    assert topic.configs == (("cleanup.policy", "delete"), ("retention.bytes", "100"))


def test_change_config_on_a_broker_resource_keeps_overrides_until_all_are_reset() -> None:
    set_ = change_config(REGISTRY, "broker", "1", (("num.partitions", "3"), ("auto.create.topics.enable", "false")))
    catalog = given(set_)
    assert catalog.states[resource_key("broker", "1")] == ResourceConfig(
        (("auto.create.topics.enable", "false"), ("num.partitions", "3"))
    )
    reset = change_config(REGISTRY, "broker", "1", (("num.partitions", None), ("auto.create.topics.enable", None)))
    assert resource_key("broker", "1") not in given(set_, reset).states


def test_a_config_change_for_a_missing_topic_creates_nothing() -> None:
    assert given(ConfigChanged("topic", "ghost", (("retention.ms", "1"),))).states == {}


def test_change_config_refuses_an_unknown_key() -> None:
    with pytest.raises(InvalidConfig, match="unknown broker config 'no.such.key'"):
        change_config(REGISTRY, "broker", "1", (("no.such.key", "1"),))


def test_change_config_refuses_a_bad_value_but_always_accepts_a_reset() -> None:
    with pytest.raises(InvalidConfig, match="must be at least -1"):
        change_config(REGISTRY, "topic", "t", (("retention.bytes", "-5"),))
    assert change_config(REGISTRY, "topic", "t", (("retention.bytes", None),)).changes == (("retention.bytes", None),)


def test_change_config_refuses_a_read_only_key() -> None:
    registry = ConfigRegistry()
    registry.register(ConfigKey("broker.id", "broker", "0", any_value, "fixed", read_only=True))
    with pytest.raises(InvalidRequest, match=r"Cannot update these configs dynamically: \[broker.id\]"):
        change_config(registry, "broker", "0", (("broker.id", "1"),))


def test_events_outside_the_catalog_touch_no_entity() -> None:
    assert CATALOG.entity_keys(RecordsAppended(0, 0, 1, 10, 0)) == ()
    assert CATALOG.entity_keys(OffsetCommitted("g", "t", 0, 1)) == ()
