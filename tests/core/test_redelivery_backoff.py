from __future__ import annotations

import pytest
from logwright.core.cursors.redelivery_backoff import FixedDelay, MultiplierBackoff
from logwright.core.errors import InvalidConfig


def test_pulsar_defaults_double_from_ten_seconds_up_to_ten_minutes() -> None:
    backoff = MultiplierBackoff()
    assert [backoff.delay_for(n) for n in range(8)] == [
        10_000, 20_000, 40_000, 80_000, 160_000, 320_000, 600_000, 600_000]
    assert backoff.delay_for(10_000) == 600_000


def test_the_f8_scenario_one_two_four_seconds() -> None:
    backoff = MultiplierBackoff(min_delay_ms=1_000, max_delay_ms=60_000)
    assert [backoff.delay_for(n) for n in range(3)] == [1_000, 2_000, 4_000]


def test_fixed_delay_ignores_the_count() -> None:
    assert FixedDelay(1_000).delay_for(0) == FixedDelay(1_000).delay_for(9) == 1_000


@pytest.mark.parametrize("make", [
    lambda: FixedDelay(99),
    lambda: MultiplierBackoff(min_delay_ms=50),
    lambda: MultiplierBackoff(min_delay_ms=2_000, max_delay_ms=1_000),
    lambda: MultiplierBackoff(multiplier=0.5),
])
def test_bad_values_are_refused_with_a_message(make: object) -> None:
    with pytest.raises(InvalidConfig, match="ms|multiplier"):
        make()  # type: ignore[operator]


def test_group_policies_from_settings_follow_the_persisted_delivery_count() -> None:
    from logwright.core.cursors import redelivery_backoff as b

    multiplier = b.backoff_from_settings({b.POLICY_KEY: "multiplier", b.MIN_KEY: "1000", b.MAX_KEY: "5000",
                                          b.MULTIPLIER_KEY: "2"})
    assert [multiplier.delay_for(n) for n in range(5)] == [1_000, 2_000, 4_000, 5_000, 5_000]
    assert b.backoff_from_settings({}).delay_for(7) == 0
    assert b.backoff_from_settings({b.POLICY_KEY: "fixed", b.DELAY_KEY: "250"}).delay_for(3) == 250
    levels = b.backoff_from_settings({b.POLICY_KEY: "levels"})
    assert [levels.delay_for(n) for n in (0, 1, 2, 3, 4, 16, 17, 40)] == [
        1_000, 5_000, 10_000, 30_000, 60_000, 3_600_000, 7_200_000, 7_200_000]
    custom = b.backoff_from_settings({b.POLICY_KEY: "levels", b.LEVELS_KEY: "500ms, 2s 1m"})
    assert [custom.delay_for(n) for n in range(4)] == [500, 2_000, 60_000, 60_000]
    # a stored minimum above the maximum (refused when set, see below) reads as a constant minimum
    inverted = b.backoff_from_settings({b.POLICY_KEY: "multiplier", b.MIN_KEY: "3000", b.MAX_KEY: "1000"})
    assert inverted.delay_for(0) == inverted.delay_for(5) == 3_000


@pytest.mark.parametrize(("key", "value", "message"), [
    ("logwright.redelivery.backoff.policy", "exponential", "must be one of none, fixed, multiplier, levels"),
    ("logwright.redelivery.backoff.delay.ms", "-1", "at least 100 ms, got -1"),
    ("logwright.redelivery.backoff.min.ms", "-5", "at least 100 ms, got -5"),
    ("logwright.redelivery.backoff.max.ms", "50", "below the minimum"),
    ("logwright.redelivery.backoff.multiplier", "0.5", "at least 1.0, got 0.5"),
    ("logwright.redelivery.backoff.multiplier", "fast", "must be a number"),
    ("logwright.redelivery.backoff.levels", "1s 5x", "'5x' is not a whole number with a unit"),
    ("logwright.redelivery.backoff.levels", " ", "at least one level"),
])
def test_backoff_keys_refuse_bad_values_with_a_message(key: str, value: str, message: str) -> None:
    from logwright.core.cursors.redelivery_backoff import validator

    problem = validator(key)(value)
    assert problem is not None and message in problem
    assert validator(key)({"logwright.redelivery.backoff.policy": "levels",
                           "logwright.redelivery.backoff.levels": "1s 2s",
                           "logwright.redelivery.backoff.multiplier": "1.5"}.get(key, "1000")) is None


def test_a_minimum_above_the_maximum_is_refused_whichever_is_set() -> None:
    from logwright.core.cursors import redelivery_backoff as b
    from logwright.core.cursors.plugin_decisions import GroupConfigChange
    from logwright.plugins.redelivery import logwright_check_group_config as check

    def change(settings: dict[str, str], *changed: str) -> GroupConfigChange:
        return GroupConfigChange("g", {b.MIN_KEY: "10000", b.MAX_KEY: "600000", **settings}, changed, (),
                                 lambda _: None, lambda _topic, _key: None)

    with pytest.raises(InvalidConfig, match="above the maximum"):
        check(change({b.MIN_KEY: "700000"}, b.MIN_KEY))
    with pytest.raises(InvalidConfig, match=r"'.*max.ms': .*min.ms=5000\) is above the maximum .*max.ms=2000"):
        check(change({b.MIN_KEY: "5000", b.MAX_KEY: "2000"}, b.MAX_KEY))
    check(change({b.MIN_KEY: "700000", b.MAX_KEY: "900000"}, b.MIN_KEY, b.MAX_KEY))
    check(change({}, b.MIN_KEY))  # reset to the defaults
    check(change({b.MIN_KEY: "700000"}, "share.delivery.count.limit"))  # not this rule's keys


def test_group_keys_cannot_carry_a_rule_across_keys() -> None:
    from logwright.core.config.configs import ConfigKey, ConfigRegistry
    from logwright.core.cursors import redelivery_backoff as b

    with pytest.raises(ValueError, match="logwright_check_group_config"):
        ConfigRegistry().register(ConfigKey(b.MIN_KEY, "group", "10000", b.validator(b.MIN_KEY), "", "LONG",
                                            consistent=b.min_not_above_max))


@pytest.mark.parametrize(("key", "value", "message"), [
    ("logwright.redelivery.backoff.multiplier", "nan", "at least 1.0, got nan"),
    ("logwright.redelivery.backoff.multiplier", "inf", "at least 1.0, got inf"),
    ("logwright.redelivery.backoff.max.ms", "99999999999999999999999", "at most 31536000000 ms"),
    ("logwright.redelivery.backoff.delay.ms", "31536000001", "at most 31536000000 ms"),
    ("logwright.redelivery.backoff.levels", "1s 366d", "at most 31536000000 ms"),
])
def test_values_that_could_not_be_stored_as_a_due_time_are_refused(key: str, value: str, message: str) -> None:
    from logwright.core.cursors.redelivery_backoff import validator

    problem = validator(key)(value)
    assert problem is not None and message in problem
