"""A fresh plugin host per test; the subscription harness is `logwright.testing.Subscription`."""

from __future__ import annotations

import pytest
from logwright.plugins.host import PluginHost


@pytest.fixture
def host() -> PluginHost:
    return PluginHost.load(installed=False)
