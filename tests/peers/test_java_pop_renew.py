"""KIP-1222's RENEW in pop mode from the Java share consumer (kafka-clients 4.4.0), on a logwright broker process
with a manual clock (logwright only: pop is logwright's).

confluent-kafka 2.16 has no RENEW acknowledgement type, so the consumer is Java's: peers/java/src/.../
PopRenewScenario.java polls one record of a share group with ``logwright.subscription.mode=pop`` and, when told,
acknowledges it with RENEW. A pop-mode lock is the invisible time and RENEW changes it: renewed 10 s into a
20 s lock, the record is still held at the old deadline (20 s) and comes back only at the new one (30 s),
delivered once. Opt-in like the other Java tests (``pytest tests/peers --peers``): it needs java, javac and mvn.
"""

from __future__ import annotations

import asyncio
import select
import subprocess
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.client import Client
from logwright.testing.broker_process import BrokerProcess

from tests.integration.group_configs import set_group_configs
from tests.peers.java_scenarios import java_and_classpath

LOCK_MS = 20_000

pytestmark = pytest.mark.peers


def test_a_java_share_consumer_renews_its_pop_lock(tmp_path: Path) -> None:
    java, classpath = java_and_classpath()
    broker = BrokerProcess(tmp_path / "data", manual_clock=True).start()
    scenario: subprocess.Popen[str] | None = None
    try:
        bootstrap, topic, group = broker.bootstrap, "renewed", "pop-renew"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, 1)])[topic].result(30)
        set_group_configs(bootstrap, group, {"logwright.subscription.mode": "pop",
                                             "share.auto.offset.reset": "earliest",
                                             "share.record.lock.duration.ms": str(LOCK_MS)})
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce(topic, b"slow work")
        assert producer.flush(30) == 0
        scenario = subprocess.Popen([java, "-cp", classpath, "logwright.peers.PopRenewScenario", bootstrap, topic,
                                     group], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        assert read_until(scenario, "POLLED") == "POLLED 0 1"
        [held] = cursor(bootstrap, group, topic)["in_flight"]
        acquired_at = held["lock_deadline_ms"] - LOCK_MS
        renewed_at = broker.advance_clock(10_000)
        assert renewed_at == acquired_at + 10_000
        tell(scenario, "renew")
        assert read_until(scenario, "RENEWED") == "RENEWED"
        [held] = cursor(bootstrap, group, topic)["in_flight"]
        assert (held["first"], held["lock_deadline_ms"], held["delivery_count"]) == (0, renewed_at + LOCK_MS, 1)

        broker.advance_clock(LOCK_MS - 10_000)  # the old deadline: held still, not revived
        state = cursor(bootstrap, group, topic)
        assert [(e["first"], e["lock_deadline_ms"]) for e in state["in_flight"]] == [(0, renewed_at + LOCK_MS)]
        assert state["redeliveries"] == []

        broker.advance_clock(10_000)  # the new deadline: revived, waiting the retry table's first level
        state = cursor(bootstrap, group, topic)
        assert state["in_flight"] == []
        assert [(e["first"], e["delivery_count"]) for e in state["redeliveries"]] == [(0, 1)]
        tell(scenario, "close")
        out, err = scenario.communicate(timeout=60)
        assert scenario.returncode == 0 and "OK pop-renew" in out, f"{out}\n{err[-3000:]}"
    finally:
        if scenario is not None and scenario.poll() is None:
            scenario.kill()
            scenario.wait(10)
        broker.stop()


def cursor(bootstrap: str, group: str, topic: str) -> dict[str, Any]:
    """The group's cursor on partition 0 (LogwrightInspectCursor)."""
    async def inspect() -> dict[str, Any]:
        client = await Client.connect(bootstrap)
        try:
            [partition] = await client.inspect(group, topic)
            return dict(partition)
        finally:
            await client.close()

    return asyncio.run(inspect())


def tell(scenario: subprocess.Popen[str], step: str) -> None:
    assert scenario.stdin is not None
    scenario.stdin.write(step + "\n")
    scenario.stdin.flush()


def read_until(scenario: subprocess.Popen[str], prefix: str, timeout_s: float = 90.0) -> str:
    """The scenario's first stdout line starting with ``prefix`` (a ``FAIL`` line or its exit fails the test)."""
    assert scenario.stdout is not None
    ready, _, _ = select.select([scenario.stdout], [], [], timeout_s)
    while ready:
        line = scenario.stdout.readline().strip()
        if line.startswith(prefix):
            return line
        if line.startswith("FAIL") or (not line and scenario.poll() is not None):
            raise AssertionError(f"the Java scenario stopped: {line or scenario.returncode}")
        ready, _, _ = select.select([scenario.stdout], [], [], timeout_s)
    raise AssertionError(f"no {prefix!r} line from the Java scenario in {timeout_s} s")
