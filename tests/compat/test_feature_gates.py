"""Which APIs a feature at level 0 turns off (compat/feature_gates.py); the answers themselves are checked against
Kafka 4.4 in tests/integration/test_update_features.py."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from logwright.compat import turns
from logwright.compat.errors import ErrorCode
from logwright.compat.feature_gates import GATED, refused, turned_off
from logwright.compat.handlers import load_handlers
from logwright.compat.registry import RequestContext
from logwright.core.log.features import DEFAULT_FEATURES, SUPPORTED, FinalizedFeatures

from tests.compat.brokers import GivenWay, as_read


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


def test_a_refused_describe_of_many_groups_gives_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each group asked gets its entry (a request may name a million): made in turns, a name repeated answered from
    its first entry's bytes."""
    given_way = GivenWay(monkeypatch, turns)
    names = tuple(f"g{n % 1_000}" for n in range(5_000))
    context = RequestContext(cast(Any, None), 69, 1, 1, "tester", 1, "127.0.0.1")
    answer = asyncio.run(refused(context, ConsumerGroupDescribeRequest(group_ids=names,
                                                                       include_authorized_operations=False)))
    assert given_way.count == 5_000 // turns.ANSWERS_PER_TURN
    read = as_read(answer)
    assert [(g.group_id, int(g.error_code), g.group_state) for g in read.groups] == [
        (name, ErrorCode.UNSUPPORTED_VERSION, "") for name in names]
