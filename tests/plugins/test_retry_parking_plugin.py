"""A third-party plugin replaces the retry letter topics' dead-letter policy through ``logwright_decide_archive``:
the hook is told the reconsume count, the reason and the record's first topic, on a real broker process."""

from __future__ import annotations

import pytest
from logwright.client import BrokerError
from logwright.testing import TestClient

from tests.plugins.retry_parking_plugin import PARKING_KEY


@pytest.fixture
def logwright_plugins() -> list[str]:
    return ["tests.plugins.retry_parking_plugin"]


def test_a_record_reconsumed_past_the_limit_is_parked_where_the_plugin_says(logwright_client: TestClient) -> None:
    client = logwright_client
    client.create_topic("orders")
    client.create_topic("parking")
    client.produce("orders", [b"poison", b"fine"])
    client.set_group_configs("parked", {"logwright.retry.max.reconsume.times": "0", PARKING_KEY: "parking"})
    consumer = client.subscribe("orders", "parked", initial_position="earliest")
    message = consumer.receive(timeout=20)
    moved = consumer.reconsume_later(message, 1_000)
    assert (moved.topic, moved.reconsume_times, moved.dead_lettered) == ("parking", 1, True)
    with pytest.raises(BrokerError, match="unknown topic"):  # the built-in default was never created
        client.produce("orders-parked-DLQ", [b"x"])
    parked = client.subscribe("parking", "reader", initial_position="earliest").receive(timeout=20)
    headers = dict(parked.headers)
    assert parked.value == b"poison"
    assert (headers["parked.after"], headers["parked.reason"]) == (b"1", b"max reconsume times reached")
    assert headers["parked.from"] == b"orders/orders-0@0"


def test_groups_without_the_plugin_key_keep_the_built_in_dead_letter_topic(logwright_client: TestClient) -> None:
    client = logwright_client
    client.create_topic("payments")
    client.produce("payments", [b"poison"])
    client.set_group_configs("plain", {"logwright.retry.max.reconsume.times": "0"})
    consumer = client.subscribe("payments", "plain", initial_position="earliest")
    moved = consumer.reconsume_later(consumer.receive(timeout=20), 1_000)
    assert (moved.topic, moved.reconsume_times, moved.dead_lettered) == ("payments-plain-DLQ", 1, True)
    copy = client.subscribe("payments-plain-DLQ", "reader", initial_position="earliest").receive(timeout=20)
    assert copy.value == b"poison" and dict(copy.headers)["RECONSUMETIMES"] == b"1"
