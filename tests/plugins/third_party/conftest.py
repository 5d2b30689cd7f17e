"""All the set-up a plugin's test suite needs: which modules the broker loads as plugins."""

import pytest


@pytest.fixture
def logwright_plugins() -> list[str]:
    return ["tests.plugins.third_party.audit_plugin"]
