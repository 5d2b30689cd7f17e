"""The built-in dead_letter plugin's archive decision: KIP-1191's topic, gated by share.version as Kafka 4.4 gates it,
and Pulsar's limit, which no Kafka feature level touches."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from logwright.core.cursors.plugin_decisions import ArchivedRecords
from logwright.plugins import dead_letter


def archived(settings: Mapping[str, str], levels: Mapping[str, int]) -> ArchivedRecords:
    return ArchivedRecords("billing", "orders", 1, ((3, 3, 2),), "REJECT", "m1", 0, settings,
                           feature_levels=levels)


@pytest.mark.parametrize("levels", [{}, {"share.version": 2}])
def test_kip_1191_topic_gets_a_copy_at_share_version_2_or_when_not_asked(levels: Mapping[str, int]) -> None:
    decision = dead_letter.logwright_decide_archive(archived({dead_letter.TOPIC_KEY: "dlq.orders"}, levels))
    assert decision is not None and decision.topic == "dlq.orders"


@pytest.mark.parametrize("level", [0, 1])
def test_no_kip_1191_copy_below_share_version_2(level: int) -> None:
    settings = {dead_letter.TOPIC_KEY: "dlq.orders"}
    assert dead_letter.logwright_decide_archive(archived(settings, {"share.version": level})) is None


def test_pulsars_limit_is_not_a_share_version_matter() -> None:
    settings = {dead_letter.MAX_DELIVERIES_KEY: "2", dead_letter.PULSAR_TOPIC_KEY: "orders-billing-DLQ"}
    decision = dead_letter.logwright_decide_archive(archived(settings, {"share.version": 1}))
    assert decision is not None and decision.topic == "orders-billing-DLQ"
