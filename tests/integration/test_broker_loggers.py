"""The broker's loggers as Kafka's BROKER_LOGGER config resource (``kafka-configs --entity-type broker-loggers``),
answered as Apache Kafka 4.4 answers (``--against kafka``): the listing, setting and resetting a level at run time,
and every refusal with Kafka's message. The loggers themselves differ (log4j's against Python's), so the tests take
them from the listing.
"""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.describe_configs.v4 import request as describe_configs
from kio.schema.incremental_alter_configs.v1 import request as alter_configs
from logwright.compat.registry import make

from .test_controller_timeouts import ask

pytestmark = pytest.mark.differential

BROKER_LOGGER, NODE = 8, "1"
NONE, INVALID_CONFIG, INVALID_REQUEST = 0, 40, 42
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
LEVELS = {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"}


def describe(bootstrap: str, keys: tuple[str, ...] | None = None, node: str = NODE,
             documentation: bool = False) -> tuple[int, str | None, list[Any]]:
    (answer,) = ask(bootstrap, make(describe_configs.DescribeConfigsRequest, resources=(make(
        describe_configs.DescribeConfigsResource, resource_type=BROKER_LOGGER, resource_name=node,
        configuration_keys=keys),), include_synonyms=True, include_documentation=documentation))
    (result,) = answer.results
    return int(result.error_code), result.error_message, list(result.configs)


def levels(bootstrap: str, keys: tuple[str, ...] | None = None) -> dict[str, str]:
    code, _, configs = describe(bootstrap, keys)
    assert code == NONE
    return {entry.name: entry.value for entry in configs}


def alter(bootstrap: str, *operations: tuple[str, int, str | None], node: str = NODE,
          validate_only: bool = False) -> tuple[int, str | None]:
    (answer,) = ask(bootstrap, make(alter_configs.IncrementalAlterConfigsRequest, resources=(make(
        alter_configs.AlterConfigsResource, resource_type=BROKER_LOGGER, resource_name=node, configs=tuple(
            make(alter_configs.AlterableConfig, name=name, config_operation=operation, value=value)
            for name, operation, value in operations)),), validate_only=validate_only))
    (result,) = answer.responses
    return int(result.error_code), result.error_message


def test_every_logger_is_listed_with_its_level(bootstrap: str) -> None:
    code, message, configs = describe(bootstrap, documentation=True)
    assert (code, message) == (NONE, "")
    assert "root" in {entry.name for entry in configs} and len(configs) > 1
    for entry in configs:
        assert entry.value in LEVELS, entry.name
        assert (entry.read_only, entry.config_source, entry.is_sensitive, entry.synonyms, entry.config_type,
                entry.documentation) == (False, 6, False, (), 0, ""), entry.name
    assert describe(bootstrap, ("no.such.logger",)) == (NONE, "", [])
    assert describe(bootstrap, node="") == (INVALID_REQUEST, "Broker id must not be empty", [])
    assert describe(bootstrap, node="7")[:2] == (INVALID_REQUEST, "Unexpected broker id, expected 1 but received 7")


def test_a_level_is_set_and_reset_at_run_time(bootstrap: str) -> None:
    every = levels(bootstrap)
    name = max(logger for logger in every if logger != "root")
    parents = [logger for logger in every if name.startswith(logger + ".")]
    inherited = every[max(parents, key=len)] if parents else every["root"]
    root = every["root"]
    assert alter(bootstrap, ("root", SET, "TRACE" if root != "TRACE" else "DEBUG"), validate_only=True) == (NONE, None)
    assert levels(bootstrap, ("root",)) == {"root": root}
    for level in ("TRACE", "ERROR", "DEBUG"):
        assert alter(bootstrap, (name, SET, level)) == (NONE, None)
        assert levels(bootstrap, (name,)) == {name: level}
    assert alter(bootstrap, (name, DELETE, None)) == (NONE, None)
    assert levels(bootstrap, (name,)) == {name: inherited}  # its parent's again


def test_what_kafka_refuses(bootstrap: str) -> None:
    name = max(logger for logger in levels(bootstrap) if logger != "root")
    valid = "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"
    assert alter(bootstrap, ("no.such.logger", SET, "DEBUG")) == (
        INVALID_CONFIG, "Logger no.such.logger does not exist!")
    assert alter(bootstrap, ("no.such.logger", DELETE, None)) == (
        INVALID_CONFIG, "Logger no.such.logger does not exist!")
    for level in ("LOUD", "debug", "ALL", "OFF"):
        assert alter(bootstrap, (name, SET, level)) == (
            INVALID_CONFIG, f"Cannot set the log level of {name} to {level} as it is not a supported log level. "
                            f"{valid}")
    assert alter(bootstrap, (name, SET, None)) == (INVALID_REQUEST, f"Null value not supported for : {name}")
    assert alter(bootstrap, (name, APPEND, "DEBUG")) == (
        INVALID_REQUEST, "APPEND operation is not allowed for the BROKER_LOGGER resource")
    assert alter(bootstrap, (name, SUBTRACT, "DEBUG")) == (
        INVALID_REQUEST, "SUBTRACT operation is not allowed for the BROKER_LOGGER resource")
    assert alter(bootstrap, (name, 7, "DEBUG")) == (
        INVALID_REQUEST, "Unknown operation type 7 is not allowed for the BROKER_LOGGER resource")
    assert alter(bootstrap, ("root", DELETE, None)) == (
        INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
    assert alter(bootstrap, (name, SET, "DEBUG"), (name, SET, "INFO")) == (
        INVALID_REQUEST, "Error due to duplicate config keys")
    assert alter(bootstrap, (name, SET, "DEBUG"), node="7") == (
        INVALID_REQUEST, "Unexpected node id. Expected 1, but received 7")
    assert alter(bootstrap, (name, SET, "DEBUG"), node="") == (
        INVALID_REQUEST, "Node id must be an integer, but it is: ")
