"""The Java client (kafka-clients 4.x from Maven Central) against logwright and, in the same run, Apache Kafka.

peers/java/src/.../ClientScenario.java is compiled with javac; each step (producer, consumer group, share
consumer with explicit acknowledgement, share group offsets through the Admin client) runs as its own JVM
and prints ``OK <step>`` or ``FAIL <why>``. Opt-in (``make compat-java`` or ``pytest tests/peers --peers``):
it needs java, javac and mvn, and starts a Kafka JVM.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.broker_process import BrokerProcess

ROOT = Path(__file__).resolve().parents[2]
JAVA = ROOT / "peers" / "java"
sys.path.insert(0, str(ROOT / "bench"))

from kafka_peer import KafkaPeer, java, resolve  # noqa: E402

pytestmark = pytest.mark.peers


@pytest.fixture(scope="module")
def classpath() -> str:
    """Resolve kafka-clients and compile the scenario once per run."""
    if shutil.which("javac") is None:
        pytest.fail("javac is missing: install a JDK 17+ (default-jdk-headless)")
    lib = JAVA / "target" / "lib"
    resolve(pom=JAVA / "pom.xml", lib=lib)
    classes = JAVA / "target" / "classes"
    sources = sorted(str(path) for path in (JAVA / "src").rglob("*.java"))
    subprocess.run(["javac", "-d", str(classes), "-cp", f"{lib}/*", *sources], check=True)
    return f"{classes}:{lib}/*"


@pytest.fixture(scope="module", params=["logwright", "kafka"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(name, bootstrap) of a broker started for this module: logwright, then Apache Kafka."""
    if request.param == "kafka":
        with KafkaPeer(tmp_path_factory.mktemp("kafka")) as kafka:
            yield "kafka", kafka.bootstrap
        return
    broker = BrokerProcess(tmp_path_factory.mktemp("logwright") / "data").start()
    try:
        yield "logwright", broker.bootstrap
    finally:
        broker.kill()


@pytest.mark.parametrize("step", ["producer", "group", "share", "share-offsets"])
def test_java_client(classpath: str, server: tuple[str, str], step: str) -> None:
    _name, bootstrap = server
    run = subprocess.run([java(), "-cp", classpath, "logwright.peers.ClientScenario", bootstrap, step],
                         capture_output=True, text=True, timeout=240)
    assert run.returncode == 0 and f"OK {step}" in run.stdout, f"{run.stdout}\n{run.stderr[-3000:]}"
