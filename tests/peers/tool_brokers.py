"""The broker a module of Kafka's own tools runs against: logwright or Apache Kafka 4.4, started once per module.

Both ``test_kafka_tools`` and ``test_kafka_system_tools`` run Kafka's tools as their main classes on the jars
``bench/kafka/tools/pom.xml`` resolves (kafka-tools 4.3.0: 4.4.0 is not on Maven Central here).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.testing.broker_process import BrokerProcess

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # bench/ is not a package: kafka_peer finds java, resolves jars, runs Kafka
import kafka_peer  # noqa: E402

POM = ROOT / "bench" / "kafka" / "tools" / "pom.xml"
LIB = ROOT / "bench" / "kafka" / "target" / "tools-lib"
BROKERS = ("logwright", "kafka")
__all__ = ["BROKERS", "LIB", "POM", "kafka_peer", "per_broker", "tool_broker"]


def per_broker(group: str) -> list[object]:
    """The module fixture's params: one xdist group per broker (`make compat-java`, --dist loadgroup), so each
    broker is started once, on one worker."""
    return [pytest.param(name, marks=pytest.mark.xdist_group(f"{group}-{name}")) for name in BROKERS]


@contextlib.contextmanager
def tool_broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                name: str) -> Iterator[str]:
    """The tools' jars resolved and ``request.param``'s broker started; its bootstrap address."""
    kafka_peer.resolve(pom=POM, lib=LIB)
    work = tmp_path_factory.mktemp(f"{name}-{request.param}")
    broker: BrokerProcess | kafka_peer.KafkaPeer
    broker = kafka_peer.KafkaPeer(work / "kafka") if request.param == "kafka" else BrokerProcess(work / "data")
    broker.start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()
