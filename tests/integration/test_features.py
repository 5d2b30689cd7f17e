"""The broker's features in ApiVersions (KIP-584), the rules both brokers follow (``--against kafka`` runs them on
Kafka 4.4): what ``kafka-features describe`` and ``Admin.describeFeatures`` read, and what clients gate behaviour on.

The levels differ on purpose: Kafka 4.4 finalizes streams.version 1, which logwright does not implement, and names a
metadata.version, which logwright, without a KRaft metadata log, does not have; share.version is 2 here (KIP-1191's
dead-letter copies), 1 on a Kafka formatted by default. Both finalize transaction.version 2 (KIP-890 part 2). The
levels logwright cannot run are not in its ranges (transaction.version 0), so v3, which leaves out the features a
range of which starts at 0, names transaction.version here; group.version and share.version start at 0, as on Kafka
(tests/integration/test_update_features.py turns them off).
"""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.api_versions.v3 import request as v3
from kio.schema.api_versions.v4 import request as v4
from logwright.compat.registry import make
from logwright.testing.clients import one_request

pytestmark = pytest.mark.differential


def ask(bootstrap: str, module: Any) -> Any:
    return one_request(bootstrap, make(module.ApiVersionsRequest, client_software_name="logwright-tests",
                                       client_software_version="1"))


def test_v4_names_every_feature_and_v3_only_those_that_cannot_be_off(bootstrap: str, target: str) -> None:
    latest, older = ask(bootstrap, v4), ask(bootstrap, v3)
    supported = {feature.name: (feature.min_version, feature.max_version) for feature in latest.supported_features}
    assert {"group.version", "share.version", "transaction.version", "streams.version", "kraft.version",
            "eligible.leader.replicas.version"} <= set(supported)
    assert [feature.name for feature in older.supported_features] == [
        name for name, (lowest, _) in supported.items() if lowest > 0]
    finalized = {feature.name: (feature.min_version_level, feature.max_version_level)
                 for feature in latest.finalized_features}
    assert latest.finalized_features_epoch >= 0
    for name, (lowest, highest) in finalized.items():
        assert lowest == highest >= 1, name  # a level 0 feature is left out
        assert supported[name][0] <= highest <= supported[name][1], name
    assert finalized["group.version"] == (1, 1), "KIP-848 groups"
    assert finalized["share.version"][0] >= 1, "share groups"
    assert finalized["transaction.version"] == (2, 2), "KIP-890 part 2: the Java client 4.x runs its version 2"
    assert [(f.name, f.max_version_level) for f in older.finalized_features] == [
        (f.name, f.max_version_level) for f in latest.finalized_features]
    if target == "logwright":
        assert finalized == {"group.version": (1, 1), "share.version": (2, 2), "transaction.version": (2, 2)}
        assert "metadata.version" not in supported
        assert {name: supported[name] for name in ("group.version", "share.version", "transaction.version")} == {
            "group.version": (0, 1), "share.version": (0, 2), "transaction.version": (1, 2)}, "core.log.features"

