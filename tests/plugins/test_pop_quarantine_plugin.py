"""A third-party plugin redirects a pop group's dead letters through ``logwright_decide_archive``, the hook share
groups' dead letters go through: on a real broker process, after a nack and after a timeout, one WriteBatch
holding the copy and the `PopDeadLettered` that settles the original."""

from __future__ import annotations

import pytest
from logwright.client import BrokerError
from logwright.testing import TestClient

from tests.plugins.pop_quarantine_plugin import QUARANTINE_KEY


@pytest.fixture
def logwright_plugins() -> list[str]:
    return ["tests.plugins.pop_quarantine_plugin"]


def test_a_pop_groups_dead_letters_go_where_the_plugin_says(logwright_client: TestClient) -> None:
    client = logwright_client
    client.create_topic("orders")
    client.create_topic("quarantine")
    client.produce("orders", [b"poison", b"slow"])
    client.set_group_configs("billing", {"logwright.pop.max.reconsume.times": "0",
                                         "logwright.pop.init.mode": "earliest", QUARANTINE_KEY: "quarantine"})
    [poison] = client.pop("orders", "billing", 1, 10_000)
    assert client.nack(poison) is True, "the first failure is past max reconsume times 0"
    [slow] = client.pop("orders", "billing", 1, 10_000)
    assert slow.value == b"slow"
    client.advance_clock(10_000)  # its invisible time runs out: a failure too (RocketMQ #8332)
    assert client.pop("orders", "billing", 32, 10_000) == []
    client.set_group_configs("reader", {"logwright.pop.init.mode": "earliest"})
    copies = sorted(client.pop("quarantine", "reader", 32, 10_000), key=lambda message: message.offset)
    assert [copy.value for copy in copies] == [b"poison", b"slow"]
    first, second = (dict(copy.headers) for copy in copies)
    assert first["quarantine.by"] != b"invisible time ran out" and second["quarantine.by"] == b"invisible time ran out"
    assert (first["quarantine.reason"], first["quarantine.deliveries"]) == (b"max reconsume times reached", b"1")
    assert (first["quarantine.from"], second["quarantine.from"]) == (b"billing/orders-0@0", b"billing/orders-0@1")
    with pytest.raises(BrokerError, match="unknown topic"):  # the built-in DLQ.<group> was never created
        client.produce("DLQ.billing", [b"x"])
    [partition] = client.inspect_pop("orders", "billing")["partitions"]
    assert partition["consumed_offset"] == 2 and partition["entries"] == []
