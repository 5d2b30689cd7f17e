"""Config alterations (legacy replace and incremental operations) and the group config keys; no I/O."""

from __future__ import annotations

import pytest
from logwright.core.config.config_changes import AlterOp, alter_incrementally, replace_overrides
from logwright.core.config.configs import default_registry
from logwright.core.errors import InvalidConfig, InvalidRequest
from logwright.core.events import ConfigChanged
from logwright.core.log.catalog import CATALOG, ResourceConfig, resource_key
from logwright.core.projection import fold

REGISTRY = default_registry()


def test_set_and_delete_change_only_what_differs() -> None:
    current = {"retention.ms": "1000", "retention.bytes": "5"}
    event = alter_incrementally(REGISTRY, "topic", "t", current, [
        ("retention.ms", AlterOp.SET, "1000"), ("retention.bytes", AlterOp.DELETE, None),
        ("max.message.bytes", AlterOp.SET, "2048"),
    ])
    assert event == ConfigChanged("topic", "t", (("retention.bytes", None), ("max.message.bytes", "2048")))


def test_a_request_that_changes_nothing_is_no_event() -> None:
    assert alter_incrementally(REGISTRY, "topic", "t", {"retention.ms": "1"}, [("retention.ms", 0, "1")]) is None
    assert alter_incrementally(REGISTRY, "topic", "t", {}, [("retention.ms", AlterOp.DELETE, None)]) is None
    assert replace_overrides(REGISTRY, "topic", "t", {"retention.ms": "1"}, [("retention.ms", "1")]) is None


def test_append_and_subtract_start_from_the_default_of_a_list_key() -> None:
    appended = alter_incrementally(REGISTRY, "topic", "t", {}, [("cleanup.policy", AlterOp.APPEND, "compact")])
    assert appended == ConfigChanged("topic", "t", (("cleanup.policy", "delete,compact"),))
    subtracted = alter_incrementally(REGISTRY, "topic", "t", {"cleanup.policy": "delete,compact"},
                                     [("cleanup.policy", AlterOp.SUBTRACT, "delete")])
    assert subtracted == ConfigChanged("topic", "t", (("cleanup.policy", "compact"),))


def test_append_to_a_non_list_key_is_refused_naming_it() -> None:
    with pytest.raises(InvalidConfig, match="'retention.ms' is of type LONG"):
        alter_incrementally(REGISTRY, "topic", "t", {}, [("retention.ms", AlterOp.APPEND, "5")])


@pytest.mark.parametrize(("operations", "error", "message"), [
    ([("retention.ms", 0, "soon")], InvalidConfig, "invalid value 'soon' for topic config 'retention.ms'"),
    ([("no.such.key", 0, "1")], InvalidConfig, "unknown topic config 'no.such.key'"),
    ([("retention.ms", 7, "1")], InvalidRequest, "unknown operation 7 for config 'retention.ms'"),
    ([("retention.ms", 0, None)], InvalidRequest, "Null value not supported for : retention.ms"),
    ([("no.such.key", 9, None)], InvalidRequest, "Null value not supported for : no.such.key"),
    ([("retention.ms", 0, "1"), ("retention.ms", 1, None)], InvalidRequest, "appears more than once"),
])
def test_invalid_incremental_requests_say_what_is_wrong(
    operations: list[tuple[str, int, str | None]], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        alter_incrementally(REGISTRY, "topic", "t", {}, operations)


def test_replace_resets_keys_the_request_leaves_out() -> None:
    event = replace_overrides(REGISTRY, "broker", "1", {"num.partitions": "3", "group.max.size": "9"},
                              [("group.max.size", "10"), ("auto.create.topics.enable", "false")])
    assert event == ConfigChanged("broker", "1", (
        ("num.partitions", None), ("auto.create.topics.enable", "false"), ("group.max.size", "10"),
    ))
    states = fold(CATALOG, [ConfigChanged("broker", "1", (("num.partitions", "3"), ("group.max.size", "9"))), event])
    assert states[resource_key("broker", "1")] == ResourceConfig(
        (("auto.create.topics.enable", "false"), ("group.max.size", "10"))
    )


def test_replace_refuses_null_values_and_invalid_ones() -> None:
    with pytest.raises(InvalidRequest, match="Null value not supported for : retention.ms"):
        replace_overrides(REGISTRY, "topic", "t", {}, [("retention.ms", None)])
    with pytest.raises(InvalidConfig, match="must be at least -1"):
        replace_overrides(REGISTRY, "topic", "t", {}, [("retention.ms", "-5")])


@pytest.mark.parametrize(("key", "value"), [
    ("share.auto.offset.reset", "earliest"), ("share.auto.offset.reset", "by_duration:PT1H30M"),
    ("share.record.lock.duration.ms", "15000"), ("share.delivery.count.limit", "10"),
    ("consumer.session.timeout.ms", "60000"), ("share.isolation.level", "read_committed"),
])
def test_group_keys_accept_kafkas_values(key: str, value: str) -> None:
    event = alter_incrementally(REGISTRY, "group", "g", {}, [(key, AlterOp.SET, value)])
    assert event == ConfigChanged("group", "g", ((key, value),))


@pytest.mark.parametrize(("key", "value", "rule"), [
    ("share.auto.offset.reset", "newest", "must be latest, earliest or by_duration"),
    ("share.auto.offset.reset", "by_duration:-PT1H", "must be latest, earliest or by_duration"),
    ("share.record.lock.duration.ms", "0", "must be at least 1"),  # the broker's bounds: core/config/group_bounds
    ("share.delivery.count.limit", "1", "must be at least 2"),
    ("consumer.heartbeat.interval.ms", "fast", "must be an integer"),
])
def test_group_keys_refuse_values_kafka_refuses(key: str, value: str, rule: str) -> None:
    with pytest.raises(InvalidConfig, match=f"group config '{key}': {rule}"):
        alter_incrementally(REGISTRY, "group", "g", {}, [(key, AlterOp.SET, value)])


def test_group_defaults_are_kafkas() -> None:
    defaults = {key.name: key.default for key in REGISTRY.known("group")}
    assert defaults["share.record.lock.duration.ms"] == "30000"
    assert defaults["share.delivery.count.limit"] == "5"
    assert defaults["share.auto.offset.reset"] == "latest"


@pytest.mark.parametrize(("key", "value", "valid"), [
    ("retention.ms", " 7 ", True),  # Kafka's ConfigDef trims
    ("retention.ms", "1_0", False),  # Python's int takes it, Long.parseLong does not
    ("retention.ms", str(2**63 - 1), True),
    ("retention.ms", "9" * 30, False),  # past 64 bits: it would reach the retention timer as a deadline
    ("max.message.bytes", str(2**31 - 1), True),
    ("max.message.bytes", str(2**31), False),  # an INT key: 32 bits, as Integer.parseInt
])
def test_numbers_are_read_as_kafka_reads_them(key: str, value: str, valid: bool) -> None:
    if valid:
        REGISTRY.validate("topic", [(key, value)])
    else:
        with pytest.raises(InvalidConfig, match="must be an integer"):
            REGISTRY.validate("topic", [(key, value)])
