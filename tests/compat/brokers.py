"""In-process brokers for handler tests, composed as ``logwright serve`` composes its own (`compose_broker`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from logwright.compat.broker import Broker, BrokerSettings
from logwright.compat.wire.messages import decode_response, encode_response
from logwright.compat.wiring import compose_broker
from logwright.core.clock import Clock, ManualClock
from logwright.core.config.configs import ConfigRegistry
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import PluginHost


def in_process_broker(store: RocksEventStore, settings: BrokerSettings | None = None, *,
                      clock: Clock | None = None, host: PluginHost | None = None,
                      configs: ConfigRegistry | None = None) -> Broker:
    """A broker over ``store`` with its coordinators, deciding with ``host`` (the built-in plugins by default);
    ``configs`` as `Broker` takes them (the core's keys by default, ``host.config_registry()`` for plugin keys)."""
    return compose_broker(store, host or PluginHost.load(installed=False), settings, configs, clock)


@contextmanager
def loopback_broker(data_dir: Path) -> Iterator[Broker]:
    """A broker on a manual clock for a `KafkaServer` on 127.0.0.1 (port 0: the server writes back the one it
    bound), closed as ``logwright serve`` closes it."""
    clock = ManualClock()
    store = RocksEventStore(data_dir, clock=clock)
    served = in_process_broker(store, clock=clock)
    served.settings.host = "127.0.0.1"
    served.settings.port = 0
    try:
        yield served
    finally:
        served.coordinators.close()
        served.commit_now()
        store.close()


def as_read(response: Any) -> Any:
    """A handler's answer as a client reads it: encoded and decoded again (a handler may answer with parts already
    encoded, `Encoded`, which only the wire turns back into fields)."""
    if response is None:
        return None
    api_key, version = type(response).__api_key__, type(response).__version__
    return decode_response(api_key, version, encode_response(api_key, version, 1, response))[1]


class ProjectionReads:
    """Counts the times ``store.entities(projection)`` is asked for while it is entered: how many passes a handler
    makes over a projection's states (a pass per item asked for made requests of many items hold every client)."""

    def __init__(self, store: RocksEventStore, projection: str) -> None:
        self.store, self.projection, self.count = store, projection, 0

    def __enter__(self) -> ProjectionReads:
        entities = self.store.entities

        def counted(projection: str) -> Any:
            self.count += projection == self.projection
            return entities(projection)

        self.store.entities = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        del self.store.entities


class StateLookups:
    """Counts ``store.state(projection, ...)`` lookups while it is entered: one per item is fine, one per item times
    every partition is not."""

    def __init__(self, store: RocksEventStore, projection: str) -> None:
        self.store, self.projection, self.count = store, projection, 0

    def __enter__(self) -> StateLookups:
        state = self.store.state

        def counted(projection: str, entity: str) -> Any:
            self.count += projection == self.projection
            return state(projection, entity)

        self.store.state = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        del self.store.state


class GivenWay:
    """Counts the calls to ``module.give_way`` (replaced by ``monkeypatch`` for the test): how often a long request
    let other requests run."""

    def __init__(self, monkeypatch: Any, module: Any) -> None:
        self.count = 0
        give_way = module.give_way

        async def counted() -> None:
            self.count += 1
            await give_way()

        monkeypatch.setattr(module, "give_way", counted)
