"""The built-in redelivery plugin's backoff through the plugin host, and a third-party plugin replacing it."""

from __future__ import annotations

from logwright.core.cursors.plugin_decisions import Redeliver, ReleasedDelivery, ReleaseReason
from logwright.plugins.api import hookimpl
from logwright.plugins.host import PluginHost

LEVELS = {"logwright.redelivery.backoff.policy": "levels", "logwright.redelivery.backoff.levels": "1s 5s 10s",
          "share.delivery.count.limit": "10"}


def released(count: int, settings: dict[str, str], reason: ReleaseReason = ReleaseReason.RELEASED,
             delay: int | None = None) -> ReleasedDelivery:
    return ReleasedDelivery("sub", "t", 0, ((3, 4),), count, reason, "c1", 1000, delay, settings)


def test_the_builtin_levels_apply_to_every_reason_and_the_keys_are_registered(host: PluginHost) -> None:
    decide = host.release_decider(always=True)
    assert decide is not None
    assert [decide(released(n, LEVELS)) for n in (1, 2, 3, 4)] == [
        Redeliver(1_000), Redeliver(5_000), Redeliver(10_000), Redeliver(10_000)]
    assert decide(released(2, LEVELS, ReleaseReason.LOCK_EXPIRED)) == Redeliver(5_000)
    assert decide(released(2, LEVELS, ReleaseReason.CONSUMER_LEFT)) == Redeliver(5_000)
    assert decide(released(2, LEVELS, delay=700)) == Redeliver(700)
    names = {key.name for key in host.config_keys() if key.resource_type == "group"}
    assert {"logwright.redelivery.backoff.policy", "logwright.redelivery.backoff.levels"} <= names


def test_a_third_party_plugin_replaces_the_policy_reading_the_group_settings(host: PluginHost) -> None:
    class Linear:
        """Waits delivery count x logwright.linear.step.ms, only for lock expiry."""

        @hookimpl
        def logwright_decide_release(self, delivery: ReleasedDelivery) -> Redeliver | None:
            if delivery.reason is not ReleaseReason.LOCK_EXPIRED:
                return None
            return Redeliver(delivery.delivery_count * int(delivery.settings.get("logwright.linear.step.ms", "0")))

    host.register(Linear(), "linear", host.plugins()[0].source)
    decide = host.release_decider()
    assert decide is not None
    settings = {**LEVELS, "logwright.linear.step.ms": "300"}
    assert decide(released(3, settings, ReleaseReason.LOCK_EXPIRED)) == Redeliver(900)
    assert decide(released(3, settings)) == Redeliver(10_000)  # the built-in policy still decides the rest


def test_a_stored_value_that_no_longer_validates_redelivers_at_once(host: PluginHost) -> None:
    decide = host.release_decider(always=True)
    assert decide is not None
    broken = {"logwright.redelivery.backoff.policy": "multiplier", "logwright.redelivery.backoff.multiplier": "nan"}
    assert decide(released(1, broken)) == Redeliver(0)
    assert decide(released(1, {"logwright.redelivery.backoff.policy": "levels",
                               "logwright.redelivery.backoff.levels": "soon"})) == Redeliver(0)
