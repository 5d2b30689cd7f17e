"""Which APIs a feature at level 0 turns off (compat/feature_gates.py); the answers themselves are checked against
Kafka 4.4 in tests/integration/test_update_features.py."""

from __future__ import annotations

from typing import Any, cast

from logwright.compat.feature_gates import GATED, turned_off
from logwright.compat.handlers import load_handlers
from logwright.core.log.features import DEFAULT_FEATURES, SUPPORTED, FinalizedFeatures


class _Levels:
    def __init__(self, **levels: int) -> None:
        self._features = FinalizedFeatures(tuple(
            (name, levels.get(name.replace(".", "_"), level)) for name, level in DEFAULT_FEATURES.levels), 2)

    def finalized_features(self) -> FinalizedFeatures:
        return self._features


def test_every_gated_key_is_served_and_its_feature_can_be_0() -> None:
    table = load_handlers()
    lowest = {feature.name: feature.min_level for feature in SUPPORTED}
    for api_key, feature in GATED.items():
        assert api_key in table, api_key
        assert lowest[feature] == 0, feature


def test_a_key_is_off_only_while_its_own_feature_is_0() -> None:
    default, no_groups, no_shares = (cast(Any, _Levels()), cast(Any, _Levels(group_version=0)),
                                     cast(Any, _Levels(share_version=0)))
    assert not any(turned_off(default, key) for key in GATED)
    assert [key for key in sorted(GATED) if turned_off(no_groups, key)] == [68, 69]
    assert [key for key in sorted(GATED) if turned_off(no_shares, key)] == [76, 77, 78, 79, 90, 91, 92]
    assert not any(turned_off(no_shares, key) for key in (0, 1, 8, 11, 32_003))  # others, extension keys too
    assert not turned_off(cast(Any, _Levels(share_version=1)), 78)
