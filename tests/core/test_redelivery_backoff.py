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
