"""KafkaJS (Node) and Sarama (Go) against logwright and, in the same run, Apache Kafka.

peers/kafkajs_client.py and peers/sarama_client.py run their client's scenario (peers/node/scenario.js,
peers/sarama/scenario.go: producer, consumer group, transactions, admin, SASL with PLAIN and OAUTHBEARER), each
step as its own process, against one broker started for it (with a SASL_PLAINTEXT listener). Both clients carry
their own protocol code and choose their own API versions, so they meet request versions and shapes that librdkafka
and the Java client do not send. Opt-in (``make compat-clients`` or ``pytest tests/peers --peers``): they need node
with npm and a go toolchain, and start a Kafka JVM.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.peers.scenario_runs import assert_every_step_passes

pytestmark = pytest.mark.peers


@pytest.mark.parametrize("against", ["logwright", "kafka"])
@pytest.mark.parametrize("client", ["kafkajs", "sarama"])
def test_every_client_step_passes(client: str, against: str, tmp_path: Path) -> None:
    assert_every_step_passes(f"{client}_client", against, tmp_path)
