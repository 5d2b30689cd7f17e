"""The Java client (kafka-clients 4.x from Maven Central) against logwright and, in the same run, Apache Kafka.

peers/java_client.py compiles peers/java/src/.../ClientScenario.java with javac and runs each step
(producer, consumer group, share consumer with explicit acknowledgement, share group offsets through the
Admin client) as its own JVM. Opt-in (``make compat-java`` or ``pytest tests/peers --peers``): it needs java,
javac and mvn, and starts a Kafka JVM.
``peers/compat_table.py`` runs the same steps against Tansu too.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from peers.java_client import STEPS, build, run_step
from peers.suite import broker

pytestmark = pytest.mark.peers


@pytest.fixture(scope="module")
def classpath() -> str:
    """Resolve kafka-clients and compile the scenario once per run."""
    if shutil.which("javac") is None:
        pytest.fail("javac is missing: install a JDK 17+ (default-jdk-headless)")
    return build()


@pytest.fixture(scope="module", params=["logwright", "kafka"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The bootstrap of a broker started for this module: logwright, then Apache Kafka."""
    name = str(request.param)
    with broker(name, tmp_path_factory.mktemp(name), {}) as peer:
        yield peer.bootstrap
        assert peer.alive(), peer.log_tail()


@pytest.mark.parametrize("step", STEPS)
def test_java_client(classpath: str, server: str, step: str) -> None:
    ok, output = run_step(classpath, server, step)
    assert ok, output
