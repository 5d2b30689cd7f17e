"""The audit plugin's own tests: the API module and the ``logwright_*`` fixtures, nothing else of logwright."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from logwright.testing import BrokerError, BrokerProcess, Subscription, TestClient

from . import audit_plugin
from .audit_plugin import READ_ONLY_KEY, TICK_KEY, TICK_TOPIC

POLICY_VIOLATION = 44


@pytest.fixture
def logwright_config() -> dict[str, str]:
    return {TICK_KEY: "1000"}


def test_the_newest_consumer_takes_every_partition(logwright_host: Callable[..., object],
                                                   logwright_subscription: type[Subscription]) -> None:
    mode = logwright_host(audit_plugin).subscription_mode("newest")  # type: ignore[attr-defined]
    subscription = logwright_subscription(mode, records=5)
    subscription.join("first")
    subscription.join("second")
    assert subscription.fetch("first") == []
    assert subscription.fetch("second", max_records=2) == [0, 1]
    subscription.leave("second")
    assert subscription.fetch("first") == [0, 1, 2, 3, 4], "what the leaver held comes back to the next newest"


def test_a_read_only_topic_refuses_appends(logwright_client: TestClient) -> None:
    logwright_client.create_topic("locked", configs={READ_ONLY_KEY: "true"})
    logwright_client.create_topic("open")
    with pytest.raises(BrokerError) as refused:
        logwright_client.produce("locked", [b"no"])
    assert refused.value.code == POLICY_VIOLATION and "read-only" in str(refused.value)
    assert logwright_client.produce("open", [b"yes", b"again"]) == 0


def test_ticks_follow_the_broker_clock(logwright_broker: BrokerProcess, logwright_client: TestClient,
                                       logwright_advance_clock: Callable[[int], int]) -> None:
    logwright_client.create_topic(TICK_TOPIC)
    times = [logwright_advance_clock(1000) for _ in range(3)]
    consumer = logwright_client.subscribe(TICK_TOPIC, "auditor", initial_position="earliest")
    ticks = [consumer.receive(timeout=30).value for _ in times]
    assert ticks == [f"tick {time}".encode() for time in times]


def test_the_mode_is_a_group_config_value(logwright_client: TestClient) -> None:
    logwright_client.set_group_configs("audited", {"logwright.subscription.mode": "newest"})
    with pytest.raises(Exception, match="newest"):  # refused with the modes there are
        logwright_client.set_group_configs("audited", {"logwright.subscription.mode": "oldest"})
