"""A third-party plugin installed from its own distribution is found through the entry-point group.

``examples/plugin-example`` is built and installed with pip (`tests.example_plugin`) into a temporary
directory put on ``sys.path``. `tests/integration/test_plugin_hooks.py` runs it inside a broker.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.core.cursors.plugin_decisions import Redeliver, Reject, ReleasedDelivery, ReleaseReason
from logwright.core.cursors.subscription_mode import DispatchView, Membership, ModeConsumer
from logwright.core.rangeset import RangeSet
from logwright.plugins.host import PluginHost

from tests.example_plugin import install_example_plugin


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_example_plugin(tmp_path_factory.mktemp("example-plugin"))


@pytest.fixture
def on_path(installed: Path) -> Iterator[Path]:
    sys.path.insert(0, str(installed))
    importlib.invalidate_caches()
    try:
        yield installed
    finally:
        sys.path.remove(str(installed))
        sys.modules.pop("logwright_example_plugin", None)
        importlib.invalidate_caches()


def test_the_installed_plugin_is_loaded_with_its_distribution(on_path: Path) -> None:
    host = PluginHost.load()
    info = {plugin.name: plugin for plugin in host.plugins()}["first_come"]
    assert info.source.kind == "entry point"
    assert info.source.describe() == "entry point logwright_example_plugin of logwright-example-plugin 0.1.0"
    assert [(r.kind, r.name) for r in info.registrations] == [
        ("background task", "example-heartbeat"), ("config key", "group:logwright.example.backoff.ms"),
        ("config key", "topic:logwright.example.max.records.per.request"),
        ("config key", "broker:logwright.example.heartbeat.ms"), ("subscription mode", "first_come")]
    assert "first_come" in host.config_registry().get("group", "logwright.subscription.mode").doc  # type: ignore[union-attr]


def test_the_installed_mode_and_decision_work_through_the_host(on_path: Path) -> None:
    host = PluginHost.load()
    mode = host.subscription_mode("first_come")
    membership = Membership("sub")
    for consumer in ("late", "later"):
        membership = mode.join(membership, ModeConsumer(consumer))
    view = DispatchView(membership, 1, 2)
    assert mode.eligible(view, "late", RangeSet.from_ranges([(0, 9)]), 3) == RangeSet.from_ranges([(0, 2)])
    assert mode.eligible(view, "later", RangeSet.from_ranges([(0, 9)]), 3) == RangeSet()
    settings = {"logwright.example.backoff.ms": "100", "share.delivery.count.limit": "4"}

    def released(count: int) -> ReleasedDelivery:
        return ReleasedDelivery("sub", "t", 0, ((0, 0),), count, ReleaseReason.LOCK_EXPIRED, "late", 0,
                                settings=settings)

    assert [host.decide_release(released(n)) for n in (1, 2, 3, 4)] == [
        Redeliver(100), Redeliver(200), Redeliver(400), Reject("delivery count limit reached")]


def test_without_the_distribution_the_plugin_is_absent() -> None:
    assert "first_come" not in PluginHost.load().subscription_modes()


def test_logwright_plugins_lists_it(installed: Path) -> None:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (str(installed),
                                                                            os.environ.get("PYTHONPATH"))))}
    output = subprocess.run([sys.executable, "-m", "logwright", "plugins", "--json"], env=environment,
                            capture_output=True, text=True, check=True, timeout=120).stdout
    listed = {entry["name"]: entry for entry in map(json.loads, output.splitlines())}
    assert listed["first_come"]["source"] == "entry point logwright_example_plugin of logwright-example-plugin 0.1.0"
    assert listed["first_come"]["hooks"] == [
        "logwright_admit_append", "logwright_decide_release", "logwright_register_background_tasks",
        "logwright_register_config_keys", "logwright_register_subscription_modes"]
    assert listed["key_shared"]["registers"] == ["config key: group:logwright.key_shared.allow.out.of.order.delivery",
                                                 "subscription mode: key_shared"]
    assert list(listed)[:6] == ["exclusive", "failover", "shared", "key_shared", "redelivery", "admission"]
