"""The plugin host: registration through hooks, misspelled hooks, clashes, decisions and wrappers."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import pluggy
import pytest
from logwright.core.config.configs import ConfigKey, long_at_least
from logwright.core.cursors.plugin_decisions import (
    Admission,
    AppendRequest,
    PartitionAppend,
    Redeliver,
    Reject,
    ReleasedDelivery,
    ReleaseReason,
)
from logwright.core.errors import DomainError, InvalidConfig
from logwright.core.events import Event
from logwright.core.projection import Projection
from logwright.plugins.exclusive import ExclusiveMode
from logwright.plugins.facade import BrokerFacade
from logwright.plugins.host import BUILTIN_PLUGINS, PluginHost
from logwright.plugins.registrars import (
    BackgroundTask,
    BackgroundTaskRegister,
    ConfigKeyRegister,
    ExtensionHandlerRegister,
    ProjectionRegister,
    SubscriptionModeRegister,
)
from logwright.plugins.spec import hookimpl


def test_builtins_register_through_the_same_hooks(host: PluginHost) -> None:
    assert [info.name for info in host.plugins()] == list(BUILTIN_PLUGINS)
    assert sorted(host.subscription_modes()) == ["exclusive", "failover", "key_shared", "pop", "shared"]
    registered = {(r.plugin, r.kind, r.name) for info in host.plugins() for r in info.registrations}
    assert ("key_shared", "subscription mode", "key_shared") in registered
    assert ("shared", "config key", "group:logwright.max.unacked.per.consumer") in registered
    assert ("delayed_delivery", "projection", "delayed_records") in registered
    assert ("delayed_delivery", "config key", "topic:logwright.delayed.delivery.compressed.enable") in registered
    assert all(info.source.kind == "builtin" for info in host.plugins())


def test_each_host_has_its_own_plugin_manager() -> None:
    first, second = PluginHost.load(installed=False), PluginHost.load(installed=False)

    class Extra:
        @hookimpl
        def logwright_register_subscription_modes(self, register: SubscriptionModeRegister) -> None:
            register.add(ExclusiveMode(name="solo"))

    first.register(Extra(), "extra", first.plugins()[0].source)
    assert "solo" in first.subscription_modes() and "solo" not in second.subscription_modes()


def test_misspelled_hook_is_refused_by_check_pending(host: PluginHost) -> None:
    class Typo:
        @hookimpl
        def logwright_register_subscription_mode(self, register: SubscriptionModeRegister) -> None:
            raise AssertionError("never called")

    host.register(Typo(), "typo", host.plugins()[0].source)
    with pytest.raises(pluggy.PluginValidationError, match="logwright_register_subscription_mode"):
        host.check_pending()


def test_a_hook_with_an_argument_the_spec_lacks_is_refused_at_registration(host: PluginHost) -> None:
    class WrongArgs:
        @hookimpl
        def logwright_decide_release(self, delivery: ReleasedDelivery, extra: int) -> None:
            return None

    with pytest.raises(pluggy.PluginValidationError, match="extra"):
        host.register(WrongArgs(), "wrong", host.plugins()[0].source)


def test_two_plugins_offering_one_mode_name_name_both(host: PluginHost) -> None:
    class Clash:
        @hookimpl
        def logwright_register_subscription_modes(self, register: SubscriptionModeRegister) -> None:
            register.add(ExclusiveMode())

    with pytest.raises(ValueError, match="'exclusive' is registered by both plugin 'exclusive' and plugin 'clash'"):
        host.register(Clash(), "clash", host.plugins()[0].source)


def test_a_mode_must_implement_the_protocol(host: PluginHost) -> None:
    class NotAMode:
        name = "broken"

    class Bad:
        @hookimpl
        def logwright_register_subscription_modes(self, register: SubscriptionModeRegister) -> None:
            register.add(NotAMode())  # type: ignore[arg-type]

    with pytest.raises(TypeError, match="does not implement the SubscriptionMode protocol"):
        host.register(Bad(), "bad", host.plugins()[0].source)


def test_plugin_config_keys_are_validated_by_the_config_registry(host: PluginHost) -> None:
    class Keys:
        @hookimpl
        def logwright_register_config_keys(self, register: ConfigKeyRegister) -> None:
            register.add(ConfigKey("logwright.example.limit", "topic", "10", long_at_least(1), "An example.", "INT"))

    host.register(Keys(), "keys", host.plugins()[0].source)
    registry = host.config_registry()
    registry.validate("topic", [("logwright.example.limit", "3")])
    with pytest.raises(InvalidConfig, match="'logwright.example.limit': must be at least 1"):
        registry.validate("topic", [("logwright.example.limit", "0")])
    registry.validate("group", [("logwright.subscription.mode", "key_shared")])
    with pytest.raises(InvalidConfig, match="must be one of exclusive, failover, key_shared, pop, shared"):
        registry.validate("group", [("logwright.subscription.mode", "round_robin")])
    assert registry.get("group", "logwright.subscription.mode").default == "shared"  # type: ignore[union-attr]
    with pytest.raises(InvalidConfig, match="unknown subscription mode 'broadcast'"):
        host.subscription_mode("broadcast")


def test_a_plugin_key_may_not_shadow_a_core_key(host: PluginHost) -> None:
    class Shadow:
        @hookimpl
        def logwright_register_config_keys(self, register: ConfigKeyRegister) -> None:
            register.add(ConfigKey("retention.ms", "topic", "1", long_at_least(1), "No."))

    host.register(Shadow(), "shadow", host.plugins()[0].source)
    with pytest.raises(ValueError, match="'retention.ms' for topic is registered twice"):
        host.config_registry()


@dataclass(frozen=True, slots=True)
class Tally(Event):
    TAG = 10_049  # type: ignore[misc]
    name: str


def test_projections_handlers_and_tasks_are_handed_out(host: PluginHost) -> None:
    tally: Projection[int] = Projection("tallies", lambda event: ("all",), lambda state, event, key: (state or 0) + 1,
                                        frozenset({Tally}))

    async def handle(context: object, request: object) -> None:
        return None

    async def sweep(broker: object) -> None:
        return None

    class Everything:
        @hookimpl
        def logwright_register_projections(self, register: ProjectionRegister) -> None:
            register.add(tally, [Tally])

        @hookimpl
        def logwright_register_extension_handlers(self, register: ExtensionHandlerRegister) -> None:
            register.add(1500, "Example", 0, 1, handle)

        @hookimpl
        def logwright_register_background_tasks(self, register: BackgroundTaskRegister) -> None:
            register.add(BackgroundTask("sweep", sweep, "does nothing"))

    host.register(Everything(), "everything", host.plugins()[0].source)
    assert host.projections()[-1] is tally
    types = host.type_registry()
    assert types.decode_event(types.encode_event(5, Tally("x")), "test") == (5, Tally("x"))
    assert host.extension_handlers()[1500].name == "Example"
    assert [task.name for task in host.background_tasks()] == [
        "backlog_quota", "key_dedup", "processed_keys", "sweep"], "the built-ins' first"


def test_extension_keys_must_be_outside_kafkas_range(host: PluginHost) -> None:
    async def handle(context: object, request: object) -> None:
        return None

    class Low:
        @hookimpl
        def logwright_register_extension_handlers(self, register: ExtensionHandlerRegister) -> None:
            register.add(1, "Fetch", 0, 1, handle)

    with pytest.raises(ValueError, match="key 1 is outside 1000..32767"):
        host.register(Low(), "low", host.plugins()[0].source)


def released(count: int, reason: ReleaseReason = ReleaseReason.RELEASED, delay: int | None = None) -> ReleasedDelivery:
    return ReleasedDelivery("sub", "t", 0, ((3, 4),), count, reason, "c1", 1000, delay,
                            {"share.delivery.count.limit": "3"})


def test_default_release_decision_redelivers_until_the_delivery_limit(host: PluginHost) -> None:
    assert host.decide_release(released(1)) == Redeliver(0)
    assert host.decide_release(released(2, delay=500)) == Redeliver(500)
    assert host.decide_release(released(3)) == Reject("delivery count limit reached")


def test_a_plugin_decision_comes_before_the_default(host: PluginHost) -> None:
    class DeadLetterExpired:
        @hookimpl
        def logwright_decide_release(self, delivery: ReleasedDelivery) -> Reject | None:
            return Reject("expired") if delivery.reason is ReleaseReason.LOCK_EXPIRED else None

    host.register(DeadLetterExpired(), "dle", host.plugins()[0].source)
    assert host.decide_release(released(1, ReleaseReason.LOCK_EXPIRED)) == Reject("expired")
    assert host.decide_release(released(1)) == Redeliver(0)


def test_with_only_the_builtin_defaults_nothing_is_resolved(host: PluginHost) -> None:
    """The broker then applies the delivery limit and admits every append without building any request; built-in
    plugins wrapping the admission (backlog_quota) have it resolved unless they are disabled."""
    wrappers = tuple(info.name for info in host.plugins()
                     if "logwright_admit_append" in info.hooks and info.name != "admission")
    assert host.release_decider() is None and "backlog_quota" in wrappers and host.admission() is not None
    assert PluginHost.load(installed=False, disabled=wrappers).admission() is None


def test_resolved_decisions_never_call_through_pluggy(host: PluginHost, monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []

    class Early:
        @hookimpl(tryfirst=True)
        def logwright_decide_release(self, delivery: ReleasedDelivery) -> Reject | None:
            order.append("early")
            return Reject("early") if delivery.delivery_count == 1 else None

    class Later:
        @hookimpl
        def logwright_decide_release(self) -> None:
            order.append("later")
            return None

    host.register(Later(), "later", host.plugins()[0].source)
    host.register(Early(), "early", host.plugins()[0].source)
    decide = host.release_decider()
    assert decide is not None

    def through_pluggy(*args: object, **kwargs: object) -> None:
        raise AssertionError("a resolved decision went through pluggy")

    monkeypatch.setattr(host._manager.hook.logwright_decide_release, "_hookexec", through_pluggy)
    assert decide(released(1)) == Reject("early") and order == ["early"]
    order.clear()
    assert decide(released(2, delay=40)) == Redeliver(40), "the built-in default decides last"
    assert decide(released(3)) == Reject("delivery count limit reached")
    assert order[:2] == ["early", "later"]


def test_a_decision_of_the_wrong_type_names_the_hook(host: PluginHost) -> None:
    class Wrong:
        @hookimpl
        def logwright_decide_release(self, delivery: ReleasedDelivery) -> object:
            return "redeliver please"

    host.register(Wrong(), "wrong", host.plugins()[0].source)
    decide = host.release_decider()
    assert decide is not None
    with pytest.raises(TypeError, match="logwright_decide_release returned 'redeliver please'"):
        decide(released(1))


class QuotaExceeded(DomainError):
    pass


def test_admission_wrappers_refine_the_inner_answer(host: PluginHost) -> None:
    calls: list[int] = []

    class Quota:
        @hookimpl(wrapper=True)
        def logwright_admit_append(self, request: AppendRequest) -> Generator[None, Admission, Admission]:
            calls.append(len(request.appends))
            admission = yield
            for append in request.appends:
                if append.byte_size > 100:
                    admission = admission.refuse(append.partition_id, QuotaExceeded(f"{append.topic} is full"))
            return admission

    request = AppendRequest((PartitionAppend("t", 0, 7, 3, 50), PartitionAppend("t", 1, 8, 3, 500)), "cli", 0)
    assert host.admit_append(request) == Admission()
    host.register(Quota(), "quota", host.plugins()[0].source)
    admission = host.admit_append(request)
    assert admission.error_for(7) is None
    assert str(admission.error_for(8)) == "t is full"
    assert calls == [2]  # once per request, not per partition or record
    admit = host.admission()
    assert admit is not None
    assert str(admit(request).error_for(8)) == "t is full" and calls == [2, 2]


async def _example_handle(context: object, request: object) -> None:
    return None


class _ExtensionPlugin:
    @hookimpl
    def logwright_register_extension_handlers(self, register: ExtensionHandlerRegister) -> None:
        register.add(31999, "ExampleExtension", 0, 0, _example_handle)


def test_extension_handlers_join_the_handler_table_once_per_process() -> None:
    from logwright.compat.registry import HANDLERS

    hosts = [PluginHost.load(installed=False, extra=[("ext", _ExtensionPlugin())]) for _ in range(2)]
    try:
        for plugin_host in hosts:
            plugin_host.install_extension_handlers()  # the second, equal registration changes nothing
        assert HANDLERS[31999].name == "ExampleExtension"
        assert HANDLERS[31999].handle is _example_handle
    finally:
        HANDLERS.pop(31999, None)


def test_background_tasks_start_on_the_loop_and_stop_when_cancelled(host: PluginHost) -> None:
    import asyncio

    seen: list[object] = []

    async def watch(broker: object) -> None:
        seen.append(broker)
        await asyncio.Event().wait()

    class Watcher:
        @hookimpl
        def logwright_register_background_tasks(self, register: BackgroundTaskRegister) -> None:
            register.add(BackgroundTask("watch", watch))

    host.register(Watcher(), "watcher", host.plugins()[0].source)
    broker = object()

    async def main() -> bool:
        tasks = host.start_background_tasks(broker)  # type: ignore[arg-type]
        await asyncio.sleep(0)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        [watching] = [task for task in tasks if task.get_name() == "plugin task watch"]
        return watching.cancelled()

    assert asyncio.run(main())
    [facade] = seen
    assert isinstance(facade, BrokerFacade) and facade is not broker, "a task gets the facade, never the broker"
