"""In-process brokers for handler tests, composed as ``logwright serve`` composes its own (`compose_broker`)."""

from __future__ import annotations

from typing import Any

from logwright.compat.broker import Broker, BrokerSettings
from logwright.compat.wire.messages import decode_response, encode_response
from logwright.compat.wiring import compose_broker
from logwright.core.clock import Clock
from logwright.core.config.configs import ConfigRegistry
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import PluginHost


def in_process_broker(store: RocksEventStore, settings: BrokerSettings | None = None, *,
                      clock: Clock | None = None, host: PluginHost | None = None,
                      configs: ConfigRegistry | None = None) -> Broker:
    """A broker over ``store`` with its coordinators, deciding with ``host`` (the built-in plugins by default);
    ``configs`` as `Broker` takes them (the core's keys by default, ``host.config_registry()`` for plugin keys)."""
    return compose_broker(store, host or PluginHost.load(installed=False), settings, configs, clock)


def as_read(response: Any) -> Any:
    """A handler's answer as a client reads it: encoded and decoded again (a handler may answer with parts already
    encoded, `Encoded`, which only the wire turns back into fields)."""
    if response is None:
        return None
    api_key, version = type(response).__api_key__, type(response).__version__
    return decode_response(api_key, version, encode_response(api_key, version, 1, response))[1]
