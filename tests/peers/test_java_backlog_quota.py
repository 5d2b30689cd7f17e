"""The Java producer (kafka-clients 4.4.0) against backlog quotas on a logwright broker process (logwright only).

peers/java/src/.../BacklogQuotaScenario.java, compiled with the client scenario: a producer_exception quota
fails the record over it at once with PolicyViolationException; a producer_request_hold quota keeps the
record's future pending until a consumer group's commit drains the backlog, then it completes with its offset.
Opt-in like the other Java tests (``pytest tests/peers --peers``): it needs java, javac and mvn.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from logwright.testing.broker_process import BrokerProcess

from tests.peers.java_scenarios import java_and_classpath

pytestmark = pytest.mark.peers


def test_java_producer_is_refused_and_held_per_policy(tmp_path: Path) -> None:
    java, classpath = java_and_classpath()
    broker = BrokerProcess(tmp_path / "data").start()
    try:
        run = subprocess.run([java, "-cp", classpath, "logwright.peers.BacklogQuotaScenario", broker.bootstrap],
                             capture_output=True, text=True, timeout=240)
    finally:
        broker.stop()
    assert run.returncode == 0 and "OK backlog-quota" in run.stdout, f"{run.stdout}\n{run.stderr[-3000:]}"
