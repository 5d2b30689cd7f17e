from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .broker_process import BrokerProcess


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/integration" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the whole session; tests use their own topic names so they do not interfere.

    ``LOGWRIGHT_BOOTSTRAP`` points the suite at an already running broker (or Apache Kafka) instead.
    """
    if os.environ.get("LOGWRIGHT_BOOTSTRAP"):
        yield _External(os.environ["LOGWRIGHT_BOOTSTRAP"])  # type: ignore[misc]
        return
    broker = BrokerProcess(tmp_path_factory.mktemp("shared") / "data").start()
    try:
        yield broker
    finally:
        if broker.alive():
            assert broker.stop() == 0, broker.log_tail()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker of the test's own, for restarts and kills."""
    process = BrokerProcess(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture
def bootstrap(shared_broker: BrokerProcess) -> str:
    return shared_broker.bootstrap


class _External:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def alive(self) -> bool:
        return True
