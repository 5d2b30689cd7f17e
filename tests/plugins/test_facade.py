"""`BrokerFacade` in a real broker: what a background task can read, append and wait for, and what is refused."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from logwright.testing import TestClient

from .facade_probe import REPORT_TOPIC


@pytest.fixture
def logwright_plugins() -> list[str]:
    return ["tests.plugins.facade_probe", "tests.plugins.third_party.audit_plugin"]


@pytest.fixture
def logwright_config() -> dict[str, str]:
    return {"num.partitions": "3"}


def test_a_task_appends_through_the_produce_path_and_reads_configs(
        logwright_client: TestClient, logwright_advance_clock: Callable[[int], int]) -> None:
    logwright_client.create_topic("locked", configs={"logwright.audit.read.only": "true"})
    logwright_client.create_topic(REPORT_TOPIC)
    now = logwright_advance_clock(1000)
    consumer = logwright_client.subscribe(REPORT_TOPIC, "reader", initial_position="earliest")
    first, second = consumer.receive(timeout=30), consumer.receive(timeout=30)
    assert (first.offset, first.key, first.value, first.headers, first.timestamp) == (0, b"k", b"first",
                                                                                      (("h", b"v"),), 7)
    report = json.loads(second.value)
    assert report["now"] == now
    assert report["missing"][0] == "UNKNOWN_TOPIC_OR_PARTITION" and "missing-0" in report["missing"][1]
    assert report["locked"][0] == "POLICY_VIOLATION", "the admission plugins see a task's appends too"
    assert "read-only" in report["locked"][1]
    assert report["group_limit"] == "5" and report["unknown_group_key"] is None
    assert report["read_only"] == "true" and report["missing_topic_config"] is None
    assert report["partitions"] == [1, None] and report["broker_config"] == "3"
    assert report["first_offset"] == 0
