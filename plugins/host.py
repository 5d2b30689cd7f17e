"""The plugin host: one pluggy `PluginManager` per broker, behind typed accessors.

Nothing outside `logwright.plugins` touches pluggy. The host registers the built-in plugins and those found in
the ``logwright.plugins`` entry-point group, refuses misspelled hooks (`check_pending`), and hands out
what the registration hooks added as plain objects (modes, config keys, projections, handlers, tasks),
so per-record dispatch calls them directly. Decisions and wrappers are called per request.

A plugin named in ``plugins.disabled`` (or ``serve --disable-plugin``) is never imported or registered
but still listed, as disabled; ``plugins.extra`` names modules to register beside the installed ones.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, cast

import pluggy
from logwright.compat.registry import HandlerEntry, register_extension
from logwright.core import CORE_PROJECTIONS
from logwright.core.config.configs import ConfigKey, ConfigRegistry, any_value, default_registry, one_of
from logwright.core.cursors.plugin_decisions import (
    ADMIT_ALL,
    Admission,
    AppendRequest,
    ArchiveDecider,
    ArchivedRecords,
    DeadLetter,
    GroupConfigChange,
    GroupConfigCheck,
    Redeliver,
    Reject,
    ReleasedDelivery,
    ReleaseDecider,
    ReleaseDecision,
    TopicScope,
)
from logwright.core.cursors.subscription_mode import DEFAULT_MODE, SUBSCRIPTION_MODE_KEY, SubscriptionMode
from logwright.core.errors import InvalidConfig
from logwright.core.log.index_hooks import HeldBack, HoldBackQuery
from logwright.core.projection import Projection
from logwright.eventstore.codec import TypeRegistry
from logwright.eventstore.codec import default_registry as default_types

from . import spec
from .event_deriver import Derive, EventDeriver
from .facade import BrokerFacade
from .registrars import (
    BackgroundTask,
    BackgroundTaskRegister,
    ConfigKeyRegister,
    ExtensionHandlerRegister,
    Ledger,
    PluginProjection,
    ProjectionRegister,
    Registration,
    SubscriptionModeRegister,
)
from .resolution import BUILTIN_DEFAULTS, resolved

if TYPE_CHECKING:
    from logwright.compat.broker import Broker

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "logwright.plugins"
BUILTIN_PLUGINS = ("exclusive", "failover", "shared", "key_shared", "redelivery", "admission", "dead_letter",
                   "retry_letter", "pop", "backlog_quota", "delayed_delivery", "key_dedup",
                   "processed_keys")
"""Modules of ``logwright.plugins`` registered at every start, in this order, like any other plugin; a module
with ``plugin_for_host()`` has what that returns registered instead, a fresh object per host (per broker)."""
DISABLED_KEY = "plugins.disabled"
"""Broker config: comma-separated names of plugins (built-in or installed) not to load."""
EXTRA_KEY = "plugins.extra"
"""Broker config: comma-separated modules to register as plugins beside the installed ones (name = module)."""


def config_list(value: str) -> tuple[str, ...]:
    """The names of a comma-separated config value, blanks dropped."""
    return tuple(name.strip() for name in value.split(",") if name.strip())


@dataclass(frozen=True, slots=True)
class PluginSource:
    """Where a plugin came from: ``builtin``, or an entry point of an installed distribution."""

    kind: str
    module: str
    entry_point: str = ""
    distribution: str = ""
    version: str = ""

    def describe(self) -> str:
        if self.kind == "builtin":
            return f"builtin ({self.module})"
        return f"entry point {self.entry_point} of {self.distribution} {self.version}"


@dataclass(frozen=True, slots=True)
class PluginInfo:
    name: str
    source: PluginSource
    registrations: tuple[Registration, ...]
    hooks: tuple[str, ...]
    """The ``logwright_*`` hooks it implements."""
    disabled: bool = False
    """Named in ``plugins.disabled``: found but neither imported nor registered."""


class PluginHost:
    """One broker's plugins. Build with `PluginHost.load()`; register extra plugins before serving."""

    def __init__(self) -> None:
        self._manager = pluggy.PluginManager(spec.PROJECT)
        self._manager.add_hookspecs(spec)
        self._ledger = Ledger()
        self._sources: dict[str, PluginSource] = {}
        self._disabled: set[str] = set()
        hooks = self._manager.hook
        hooks.logwright_register_subscription_modes.call_historic(
            kwargs={"register": SubscriptionModeRegister(self._ledger)})
        hooks.logwright_register_config_keys.call_historic(kwargs={"register": ConfigKeyRegister(self._ledger)})
        hooks.logwright_register_extension_handlers.call_historic(
            kwargs={"register": ExtensionHandlerRegister(self._ledger)})
        hooks.logwright_register_projections.call_historic(kwargs={"register": ProjectionRegister(self._ledger)})
        hooks.logwright_register_background_tasks.call_historic(
            kwargs={"register": BackgroundTaskRegister(self._ledger)})

    @classmethod
    def load(cls, *, builtins: bool = True, installed: bool = True, extra: Iterable[tuple[str, object]] = (),
             disabled: Iterable[str] = ()) -> PluginHost:
        """A host with the built-in plugins, the installed ones and ``extra`` (name, plugin), checked.

        Plugins named in ``disabled`` are skipped (and listed as disabled); a name that matches no plugin,
        or disabling the only provider of the default subscription mode, raises `InvalidConfig`.
        """
        host = cls()
        host._disabled.update(disabled)
        if builtins:
            host.load_builtins()
        if installed:
            host.load_entry_points()
        for name, plugin in extra:
            host.register(plugin, name, PluginSource("extra", getattr(plugin, "__name__", type(plugin).__name__)))
        host._check_disabled(builtins)
        host.check_pending()
        return host

    @classmethod
    def for_broker(cls, overrides: Mapping[str, str]) -> PluginHost:
        """The host ``logwright serve`` runs with: ``plugins.extra`` modules added, ``plugins.disabled`` skipped."""
        disabled = set(config_list(overrides.get(DISABLED_KEY, "")))
        extra: list[tuple[str, object]] = []
        for module in config_list(overrides.get(EXTRA_KEY, "")):
            if module in disabled:
                continue
            try:
                extra.append((module, importlib.import_module(module)))
            except ImportError as error:
                raise InvalidConfig(f"{EXTRA_KEY} names {module!r}, which cannot be imported: {error}") from error
        return cls.load(extra=extra, disabled=disabled)

    def _check_disabled(self, builtins: bool) -> None:
        unknown = sorted(self._disabled - set(self._sources))
        if unknown:
            raise InvalidConfig(f"{DISABLED_KEY} names {', '.join(map(repr, unknown))}, which no installed or "
                                f"built-in plugin is called; the plugins are {', '.join(sorted(self._sources))}")
        if builtins and self._disabled and DEFAULT_MODE not in self.subscription_modes():
            raise InvalidConfig(
                f"{DISABLED_KEY}={','.join(sorted(self._disabled))} leaves no plugin providing the default "
                f"subscription mode {DEFAULT_MODE!r}; keep the plugin that provides it enabled, or install one "
                f"that registers a mode named {DEFAULT_MODE!r}")

    # -- registration ----------------------------------------------------------------------------

    def register(self, plugin: object, name: str, source: PluginSource) -> None:
        """Register ``plugin``; its registration hooks run now (pluggy replays the historic calls).

        A disabled name is only remembered with its source, for `plugins`.
        """
        if name in self._sources:
            raise ValueError(f"a plugin named {name!r} is already registered ({self._sources[name].describe()})")
        if name in self._disabled:
            self._sources[name] = source
            return
        with self._ledger.attributing(name):
            self._manager.register(plugin, name)
        self._sources[name] = source

    def load_builtins(self) -> None:
        for name in BUILTIN_PLUGINS:
            module_name = f"{__package__}.{name}"
            module = None if name in self._disabled else importlib.import_module(module_name)
            per_host = getattr(module, "plugin_for_host", None)  # state per broker: one object per host
            self.register(per_host() if per_host is not None else module, name, PluginSource("builtin", module_name))

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> None:
        """Register every plugin installed under ``group`` (name = the entry point's name)."""
        for entry in sorted(entry_points(group=group), key=lambda e: e.name):
            distribution = entry.dist
            disabled = entry.name in self._disabled
            plugin = None if disabled else entry.load()
            module = entry.module if plugin is None else getattr(plugin, "__name__", type(plugin).__name__)
            self.register(plugin, entry.name, PluginSource(
                "entry point", module, entry.value,
                distribution.name if distribution else "?", distribution.version if distribution else "?"))

    def check_pending(self) -> None:
        """Refuse ``logwright_*`` hook implementations that match no hook spec (misspellings)."""
        self._manager.check_pending()

    def plugins(self) -> list[PluginInfo]:
        """Each plugin, where it came from and what it registered, in registration order."""
        return [PluginInfo(name, source, tuple(e for e in self._ledger.entries if e.plugin == name),
                           self._hooks_of(name), name in self._disabled)
                for name, source in self._sources.items()]

    def _hooks_of(self, name: str) -> tuple[str, ...]:
        plugin = self._manager.get_plugin(name)
        if plugin is None:
            return ()
        return tuple(sorted(caller.name for caller in self._manager.get_hookcallers(plugin) or ()))

    # -- what the registries collected -----------------------------------------------------------

    def subscription_modes(self) -> Mapping[str, SubscriptionMode]:
        return {mode.name: mode for mode in self._ledger.of_kind(SubscriptionModeRegister.KIND)}

    def subscription_mode(self, name: str) -> SubscriptionMode:
        modes = self.subscription_modes()
        if name not in modes:
            raise InvalidConfig(f"unknown subscription mode {name!r}: expected one of {', '.join(sorted(modes))}")
        return modes[name]

    def config_keys(self) -> tuple[ConfigKey, ...]:
        """Plugin keys, ``plugins.disabled`` and ``plugins.extra`` (read at start, so read-only), plus
        ``logwright.subscription.mode`` whose values are the registered modes."""
        keys: list[ConfigKey] = [
            *self._ledger.of_kind(ConfigKeyRegister.KIND),
            ConfigKey(DISABLED_KEY, "broker", "", any_value, "Plugins (built-in or installed) not to load, "
                      "comma-separated names as `logwright plugins` lists them; read at start.", "LIST",
                      read_only=True),
            ConfigKey(EXTRA_KEY, "broker", "", any_value, "Modules to register as plugins beside the installed "
                      "ones, comma-separated; read at start.", "LIST", read_only=True)]
        modes = sorted(self.subscription_modes())
        if modes:
            default = DEFAULT_MODE if DEFAULT_MODE in modes else modes[0]
            keys.append(ConfigKey(SUBSCRIPTION_MODE_KEY, "group", default, one_of(*modes),
                                  f"How the group's subscription dispatches records: {', '.join(modes)}."))
        return tuple(keys)

    def config_registry(self) -> ConfigRegistry:
        """The core's keys and every plugin's; a plugin key that clashes with a core key is refused."""
        registry = default_registry()
        for key in self.config_keys():
            registry.register(key)
        return registry

    def extension_handlers(self) -> Mapping[int, HandlerEntry]:
        return {entry.api_key: entry for entry in self._ledger.of_kind(ExtensionHandlerRegister.KIND)}

    def plugin_projections(self) -> tuple[PluginProjection, ...]:
        return tuple(self._ledger.of_kind(ProjectionRegister.KIND))

    def projections(self) -> tuple[Projection[Any], ...]:
        """The core projections followed by the plugins', for the event store."""
        return (*CORE_PROJECTIONS, *(p.projection for p in self.plugin_projections()))

    def type_registry(self) -> TypeRegistry:
        """The codec's core types and every plugin's events and states."""
        types = default_types()
        for plugin_projection in self.plugin_projections():
            types.register_events(plugin_projection.event_types, plugin=True)
            for tag, cls in plugin_projection.state_types.items():
                types.register(cls, tag)
        return types

    def install_extension_handlers(self) -> None:
        """Put the plugins' extension APIs into the server's handler table (and so into ApiVersions)."""
        for entry in self.extension_handlers().values():
            register_extension(entry)

    def background_tasks(self) -> tuple[BackgroundTask, ...]:
        return tuple(self._ledger.of_kind(BackgroundTaskRegister.KIND))

    def start_background_tasks(self, broker: Broker) -> list[asyncio.Task[None]]:
        """Start every plugin task on the running loop, each with its own `BrokerFacade` over ``broker`` (never
        the broker itself); the caller cancels them at shutdown."""
        from logwright.compat.plugin_facade import PluginFacade  # compat imports this module: import on use

        loop = asyncio.get_running_loop()
        return [loop.create_task(_run(task, PluginFacade(broker, f"logwright-plugin:{task.name}")),
                                 name=f"plugin task {task.name}")
                for task in self.background_tasks()]

    # -- decisions and wrappers ------------------------------------------------------------------

    def release_decider(self, always: bool = False) -> ReleaseDecider | None:
        """The ``logwright_decide_release`` chain as one plain callable, resolved now, for the share groups.

        ``None`` when only the built-in ``redelivery`` plugin implements it: the cursor commands then apply
        ``share.delivery.count.limit`` themselves, with no `ReleasedDelivery` built and no call made. If every
        plugin answers ``None``, the records are redelivered after the delay the consumer asked for.
        ``always`` gives the chain even then: the share groups call it for groups with a backoff policy.
        """
        return resolved(self._manager.hook.logwright_decide_release, "delivery", (Redeliver, Reject),
                         lambda delivery: Redeliver(max(0, delivery.requested_delay_ms or 0)), always)

    def archive_decider(self) -> ArchiveDecider | None:
        """The ``logwright_decide_archive`` chain for the share groups; ``None`` when no plugin implements it.

        Called through pluggy: archiving is rare beside fetches and acks, and only groups that archive pay.
        """
        caller = self._manager.hook.logwright_decide_archive
        if not caller.get_hookimpls():
            return None

        def decide(archived: ArchivedRecords) -> DeadLetter | None:
            answer = caller(archived=archived)
            if answer is not None and not isinstance(answer, DeadLetter):
                raise TypeError(f"logwright_decide_archive returned {answer!r}; expected DeadLetter or None")
            return answer

        return decide

    def group_config_check(self) -> GroupConfigCheck | None:
        """Every plugin's ``logwright_check_group_config`` as one callable; ``None`` when no plugin checks."""
        caller = self._manager.hook.logwright_check_group_config
        if not caller.get_hookimpls():
            return None

        def check(change: GroupConfigChange) -> None:
            caller(change=change)

        return check

    def admission(self) -> Callable[[AppendRequest], Admission] | None:
        """The ``logwright_admit_append`` chain (wrappers included) as one callable, resolved now, for Produce.

        ``None`` when only the built-in ``admission`` plugin (admit everything) implements it: the produce
        path then builds no `AppendRequest` at all.
        """
        return resolved(self._manager.hook.logwright_admit_append, "request", (Admission,), lambda _: ADMIT_ALL)

    def admission_scope(self) -> TopicScope | None:
        """Which topics' appends the `admission` chain acts on, from the scopes its implementations declare
        (`spec.acts_on_topics`); ``None`` when one of them declared none: every topic is concerned."""
        scopes: list[TopicScope] = []
        for implementation in self._manager.hook.logwright_admit_append.get_hookimpls():
            if implementation.plugin_name in BUILTIN_DEFAULTS:
                continue
            scope = getattr(implementation.function, spec.TOPIC_SCOPE_ATTRIBUTE, None)
            if scope is None:
                return None
            scopes.append(scope)

        def any_scope(topic_configs: Mapping[str, str], broker_config: Callable[[str], str | None]) -> bool:
            return any(scope(topic_configs, broker_config) for scope in scopes)

        return any_scope

    def event_deriver(self) -> EventDeriver | None:
        """Every ``logwright_derive_events`` as one plain loop, resolved now, each asked only about the changes it
        declared (`spec.derives_from`); ``None`` when no plugin derives."""
        implementations = [(cast(Derive, impl.function), getattr(impl.function, spec.DERIVES_FROM_ATTRIBUTE, None))
                           for impl in reversed(self._manager.hook.logwright_derive_events.get_hookimpls())]
        return EventDeriver(implementations) if implementations else None

    def holder(self) -> Callable[[HoldBackQuery], HeldBack | None] | None:
        """Every ``logwright_hold_back`` as one plain loop (answers merged); ``None`` when no plugin holds back."""
        functions = tuple(impl.function for impl in reversed(self._manager.hook.logwright_hold_back.get_hookimpls()))
        if not functions:
            return None

        def hold(query: HoldBackQuery) -> HeldBack | None:
            held: HeldBack | None = None
            for function in functions:
                answer = function(query)
                if answer is None:
                    continue
                if not isinstance(answer, HeldBack):
                    raise TypeError(f"logwright_hold_back returned {answer!r}; expected HeldBack or None")
                held = answer if held is None else held.merged(answer)
            return held

        return hold

    def decide_release(self, delivery: ReleasedDelivery) -> ReleaseDecision:
        """One decision through pluggy (tests, tools); the broker calls `release_decider` instead."""
        decision = self._manager.hook.logwright_decide_release(delivery=delivery)
        return cast(ReleaseDecision, decision) if decision is not None else Redeliver(0)

    def admit_append(self, request: AppendRequest) -> Admission:
        """One admission through pluggy (tests, tools); the broker calls `admission` instead."""
        admission = self._manager.hook.logwright_admit_append(request=request)
        return cast(Admission, admission) if admission is not None else Admission()


async def _run(task: BackgroundTask, facade: BrokerFacade) -> None:
    """Run a plugin task; a failure is logged (it is not restarted) instead of vanishing with the task."""
    try:
        await task.run(facade)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("plugin background task %r failed and stopped", task.name)
