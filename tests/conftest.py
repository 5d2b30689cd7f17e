"""Options that must be known before any test directory is collected.

``--against`` lives here rather than in tests/integration/conftest.py because pytest only reads options from
the conftest files of the paths it is given, and ``pytest`` with no path starts from ``tests``.

Hypothesis's per-example deadline (200 ms) is a wall-clock assertion: on the shared two-core machine an
example that is fast alone takes seconds while other suites run, and the run fails as "flaky" for no
fault of the code. The examples still run; only their timing is no longer judged.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("logwright", deadline=None)
settings.load_profile("logwright")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--against", choices=("logwright", "kafka"), default="logwright",
                     help="run the integration scenarios on logwright (default) or on Apache Kafka 4.x, "
                          "started from Maven Central by bench/kafka_peer.py, to check their expectations")
    parser.addoption("--peers", action="store_true", default=False,
                     help="run the opt-in peer scenarios (marked peers: Java client, ...) as well")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "logwright_only: needs a private logwright process (restart, kill, "
                                       "`logwright check`) or checks logwright-specific bytes; skipped with "
                                       "--against kafka")
    config.addinivalue_line("markers", "differential: the fast subset that CI also runs with --against kafka")
    config.addinivalue_line("markers", "peers: heavy peer scenarios (JVMs, other toolchains); only with --peers")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--peers"):
        return
    for item in items:
        if item.get_closest_marker("peers") is not None:
            item.add_marker(pytest.mark.skip(reason="opt-in peer scenario: run with --peers (make compat-java)"))


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under ``pytest -n N --dist loadfile`` (`make test`): each module on one worker (its module-scoped brokers
    start once), and every Spark test on one (one SparkSession, 10-50 s to start, not one per worker)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class ModulesAndSpark(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "tests/spark" if nodeid.startswith("tests/spark/") else super()._split_scope(nodeid)

    return ModulesAndSpark(config, log)
