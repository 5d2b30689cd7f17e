"""Group configs whose default and bounds are the broker's (``share.record.lock.duration.ms`` and
``group.share.(min.|max.)record.lock.duration.ms``, and so on): Kafka 4.4's refusals word for word, and DescribeConfigs
naming the broker config as the default's synonym (``--against kafka`` runs them on Kafka)."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.describe_configs.v4 import request as describe_configs
from kio.schema.incremental_alter_configs.v1 import request as alter_configs
from logwright.compat.registry import make
from logwright.testing.clients import one_request

pytestmark = pytest.mark.differential

GROUP, INVALID_CONFIG = 32, 40
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, DYNAMIC_GROUP_CONFIG = 4, 5, 8


def refusal(bootstrap: str, key: str, value: str) -> tuple[int, str | None]:
    """The group config change's answer (validate only: nothing is stored)."""
    answer = one_request(bootstrap, make(alter_configs.IncrementalAlterConfigsRequest, resources=(
        make(alter_configs.AlterConfigsResource, resource_type=GROUP, resource_name="bounded", configs=(
            make(alter_configs.AlterableConfig, name=key, config_operation=0, value=value),)),), validate_only=True))
    [result] = answer.responses
    return int(result.error_code), result.error_message


def described(bootstrap: str, group: str, keys: tuple[str, ...]) -> dict[str, Any]:
    answer = one_request(bootstrap, make(describe_configs.DescribeConfigsRequest, resources=(
        make(describe_configs.DescribeConfigsResource, resource_type=GROUP, resource_name=group,
             configuration_keys=keys),), include_synonyms=True, include_documentation=False))
    [result] = answer.results
    return {entry.name: (entry.value, int(entry.config_source),
                         [(synonym.name, synonym.value, int(synonym.source)) for synonym in entry.synonyms])
            for entry in result.configs}


@pytest.mark.parametrize(("key", "value", "minimum", "maximum"), [
    ("share.record.lock.duration.ms", "10000", 15000, 60000),
    ("share.record.lock.duration.ms", "70000", 15000, 60000),
    ("share.delivery.count.limit", "11", 2, 10),
    ("share.session.timeout.ms", "40000", 45000, 60000),
    ("share.heartbeat.interval.ms", "4000", 5000, 15000),
    ("consumer.session.timeout.ms", "61000", 45000, 60000),
    ("consumer.heartbeat.interval.ms", "20000", 5000, 15000),
    ("consumer.assignment.interval.ms", "16000", 0, 15000),
])
def test_a_group_value_outside_the_brokers_bounds_is_refused_in_kafkas_words(
        bootstrap: str, key: str, value: str, minimum: int, maximum: int) -> None:
    assert refusal(bootstrap, key, value) == (INVALID_CONFIG,
                                              f"{key} must be in the range {minimum} to {maximum} inclusive.")


def test_the_default_names_the_broker_config_it_comes_from(bootstrap: str) -> None:
    keys = ("share.record.lock.duration.ms", "share.delivery.count.limit", "consumer.session.timeout.ms")
    assert described(bootstrap, "bounded-defaults", keys) == {
        "share.record.lock.duration.ms": ("30000", DEFAULT_CONFIG,
                                          [("group.share.record.lock.duration.ms", "30000", DEFAULT_CONFIG)]),
        "share.delivery.count.limit": ("5", DEFAULT_CONFIG,
                                       [("group.share.delivery.count.limit", "5", DEFAULT_CONFIG)]),
        "consumer.session.timeout.ms": ("45000", DEFAULT_CONFIG,
                                        [("group.consumer.session.timeout.ms", "45000", DEFAULT_CONFIG)]),
    }


BROKER_SET = {"group.share.record.lock.duration.ms": "40000", "group.share.min.record.lock.duration.ms": "20000",
              "group.share.delivery.count.limit": "3", "group.consumer.session.timeout.ms": "50000",
              "group.consumer.max.session.timeout.ms": "55000"}


@pytest.mark.parametrize("started_with", [BROKER_SET], indirect=True)
def test_a_broker_set_default_and_bounds_are_every_groups(started_with: str) -> None:
    bootstrap = started_with
    assert refusal(bootstrap, "share.record.lock.duration.ms", "16000") == (
        INVALID_CONFIG, "share.record.lock.duration.ms must be in the range 20000 to 60000 inclusive.")
    assert refusal(bootstrap, "consumer.session.timeout.ms", "58000") == (
        INVALID_CONFIG, "consumer.session.timeout.ms must be in the range 45000 to 55000 inclusive.")
    assert refusal(bootstrap, "share.record.lock.duration.ms", "20000") == (0, None)
    keys = ("share.record.lock.duration.ms", "share.delivery.count.limit", "consumer.session.timeout.ms")
    assert described(bootstrap, "bounded-broker", keys) == {
        "share.record.lock.duration.ms": ("40000", STATIC_BROKER_CONFIG, [
            ("group.share.record.lock.duration.ms", "40000", STATIC_BROKER_CONFIG),
            ("group.share.record.lock.duration.ms", "30000", DEFAULT_CONFIG)]),
        "share.delivery.count.limit": ("3", STATIC_BROKER_CONFIG, [
            ("group.share.delivery.count.limit", "3", STATIC_BROKER_CONFIG),
            ("group.share.delivery.count.limit", "5", DEFAULT_CONFIG)]),
        "consumer.session.timeout.ms": ("50000", STATIC_BROKER_CONFIG, [
            ("group.consumer.session.timeout.ms", "50000", STATIC_BROKER_CONFIG),
            ("group.consumer.session.timeout.ms", "45000", DEFAULT_CONFIG)]),
    }
