"""``socket.send.buffer.bytes`` and ``socket.receive.buffer.bytes`` as DescribeConfigs shows them, on logwright and on
Apache Kafka (``pytest --against kafka``): read-only, Kafka's 100 KiB send buffer by default (its receive default
too, on Kafka; logwright's is -1), and a broker's start-up values as static configs. What they do to the sockets is
tests/compat/test_socket_options.py's."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigEntry, ConfigResource, ConfigSource

NAMES = ("socket.send.buffer.bytes", "socket.receive.buffer.bytes")


def described(bootstrap: str) -> dict[str, ConfigEntry]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = admin.describe_configs([resource])[resource].result(30)
    return {name: configs[name] for name in NAMES}


@pytest.mark.differential
def test_defaults_are_read_only_and_the_send_buffer_is_kafkas_100_kib(bootstrap: str, target: str) -> None:
    """The receive default differs on purpose: Kafka's 100 KiB, logwright's -1 (the key's documentation says why)."""
    defaults = {"socket.send.buffer.bytes": "102400",
                "socket.receive.buffer.bytes": "102400" if target == "kafka" else "-1"}
    for name, entry in described(bootstrap).items():
        assert (entry.value, entry.source, entry.is_read_only, entry.is_default) == (
            defaults[name], ConfigSource.DEFAULT_CONFIG.value, True, True), name


@pytest.mark.differential
@pytest.mark.parametrize("started_with", [{"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "65536"}],
                         indirect=True)
def test_start_up_values_are_static_broker_configs(started_with: str) -> None:
    entries = described(started_with)
    assert {name: entry.value for name, entry in entries.items()} == {
        "socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "65536"}
    for name, entry in entries.items():
        assert (entry.source, entry.is_read_only, entry.is_default) == (
            ConfigSource.STATIC_BROKER_CONFIG.value, True, False), name
