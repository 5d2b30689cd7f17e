"""What registration hooks receive: one small typed register per kind of thing a plugin may add.

Every register writes into one `Ledger` that remembers which plugin added what, so `logwright plugins`
can list it and a clash names both plugins. The host sets the plugin being registered around
``PluginManager.register``; pluggy replays the historic registration hooks for exactly that plugin then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from logwright.compat.registry import ErrorAnswer, Handler, HandlerEntry, RequestContext
from logwright.core.config.configs import ConfigKey
from logwright.core.cursors.subscription_mode import SubscriptionMode
from logwright.core.events import Event
from logwright.core.projection import Projection

from .facade import BrokerFacade

EXTENSION_API_KEYS = range(1000, 32768)
"""API keys plugins may serve: far above Kafka's own (which stay below 100), within an INT16."""


@dataclass(frozen=True, slots=True)
class BackgroundTask:
    """A coroutine the broker runs for its whole life (lock expiry sweeps, retention, quotas).

    ``run(facade)`` gets a `BrokerFacade` (never the broker itself) and should loop until cancelled,
    waiting through the broker clock (``facade.sleep``); the broker cancels it at shutdown.
    """

    name: str
    run: Callable[[BrokerFacade], Awaitable[None]]
    doc: str = ""


@dataclass(frozen=True, slots=True)
class PluginProjection:
    """A projection with the event and state classes the codec must know to store it."""

    projection: Projection[Any]
    event_types: tuple[type[Event], ...]
    state_types: Mapping[int, type[Any]]


@dataclass(frozen=True, slots=True)
class Registration:
    """One thing ``plugin`` registered: its ``kind``, the ``name`` it is known by, and the object."""

    plugin: str
    kind: str
    name: str
    value: Any


class Ledger:
    """Everything registered so far, in order, each entry attributed to the plugin that added it."""

    def __init__(self) -> None:
        self.entries: list[Registration] = []
        self._plugin = "?"

    @contextmanager
    def attributing(self, plugin: str) -> Iterator[None]:
        previous, self._plugin = self._plugin, plugin
        try:
            yield
        finally:
            self._plugin = previous

    def add(self, kind: str, name: str, value: Any) -> None:
        for entry in self.entries:
            if entry.kind == kind and entry.name == name:
                raise ValueError(f"{kind} {name!r} is registered by both plugin {entry.plugin!r} and "
                                 f"plugin {self._plugin!r}")
        self.entries.append(Registration(self._plugin, kind, name, value))

    def of_kind(self, kind: str) -> list[Any]:
        return [entry.value for entry in self.entries if entry.kind == kind]


class SubscriptionModeRegister:
    """Passed to ``logwright_register_subscription_modes``."""

    KIND = "subscription mode"

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def add(self, mode: SubscriptionMode) -> None:
        """Offer ``mode`` under ``mode.name`` (a value of the group config ``logwright.subscription.mode``)."""
        if not isinstance(mode, SubscriptionMode):
            raise TypeError(f"{mode!r} does not implement the SubscriptionMode protocol")
        self._ledger.add(self.KIND, mode.name, mode)


class ConfigKeyRegister:
    """Passed to ``logwright_register_config_keys``."""

    KIND = "config key"

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def add(self, key: ConfigKey) -> None:
        """A topic, group or broker config key with its default, validator and documentation."""
        if key.resource_type not in ("topic", "group", "broker"):
            raise ValueError(f"config key {key.name!r}: resource type must be topic, group or broker, "
                             f"not {key.resource_type!r}")
        self._ledger.add(self.KIND, f"{key.resource_type}:{key.name}", key)


class ExtensionHandlerRegister:
    """Passed to ``logwright_register_extension_handlers``."""

    KIND = "extension API"

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def add(self, api_key: int, name: str, min_version: int, max_version: int, handle: Handler,
            error_answer: ErrorAnswer | None = None,
            authorize: Callable[[RequestContext, bytes], bool] | None = None) -> None:
        """Serve ``api_key`` (in `EXTENSION_API_KEYS`) versions ``min_version..max_version`` with ``handle``.

        ``error_answer(error_code, message)`` writes the body that answers a request ``handle`` raised on;
        without it such a request closes its connection (the server cannot know the key's body format).
        ``authorize(context, body)``: with an authorizer on, whether the request's principal may call the key
        (ask `logwright.compat.authorization.allowed` for the resources the body names); without it only super
        users may then.
        """
        if api_key not in EXTENSION_API_KEYS:
            raise ValueError(f"extension API {name!r}: key {api_key} is outside {EXTENSION_API_KEYS.start}.."
                             f"{EXTENSION_API_KEYS.stop - 1}")
        if not 0 <= min_version <= max_version:
            raise ValueError(f"extension API {name!r}: versions {min_version}..{max_version} are not a range")
        self._ledger.add(self.KIND, str(api_key),
                         HandlerEntry(api_key, name, min_version, max_version, handle, error_answer,
                                      authorize=authorize))


class ProjectionRegister:
    """Passed to ``logwright_register_projections``."""

    KIND = "projection"

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def add(self, projection: Projection[Any], event_types: Sequence[type[Event]] = (),
            state_types: Mapping[int, type[Any]] | None = None) -> None:
        """Fold ``projection`` in the store; ``event_types`` (each with its own ``TAG``, in `PLUGIN_EVENT_TAGS`,
        10 000-19 999) and ``state_types`` (tag → class, tags from 2000 up, outside that range) are the plugin's
        classes the codec must learn; the codec refuses a clash or a tag out of range when the store opens."""
        for tag in (state_types or {}):
            if tag < 2000:
                raise ValueError(f"projection {projection.name!r}: plugin state tags start at 2000, got {tag}")
        self._ledger.add(self.KIND, projection.name,
                         PluginProjection(projection, tuple(event_types), dict(state_types or {})))


class BackgroundTaskRegister:
    """Passed to ``logwright_register_background_tasks``."""

    KIND = "background task"

    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger

    def add(self, task: BackgroundTask) -> None:
        self._ledger.add(self.KIND, task.name, task)
