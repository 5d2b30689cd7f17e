"""The broker's loggers as Kafka's BROKER_LOGGER config resource (type 8): ``kafka-configs --entity-type
broker-loggers`` lists them and sets or resets a level at run time (KIP-412).

Kafka lists its log4j loggers with their effective levels and changes one while it runs; nothing is persisted, so a
restart brings back the configured levels. logwright does the same with Python's logging: ``root`` and every logger
the process has made (``logwright.compat.server``, ``logwright.app``, ...), levels by Kafka's names. A level is not
broker state, so it is no event (Kafka keeps it out of its metadata log too). The answers are Kafka 4.4's, messages
included (tests/integration/test_broker_loggers.py runs on both): only a logger that exists can be set, the root
logger cannot be reset, APPEND and SUBTRACT are refused, a key named twice refuses the resource.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Collection, Sequence

from logwright.compat.errors import ErrorCode, KafkaError

BROKER_LOGGER = 8
DYNAMIC_BROKER_LOGGER_CONFIG = 6
"""The config source Kafka reports for every logger."""
ROOT = "root"
LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
          "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}
"""Kafka's level names (log4j's, less ALL and OFF, which Kafka refuses) and the Python levels they set; TRACE is below
DEBUG, as in log4j."""
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def loggers() -> dict[str, logging.Logger]:
    """``root`` and every logger made so far, by name (placeholders of dotted names that no module asked for are
    not loggers, as log4j lists only those it has)."""
    made = {name: logger for name, logger in logging.root.manager.loggerDict.items()
            if isinstance(logger, logging.Logger)}
    return {ROOT: logging.getLogger(), **dict(sorted(made.items()))}


def level_name(logger: logging.Logger) -> str:
    """The Kafka name of the logger's effective level (a Python level between two names takes the lower)."""
    effective = logger.getEffectiveLevel()
    return max(((level, name) for name, level in LEVELS.items() if level <= effective), default=(0, "TRACE"))[1]


def check_node(name: str, node_id: int, altering: bool) -> None:
    """A BROKER_LOGGER resource is named by this broker's id, refused with Kafka's messages otherwise."""
    if altering:
        if not name.lstrip("-").isdecimal():
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}")
        if int(name) != node_id:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {node_id}, but received {name}")
        return
    if not name:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    if not name.lstrip("-").isdecimal():
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}")
    if int(name) != node_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node_id} but received {name}")


def levels(keys: Collection[str] | None) -> list[tuple[str, str]]:
    """Each logger named in ``keys`` (every logger when ``None`` or empty) that exists, with its level name."""
    return [(name, level_name(logger)) for name, logger in loggers().items() if not keys or name in keys]


def alter(operations: Sequence[tuple[str, int, str | None]], validate_only: bool) -> None:
    """Check every ``(logger, operation, value)`` of one resource, then apply them all (none if one is refused, or
    with ``validate_only``): SET a level, DELETE a logger's own level so it follows its parent's."""
    if any(count > 1 for count in Counter(name for name, _, _ in operations).values()):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    known = loggers()
    changes: list[tuple[logging.Logger, int]] = []
    for name, operation, value in operations:
        if operation in (APPEND, SUBTRACT):
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"{'APPEND' if operation == APPEND else 'SUBTRACT'} "
                                                        f"operation is not allowed for the BROKER_LOGGER resource")
        if operation not in (SET, DELETE):
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unknown operation type {operation} is not allowed for the BROKER_LOGGER resource")
        if operation == SET and value is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {name}")
        logger = known.get(name)
        if logger is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
        if operation == DELETE:
            if name == ROOT:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
            changes.append((logger, logging.NOTSET))
            continue
        if value not in LEVELS:
            raise KafkaError(ErrorCode.INVALID_CONFIG, (
                f"Cannot set the log level of {name} to {value} as it is not a supported log level. Valid log levels "
                f"are {', '.join(sorted(LEVELS))}"))
        changes.append((logger, LEVELS[value]))
    if not validate_only:
        for logger, level in changes:
            logger.setLevel(level)
