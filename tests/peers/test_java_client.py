"""The Java client (kafka-clients 4.x from Maven Central) against logwright and, in the same run, Apache Kafka.

peers/java_client.py compiles peers/java/src/.../ClientScenario.java with javac and runs each step
(producer, consumer group, share consumer with explicit acknowledgement, share group offsets through the
Admin client, KIP-1191 dead-letter copies of a REJECT and of the delivery limit with
``errors.deadletterqueue.topic.name`` set, transactions: consume-transform-produce, an abort, a fenced zombie; a Kafka
Streams word count, exactly once, restored from its changelog; SASL and delegation tokens; SSL and SASL_SSL with PEM
stores) as its own JVM; Kafka is formatted with
``share.version=2``, without which it writes no dead-letter copy (the dead-letter step then fails there, as it
should). Opt-in (``make compat-java`` or ``pytest tests/peers --peers``): it needs java, javac and mvn, and starts a
Kafka JVM. ``make compat-table`` runs the same script against Tansu too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.peers.scenario_runs import assert_every_step_passes

pytestmark = pytest.mark.peers


@pytest.mark.parametrize("against", ["logwright", "kafka"])
def test_every_java_client_step_passes(against: str, tmp_path: Path) -> None:
    if shutil.which("javac") is None:
        pytest.fail("javac is missing: install a JDK 17+ (default-jdk-headless)")
    assert_every_step_passes("java_client", against, tmp_path)
