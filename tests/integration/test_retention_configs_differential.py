"""DescribeConfigs of ``retention.ms`` / ``retention.bytes`` on a broker started with ``log.retention.*``, on
logwright and on Apache Kafka (``pytest --against kafka``): the value is the effective one and the broker keys are
listed as synonyms the way Kafka lists them (STATIC_BROKER_CONFIG, then DEFAULT_CONFIG), including Kafka's quirk
that a broker given only ``log.retention.minutes`` shows ``retention.ms`` as DEFAULT_CONFIG without synonyms."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, KafkaAdminClient, NewTopic

from .broker_process import BrokerProcess
from .conftest import BENCH, against

STATIC = "STATIC_BROKER_CONFIG"
DEFAULT = "DEFAULT_CONFIG"
TOPIC = "DYNAMIC_TOPIC_CONFIG"
MS_AND_HOURS = {"log.retention.ms": "120000", "log.retention.hours": "2", "log.retention.bytes": "1000000"}
MINUTES_ONLY = {"log.retention.minutes": "60"}


@pytest.fixture
def started_with(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A broker of the test's own started with the broker configs of the test's parameter."""
    config: dict[str, str] = request.param
    if against(request.config) == "kafka":
        sys.path.append(str(BENCH))
        from kafka_peer import KafkaPeer

        with KafkaPeer(tmp_path / "kafka", config=config) as kafka:
            yield kafka.bootstrap
        return
    process = BrokerProcess(tmp_path / "data", config=config).start()
    try:
        yield process.bootstrap
    finally:
        process.kill()


def described(bootstrap: str, topic_configs: dict[str, str]) -> dict[str, Any]:
    """A new topic's retention.ms and retention.bytes: value, source, synonyms as (name, value, source)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        topic = f"syn-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(topic, 1, 1, topic_configs=topic_configs)])
        deadline = time.monotonic() + 30
        while True:  # kafka-python drops the error of a topic the broker does not know yet
            result = admin.describe_configs([ConfigResource("TOPIC", topic, ["retention.ms", "retention.bytes"])],
                                            include_synonyms=True, config_filter="all")["topic"][topic]
            if result or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        return {name: (entry["value"], entry["config_source"],
                       [(synonym["name"], synonym["value"], synonym["source"]) for synonym in entry["synonyms"]])
                for name, entry in result.items()}
    finally:
        admin.close()


@pytest.mark.parametrize("started_with", [MS_AND_HOURS], indirect=True)
def test_broker_retention_configs_are_the_topic_defaults_and_its_synonyms(started_with: str) -> None:
    bytes_synonyms = [("log.retention.bytes", "1000000", STATIC), ("log.retention.bytes", "-1", DEFAULT)]
    ms_synonyms = [("log.retention.ms", "120000", STATIC), ("log.retention.hours", "2", STATIC),
                   ("log.retention.hours", "168", DEFAULT)]
    assert described(started_with, {}) == {
        "retention.ms": ("120000", STATIC, ms_synonyms),
        "retention.bytes": ("1000000", STATIC, bytes_synonyms),
    }
    assert described(started_with, {"retention.ms": "5000", "retention.bytes": "7000"}) == {
        "retention.ms": ("5000", TOPIC, [("retention.ms", "5000", TOPIC), *ms_synonyms]),
        "retention.bytes": ("7000", TOPIC, [("retention.bytes", "7000", TOPIC), *bytes_synonyms]),
    }


@pytest.mark.parametrize("started_with", [MINUTES_ONLY], indirect=True)
def test_minutes_alone_give_the_value_but_no_synonyms_as_on_kafka(started_with: str) -> None:
    assert described(started_with, {}) == {
        "retention.ms": ("3600000", DEFAULT, []),
        "retention.bytes": ("-1", DEFAULT, [("log.retention.bytes", "-1", DEFAULT)]),
    }
