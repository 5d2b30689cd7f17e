"""Test fixtures for logwright and its plugins, shipped with the package (``logwright.testing``).

Installed as a pytest plugin (entry point ``pytest11``: `logwright.testing.pytest_plugin`), so any test suite
in an environment where logwright is installed gets the ``logwright_*`` fixtures without importing anything:
a real broker process on a manual clock, a blocking client, a clock-advance helper, the subscription
harness and a plugin host. See docs/plugins.md, "Testing a plugin".

The names below are imported on first use: pytest loads this package with its plugins, before hypothesis's
own plugin, and the client's wire codec (kio) imports hypothesis.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from logwright.client import BrokerError
    from logwright.testing.broker_process import BrokerProcess, free_port
    from logwright.testing.clients import TestClient, advance_clock
    from logwright.testing.subscription import LOCK_MS, Subscription

_HOMES = {"BrokerError": "logwright.client", "BrokerProcess": "logwright.testing.broker_process",
          "free_port": "logwright.testing.broker_process", "TestClient": "logwright.testing.clients",
          "advance_clock": "logwright.testing.clients", "LOCK_MS": "logwright.testing.subscription",
          "Subscription": "logwright.testing.subscription"}

__all__ = ["BrokerError", "BrokerProcess", "LOCK_MS", "Subscription", "TestClient", "advance_clock", "free_port"]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
