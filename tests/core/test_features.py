"""UpdateFeatures' decisions (`core.log.features`): given the finalized levels and the updates, the refusal or the
event; no I/O. The wire, on both brokers: tests/integration/test_update_features.py."""

from __future__ import annotations

import pytest
from logwright.core.events import FeatureLevelsUpdated
from logwright.core.log.catalog import CATALOG, FEATURES_KEY
from logwright.core.log.features import (
    DEFAULT_FEATURES,
    SAFE_DOWNGRADE,
    UNSAFE_DOWNGRADE,
    UPGRADE,
    finalized,
    update_features,
)
from logwright.core.projection import fold

FAILED = "The update failed for all features since the following feature had an error: Invalid update version "


def test_transaction_version_goes_down_and_up_within_its_range_each_change_one_epoch_more() -> None:
    refusal, event = update_features(DEFAULT_FEATURES, [("transaction.version", 1, SAFE_DOWNGRADE)], False, 1)
    assert refusal is None and event is not None and event.epoch == DEFAULT_FEATURES.epoch + 1
    lowered = finalized(fold(CATALOG, [event]).get(FEATURES_KEY))
    assert lowered.level("transaction.version") == 1 and lowered.level("group.version") == 1
    assert update_features(lowered, [("transaction.version", 1, UPGRADE)], False, 1) == (None, None), "nothing changes"
    refusal, raised = update_features(lowered, [("transaction.version", 2, UPGRADE)], False, 1)
    assert refusal is None and raised is not None and raised.epoch == lowered.epoch + 1
    assert dict(raised.levels) == dict(DEFAULT_FEATURES.levels)


def test_validation_only_and_a_feature_named_twice_take_the_last_update() -> None:
    assert update_features(DEFAULT_FEATURES, [("transaction.version", 1, SAFE_DOWNGRADE)], True, 1) == (None, None)
    refusal, event = update_features(DEFAULT_FEATURES, [("transaction.version", 9, UPGRADE),
                                                        ("transaction.version", 1, UNSAFE_DOWNGRADE)], False, 1)
    assert refusal is None and event is not None and dict(event.levels)["transaction.version"] == 1


@pytest.mark.parametrize(("update", "reason"), [
    (("transaction.version", 1, UPGRADE), "Can't downgrade the version of this feature without setting the "
     "upgrade type to either safe or unsafe downgrade."),
    (("transaction.version", 2, 4), "The controller does not support the given upgrade type."),
    (("transaction.version", -3, SAFE_DOWNGRADE), "A feature version cannot be less than 0."),
    (("transaction.version", 0, SAFE_DOWNGRADE), "Local controller 1 only supports versions 1-2"),
    (("group.version", 2, UPGRADE), "Local controller 1 only supports versions 0-1"),
    (("share.version", 3, UPGRADE), "Local controller 1 only supports versions 0-2"),
    (("streams.version", 1, UPGRADE), "Local controller 1 does not support this feature."),
    (("metadata.version", 0, UPGRADE), "Local controller 1 does not support this feature."),
    (("no.such.feature", 0, UPGRADE), "Feature no.such.feature not found."),
])
def test_refusals_name_the_feature_and_kafkas_reason(update: tuple[str, int, int], reason: str) -> None:
    assert update_features(DEFAULT_FEATURES, [update], False, 1) == (
        f"{FAILED}{update[1]} for feature {update[0]}. {reason}", None)


def test_a_downgrade_type_cannot_raise_a_level() -> None:
    lowered = finalized(fold(CATALOG, [FeatureLevelsUpdated(
        tuple(sorted({**dict(DEFAULT_FEATURES.levels), "transaction.version": 1}.items())), 2)]).get(FEATURES_KEY))
    assert update_features(lowered, [("transaction.version", 2, SAFE_DOWNGRADE)], False, 1) == (
        f"{FAILED}2 for feature transaction.version. Can't downgrade to a newer version.", None)


def test_the_messages_name_the_brokers_own_node_id() -> None:
    """A broker started with ``node.id`` 7 is "Local controller 7", as a Kafka node of that id says."""
    assert update_features(DEFAULT_FEATURES, [("transaction.version", 0, SAFE_DOWNGRADE)], False, 7) == (
        f"{FAILED}0 for feature transaction.version. Local controller 7 only supports versions 1-2", None)
