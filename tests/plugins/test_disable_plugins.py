"""Turning plugins off: ``plugins.disabled`` / ``serve --disable-plugin`` on the host, the CLI and a real broker."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from logwright.core.errors import InvalidConfig
from logwright.plugins.api import SubscriptionModeBase, SubscriptionModeRegister, hookimpl
from logwright.plugins.host import BUILTIN_PLUGINS, PluginHost
from logwright.testing import BrokerProcess, TestClient

MODE_KEY = "logwright.subscription.mode"


def test_a_disabled_builtin_is_listed_but_registers_nothing() -> None:
    host = PluginHost.load(installed=False, disabled=["failover"])
    assert "failover" not in host.subscription_modes()
    assert host.config_registry().get("group", "logwright.failover.switch.delay.ms") is None
    listed = {info.name: info for info in host.plugins()}
    assert list(listed) == list(BUILTIN_PLUGINS), "listed in its place, as disabled"
    assert listed["failover"].disabled and listed["failover"].registrations == () and listed["failover"].hooks == ()
    assert not any(info.disabled for name, info in listed.items() if name != "failover")


def test_a_name_that_is_no_plugin_is_refused() -> None:
    with pytest.raises(InvalidConfig,
                       match="'failovr'.*the plugins are admission, (.+, )?dead_letter, (.+, )?exclusive, failover"):
        PluginHost.load(installed=False, disabled=["failovr"])


def test_the_last_provider_of_the_default_mode_cannot_be_disabled() -> None:
    with pytest.raises(InvalidConfig, match="leaves no plugin providing the default subscription mode 'shared'"):
        PluginHost.load(installed=False, disabled=["shared"])


def test_the_default_mode_may_move_to_another_plugin() -> None:
    @dataclass(frozen=True, slots=True)
    class OtherShared(SubscriptionModeBase):
        name: str = "shared"

    class Replacement:
        @hookimpl
        def logwright_register_subscription_modes(self, register: SubscriptionModeRegister) -> None:
            register.add(OtherShared())

    host = PluginHost.load(installed=False, disabled=["shared"], extra=[("replacement", Replacement())])
    assert isinstance(host.subscription_mode("shared"), OtherShared)


def test_for_broker_reads_the_config_and_the_extra_modules() -> None:
    host = PluginHost.for_broker({"plugins.disabled": "key_shared, exclusive",
                                  "plugins.extra": "tests.plugins.third_party.audit_plugin"})
    assert sorted(host.subscription_modes()) == ["failover", "newest", "pop", "shared"]
    disabled_key = host.config_registry().get("broker", "plugins.disabled")
    assert disabled_key is not None and disabled_key.read_only


def test_an_extra_module_that_does_not_import_is_refused() -> None:
    with pytest.raises(InvalidConfig, match="plugins.extra names 'no_such_plugin', which cannot be imported"):
        PluginHost.for_broker({"plugins.extra": "no_such_plugin"})


def test_logwright_plugins_lists_disabled_ones() -> None:
    output = subprocess.run([sys.executable, "-m", "logwright", "plugins", "--json", "--disable-plugin", "redelivery"],
                            capture_output=True, text=True, check=True, timeout=120).stdout
    listed = {entry["name"]: entry for entry in map(json.loads, output.splitlines())}
    assert listed["redelivery"]["disabled"] is True and listed["redelivery"]["registers"] == []
    assert listed["shared"]["disabled"] is False
    refused = subprocess.run([sys.executable, "-m", "logwright", "plugins", "--disable-plugin", "shared"],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode != 0 and "default subscription mode 'shared'" in refused.stderr


def test_a_broker_without_key_shared_refuses_the_mode(logwright_broker_factory: Callable[..., BrokerProcess]) -> None:
    by_flag = logwright_broker_factory(disabled=["key_shared"])
    by_config = logwright_broker_factory(config={"plugins.disabled": "key_shared"})
    for broker in (by_flag, by_config):
        client = TestClient(broker.bootstrap)
        try:
            client.set_group_configs("g", {MODE_KEY: "failover"})
            with pytest.raises(Exception, match="key_shared"):
                client.set_group_configs("g", {MODE_KEY: "key_shared"})
        finally:
            client.close()


def test_serve_refuses_to_disable_the_default_mode(logwright_broker_factory: Callable[..., BrokerProcess]) -> None:
    with pytest.raises(RuntimeError, match="default subscription mode 'shared'"):
        logwright_broker_factory(disabled=["shared"])
