"""Client-metrics subscriptions (KIP-714's CLIENT_METRICS config resource, type 16) over the wire, as Kafka 4.4 keeps
them: set, checked, described, listed and removed with Kafka's codes and words (``--against kafka`` runs the same
requests there; what ``kafka-client-metrics`` does with them is in tests/peers/test_kafka_tools.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kio.schema.alter_configs.v2 import request as alter_configs
from kio.schema.describe_configs.v4 import request as describe_configs
from kio.schema.incremental_alter_configs.v1 import request as incremental
from kio.schema.list_config_resources.v0 import request as list_v0
from kio.schema.list_config_resources.v1 import request as list_v1
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make
from logwright.testing.clients import one_request

CLIENT_METRICS, SET, DELETE, APPEND, SUBTRACT = 16, 0, 1, 2, 3
DYNAMIC, DEFAULT, INT, LIST = 7, 5, 3, 7


def altered(bootstrap: str, name: str, *changes: tuple[str, int, str | None],
            validate_only: bool = False) -> tuple[int, str | None]:
    configs = tuple(make(incremental.AlterableConfig, name=key, config_operation=op, value=value)
                    for key, op, value in changes)
    answer = one_request(bootstrap, make(incremental.IncrementalAlterConfigsRequest, resources=(make(
        incremental.AlterConfigsResource, resource_type=CLIENT_METRICS, resource_name=name, configs=configs),),
        validate_only=validate_only), "client-metrics")
    [result] = answer.responses
    return result.error_code, result.error_message


def replaced(bootstrap: str, name: str, *configs: tuple[str, str]) -> tuple[int, str | None]:
    answer = one_request(bootstrap, make(alter_configs.AlterConfigsRequest, resources=(make(
        alter_configs.AlterConfigsResource, resource_type=CLIENT_METRICS, resource_name=name, configs=tuple(
            make(alter_configs.AlterableConfig, name=key, value=value) for key, value in configs)),),
        validate_only=False), "client-metrics")
    [result] = answer.responses
    return result.error_code, result.error_message


def described(bootstrap: str, name: str, keys: tuple[str, ...] | None = None) -> Any:
    answer = one_request(bootstrap, make(describe_configs.DescribeConfigsRequest, resources=(make(
        describe_configs.DescribeConfigsResource, resource_type=CLIENT_METRICS, resource_name=name,
        configuration_keys=keys),), include_synonyms=True, include_documentation=False), "client-metrics")
    [result] = answer.results
    return result.error_code, result.error_message, [
        (entry.name, entry.value, entry.config_source, entry.read_only, entry.is_sensitive, entry.config_type,
         [(synonym.name, synonym.value, synonym.source) for synonym in entry.synonyms]) for entry in result.configs]


def listed(bootstrap: str) -> list[str]:
    """The subscriptions ListConfigResources v1 names, checked against v0 (Kafka's ListClientMetricsResources)."""
    answer = one_request(bootstrap, make(list_v1.ListConfigResourcesRequest, resource_types=(CLIENT_METRICS,)),
                         "client-metrics")
    assert answer.error_code == ErrorCode.NONE
    assert {resource.resource_type for resource in answer.config_resources} <= {CLIENT_METRICS}
    names = sorted(resource.resource_name for resource in answer.config_resources)
    v0 = one_request(bootstrap, make(list_v0.ListConfigResourcesRequest), "client-metrics")
    assert sorted(resource.resource_name for resource in v0.config_resources) == names
    return names


def unique() -> str:
    return f"subscription-{uuid.uuid4().hex[:8]}"


def defaults(interval: str = "300000", match: str = "", metrics: str = "") -> list[Any]:
    def entry(name: str, value: str, default: str, config_type: int) -> Any:
        source, synonyms = (DEFAULT, []) if value == default else (DYNAMIC, [(name, value, DYNAMIC)])
        return name, value, source, False, False, config_type, synonyms
    return [entry("interval.ms", interval, "300000", INT), entry("match", match, "", LIST),
            entry("metrics", metrics, "", LIST)]


def test_a_subscription_is_set_described_listed_and_removed(bootstrap: str) -> None:
    name = unique()
    assert described(bootstrap, name) == (ErrorCode.NONE, "", defaults())  # any name describes, with the defaults
    assert name not in listed(bootstrap)
    assert altered(bootstrap, name, ("interval.ms", SET, "100"), validate_only=True) == (ErrorCode.NONE, None)
    assert name not in listed(bootstrap)
    assert altered(bootstrap, name, ("metrics", SET, " org.apache.kafka.producer. , org.apache.kafka.consumer."),
                   ("interval.ms", SET, "5000"),
                   ("match", SET, " client_id = app-.* , client_software_name=apache-kafka-java")) == \
        (ErrorCode.NONE, None)
    stored = defaults("5000", "client_id = app-.*,client_software_name=apache-kafka-java",
                      "org.apache.kafka.producer.,org.apache.kafka.consumer.")
    assert described(bootstrap, name) == (ErrorCode.NONE, "", stored)
    assert described(bootstrap, name, ("interval.ms",)) == (ErrorCode.NONE, "", stored[:1])
    assert name in listed(bootstrap)
    assert altered(bootstrap, name, ("metrics", DELETE, None), ("interval.ms", DELETE, None),
                   ("match", DELETE, None), ("nosuch", DELETE, None)) == (ErrorCode.NONE, None)
    assert described(bootstrap, name) == (ErrorCode.NONE, "", defaults())
    assert name not in listed(bootstrap)


def test_alter_configs_replaces_a_subscription_and_an_empty_one_is_gone(bootstrap: str) -> None:
    name = unique()
    assert replaced(bootstrap, name, ("metrics", "*"), ("interval.ms", "1000")) == (ErrorCode.NONE, None)
    assert described(bootstrap, name)[2] == defaults("1000", "", "*")
    assert name in listed(bootstrap)
    assert replaced(bootstrap, name) == (ErrorCode.NONE, None)
    assert name not in listed(bootstrap)


@pytest.mark.parametrize(("change", "code", "message"), [
    (("interval.ms", SET, "50"), ErrorCode.INVALID_REQUEST,
     "Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    (("interval.ms", SET, "3600001"), ErrorCode.INVALID_REQUEST,
     "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"),
    (("interval.ms", SET, "abc"), ErrorCode.INVALID_CONFIG,
     "Invalid value abc for configuration interval.ms: Not a number of type INT"),
    (("interval.ms", SET, None), ErrorCode.INVALID_REQUEST, "Null value not supported for : interval.ms"),
    (("match", SET, "bogus=x"), ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: bogus=x"),
    (("match", SET, "client_id=abc.*,client_id=["), ErrorCode.INVALID_CONFIG,
     "Illegal client matching pattern: client_id=["),
    (("match", SET, "client_id"), ErrorCode.INVALID_CONFIG, "Illegal client matching pattern: client_id"),
    (("foo", SET, "1"), ErrorCode.INVALID_REQUEST, "Unknown client metrics configuration: foo"),
    (("metrics", APPEND, "x"), ErrorCode.INVALID_CONFIG, "Can't APPEND to key metrics because its type is not LIST."),
    (("metrics", SUBTRACT, "x"), ErrorCode.INVALID_CONFIG,
     "Can't SUBTRACT to key metrics because its type is not LIST."),
])
def test_a_bad_subscription_is_refused_in_kafkas_words(bootstrap: str, change: tuple[str, int, str | None],
                                                        code: ErrorCode, message: str) -> None:
    name = unique()
    assert altered(bootstrap, name, change) == (code, message)
    assert name not in listed(bootstrap)


def test_a_subscription_needs_a_name(bootstrap: str) -> None:
    assert altered(bootstrap, "", ("interval.ms", SET, "1000")) == (
        ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    assert described(bootstrap, "") == (
        ErrorCode.INVALID_REQUEST, "Client metrics subscription name must not be empty", [])


def test_a_pattern_java_compiles_and_re2_does_not_is_kept(bootstrap: str) -> None:
    """A look-ahead: Java's Pattern compiles it (RE2, which checks patterns first, does not)."""
    name = unique()
    assert altered(bootstrap, name, ("match", SET, "client_id=(?!test-).*")) == (ErrorCode.NONE, None)
    assert described(bootstrap, name, ("match",))[2][0][1] == "client_id=(?!test-).*"
    assert altered(bootstrap, name, ("match", DELETE, None)) == (ErrorCode.NONE, None)
