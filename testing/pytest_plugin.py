"""The ``logwright_*`` pytest fixtures, registered through the ``pytest11`` entry point.

A plugin's own test suite needs three lines of set-up, in its ``conftest.py``::

    @pytest.fixture
    def logwright_plugins() -> list[str]:
        return ["my_plugin"]          # modules registered in the broker beside the installed plugins

and then takes ``logwright_broker``, ``logwright_client``, ``logwright_advance_clock``,
``logwright_subscription`` or ``logwright_host`` as arguments. Override ``logwright_config``,
``logwright_disabled_plugins``, ``logwright_python_path`` or ``logwright_manual_clock`` the same way.
Every broker is a real ``logwright serve`` process on a free port with its own data directory, killed after
the test; on the default manual clock time moves only when the test advances it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from logwright.plugins.host import PluginHost
    from logwright.testing.broker_process import BrokerProcess
    from logwright.testing.clients import TestClient
    from logwright.testing.subscription import Subscription


@pytest.fixture
def logwright_plugins() -> Sequence[str]:
    """Modules the broker registers as plugins beside the installed ones (``serve --plugin``)."""
    return ()


@pytest.fixture
def logwright_disabled_plugins() -> Sequence[str]:
    """Plugins the broker does not load (``serve --disable-plugin``)."""
    return ()


@pytest.fixture
def logwright_config() -> Mapping[str, str]:
    """Broker config overrides (``serve --config KEY=VALUE``)."""
    return {}


@pytest.fixture
def logwright_python_path() -> Sequence[str | Path]:
    """Directories put on the broker process's ``PYTHONPATH`` (where ``logwright_plugins`` live, if they are
    not importable from the directory pytest runs in)."""
    return ()


@pytest.fixture
def logwright_manual_clock() -> bool:
    """Whether the broker runs on a manual clock (``serve --manual-clock``); tests advance it, never sleep."""
    return True


@pytest.fixture
def logwright_broker_factory(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """``factory(**options)`` starts another broker (options of `BrokerProcess`); all are killed after the test."""
    from logwright.testing.broker_process import BrokerProcess

    started: list[BrokerProcess] = []

    def start(**options: Any) -> BrokerProcess:
        process = BrokerProcess(tmp_path / f"broker-{len(started)}", **options)
        started.append(process)
        return process.start()

    try:
        yield start
    finally:
        for process in started:
            process.kill()


@pytest.fixture
def logwright_broker(logwright_broker_factory: Callable[..., BrokerProcess], logwright_plugins: Sequence[str],
                     logwright_disabled_plugins: Sequence[str], logwright_config: Mapping[str, str],
                     logwright_python_path: Sequence[str | Path], logwright_manual_clock: bool) -> BrokerProcess:
    """A broker of the test's own, with the plugins and configs the ``logwright_*`` fixtures above name."""
    return logwright_broker_factory(plugins=logwright_plugins, disabled=logwright_disabled_plugins,
                                    config=logwright_config, python_path=logwright_python_path,
                                    manual_clock=logwright_manual_clock)


@pytest.fixture
def logwright_client(logwright_broker: BrokerProcess) -> Iterator[TestClient]:
    """A blocking client of ``logwright_broker``: topics, records, group configs, subscriptions, the clock."""
    from logwright.testing.clients import TestClient

    client = TestClient(logwright_broker.bootstrap)
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def logwright_advance_clock(logwright_broker: BrokerProcess) -> Callable[[int], int]:
    """``advance(ms)`` moves ``logwright_broker``'s manual clock on and returns its new time, once everything
    that came due (lock expiry, plugin tasks' sleeps) has run."""
    return logwright_broker.advance_clock


@pytest.fixture
def logwright_subscription() -> type[Subscription]:
    """The subscription harness class: ``logwright_subscription(MyMode(), keys=[...])`` runs a mode through
    the real cursor commands, in memory."""
    from logwright.testing.subscription import Subscription

    return Subscription


@pytest.fixture
def logwright_host() -> Callable[..., PluginHost]:
    """``host(*plugins)``: a plugin host with the built-in plugins and the given modules or objects registered
    (not the installed ones), checked as the broker checks them."""
    from logwright.plugins.host import PluginHost

    def load(*plugins: ModuleType | object) -> PluginHost:
        return PluginHost.load(installed=False, extra=[
            (getattr(plugin, "__name__", type(plugin).__name__), plugin) for plugin in plugins])

    return load
