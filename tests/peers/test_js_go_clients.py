"""KafkaJS (Node) and Sarama (Go) against logwright and, in the same run, Apache Kafka.

peers/kafkajs_client.py and peers/sarama_client.py run their client's scenario (peers/node/scenario.js,
peers/sarama/scenario.go: producer, consumer group, transactions, admin), each step as its own process, against one
broker started for it. Both clients carry their own protocol code and choose their own API versions, so they meet
request versions and shapes that librdkafka and the Java client do not send. Opt-in (``make compat-clients`` or
``pytest tests/peers --peers``): they need node with npm and a go toolchain, and start a Kafka JVM.

Each script runs as a child process, as the compat table runs it, so its clients and brokers end with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.peers


@pytest.mark.parametrize("against", ["logwright", "kafka"])
@pytest.mark.parametrize("client", ["kafkajs", "sarama"])
def test_every_client_step_passes(client: str, against: str, tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    run = subprocess.run([sys.executable, f"peers/{client}_client.py", "--against", against, "--results",
                          str(results)], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert results.exists(), f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    result = json.loads(results.read_text())
    assert result["error"] is None, run.stdout[-3000:]
    failures = {failure["test"]: failure["message"] for failure in result["failures"]}
    assert not failures and result["passed"] == result["ran"] == 4, f"{failures}\n{run.stdout[-5000:]}"
