"""UpdateFeatures (``kafka-features upgrade|downgrade``) on logwright and on Kafka 4.4 (``--against kafka``).

Refusals and validation run on the shared broker with ``validate_only``, so nothing changes there; the change of
transaction.version runs on a broker of the test's own. Where the two brokers' supported ranges differ (logwright
runs transaction.version 1-2 only, Kafka 0-2; no metadata.version here) only the code and the message's start are
compared.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from kio.schema.api_versions.v4 import request as versions_v4
from kio.schema.end_txn.v5 import request as end_v5
from kio.schema.produce.v12 import request as produce_v12
from kio.schema.update_features.v0 import request as update_v0
from kio.schema.update_features.v1 import request as update_v1
from kio.schema.update_features.v2 import request as update_v2
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .broker_process import BrokerProcess
from .test_transaction_version_2 import end, init, produce
from .test_transactions import new_topic

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
INVALID_UPDATE_VERSION = 95
FAILED = "The update failed for all features since the following feature had an error: Invalid update version "


def update(bootstrap: str, module: Any, *updates: tuple[str, int, int], validate_only: bool = False) -> Any:
    """UpdateFeatures of ``(feature, level, upgrade type)``; v0 says ``allow_downgrade`` for a downgrade type."""
    if module is update_v0:
        keys = tuple(make(module.FeatureUpdateKey, feature=name, max_version_level=level,
                          allow_downgrade=upgrade_type != UPGRADE) for name, level, upgrade_type in updates)
        return one_request(bootstrap, make(module.UpdateFeaturesRequest, timeout=datetime.timedelta(seconds=30),
                                           feature_updates=keys))
    keys = tuple(make(module.FeatureUpdateKey, feature=name, max_version_level=level, upgrade_type=upgrade_type)
                 for name, level, upgrade_type in updates)
    return one_request(bootstrap, make(module.UpdateFeaturesRequest, timeout=datetime.timedelta(seconds=30),
                                       feature_updates=keys, validate_only=validate_only))


def outcome(answer: Any) -> tuple[int, str | None, list[tuple[str, int, str | None]]]:
    return (int(answer.error_code), answer.error_message,
            [(result.feature, int(result.error_code), result.error_message)
             for result in getattr(answer, "results", ())])


def finalized(bootstrap: str) -> tuple[int, dict[str, int]]:
    """The finalized-features epoch and levels ApiVersions names."""
    answer = one_request(bootstrap, make(versions_v4.ApiVersionsRequest, client_software_name="logwright-tests",
                                         client_software_version="1"))
    return int(answer.finalized_features_epoch), {feature.name: int(feature.max_version_level)
                                                  for feature in answer.finalized_features}


@pytest.mark.differential
@pytest.mark.parametrize("module", [update_v1, update_v2], ids=["v1", "v2"])
def test_a_refused_update_fails_every_update_with_kafkas_message(bootstrap: str, module: Any) -> None:
    """The first refusal fails the request (INVALID_UPDATE_VERSION, Kafka's message, no results)."""
    cases = {
        (("transaction.version", 1, UPGRADE),): "1 for feature transaction.version. Can't downgrade the version of "
        "this feature without setting the upgrade type to either safe or unsafe downgrade.",
        (("transaction.version", -1, SAFE_DOWNGRADE),): "-1 for feature transaction.version. A feature version "
        "cannot be less than 0.",
        (("transaction.version", 1, 0),): "1 for feature transaction.version. The controller does not support the "
        "given upgrade type.",
        (("transaction.version", 1, 7),): "1 for feature transaction.version. The controller does not support the "
        "given upgrade type.",
        (("no.such.feature", 1, UPGRADE),): "1 for feature no.such.feature. Local controller 1 does not support "
        "this feature.",
        (("no.such.feature", 0, SAFE_DOWNGRADE),): "0 for feature no.such.feature. Feature no.such.feature not "
        "found.",
        (("transaction.version", 3, UPGRADE),): "3 for feature transaction.version. Local controller 1 only "
        "supports versions ",
        (("transaction.version", 1, SAFE_DOWNGRADE), ("transaction.version", 5, UPGRADE)): "5 for feature "
        "transaction.version. Local controller 1 only supports versions ",
    }
    for updates, message in cases.items():
        code, said, results = outcome(update(bootstrap, module, *updates, validate_only=True))
        assert (code, results) == (INVALID_UPDATE_VERSION, []), updates
        assert said is not None and said.startswith(FAILED + message), said
    code, said, _ = outcome(update(bootstrap, module, ("metadata.version", 1, SAFE_DOWNGRADE), validate_only=True))
    assert code == INVALID_UPDATE_VERSION and said is not None and said.startswith(FAILED + "1 for feature "
                                                                                      "metadata.version. ")
    assert finalized(bootstrap)[1]["transaction.version"] == 2


@pytest.mark.differential
def test_validated_updates_list_each_feature_and_change_nothing(bootstrap: str) -> None:
    """validate_only answers as the change would (v0-1: NONE per feature, message "NONE"; v2 no results) and changes
    no level; v0 cannot downgrade, whatever its allow_downgrade says (Kafka 4.4's controller never reads it)."""
    updates = (("transaction.version", 1, SAFE_DOWNGRADE), ("group.version", 1, UPGRADE),
               ("transaction.version", 2, SAFE_DOWNGRADE), ("kraft.version", 0, SAFE_DOWNGRADE))
    assert outcome(update(bootstrap, update_v1, *updates, validate_only=True)) == (0, None, [
        ("transaction.version", 0, "NONE"), ("group.version", 0, "NONE"), ("transaction.version", 0, "NONE"),
        ("kraft.version", 0, "NONE")])
    assert outcome(update(bootstrap, update_v2, ("transaction.version", 1, UNSAFE_DOWNGRADE),
                          validate_only=True)) == (0, None, [])
    assert outcome(update(bootstrap, update_v1, validate_only=True)) == (0, None, [])
    code, said, _ = outcome(update(bootstrap, update_v0, ("transaction.version", 1, SAFE_DOWNGRADE)))
    assert code == INVALID_UPDATE_VERSION and said is not None and "Can't downgrade the version" in said
    assert finalized(bootstrap)[1]["transaction.version"] == 2


@pytest.mark.differential
@pytest.mark.parametrize("started_with", [{}], indirect=True)
def test_transaction_version_goes_down_to_1_and_back_and_the_broker_serves_both(started_with: str) -> None:
    """``kafka-features downgrade --feature transaction.version=1``: clients that look (the Java client, franz-go)
    then run version 1; the broker still serves a version 2 request by its version (Produce v12 joins, EndTxn v5
    bumps), as Kafka 4.4 does at level 1. The epoch grows with each change; the upgrade back restores level 2."""
    bootstrap = started_with
    epoch, levels = finalized(bootstrap)
    assert levels["transaction.version"] == 2
    assert outcome(update(bootstrap, update_v2, ("transaction.version", 1, SAFE_DOWNGRADE))) == (0, None, [])
    lowered, levels = finalized(bootstrap)
    assert levels["transaction.version"] == 1 and lowered > epoch
    assert levels["group.version"] == 1, "the others as they were"

    topic, transactional_id = new_topic(bootstrap), "tv-at-level-1"
    producer_id, producer_epoch = producer = init(bootstrap, transactional_id)
    assert produce(bootstrap, produce_v12, transactional_id, topic, 0, producer, 0, b"a") == 0
    assert end(bootstrap, end_v5, transactional_id, producer, True) == (0, producer_id, producer_epoch + 1)

    assert outcome(update(bootstrap, update_v1, ("transaction.version", 2, UPGRADE))) == (0, None, [
        ("transaction.version", 0, "NONE")])
    raised, levels = finalized(bootstrap)
    assert levels["transaction.version"] == 2 and raised > lowered


@pytest.mark.logwright_only(reason="a restart of the broker process")
def test_the_finalized_levels_survive_a_restart_and_level_0_is_not_served(tmp_path: Path) -> None:
    """The levels are an event in the log: a restarted broker names them with their epoch. transaction.version 0
    (no verification of transactional writes) is outside logwright's range, as KIP-848 groups and share groups
    cannot be turned off here."""
    process = BrokerProcess(tmp_path / "data").start()
    try:
        assert outcome(update(process.bootstrap, update_v2, ("transaction.version", 1, SAFE_DOWNGRADE)))[0] == 0
        before = finalized(process.bootstrap)
        for feature, level, supported in (("transaction.version", 0, "1-2"), ("group.version", 0, "1-1"),
                                          ("share.version", 1, "2-2")):
            code, said, _ = outcome(update(process.bootstrap, update_v2, (feature, level, UNSAFE_DOWNGRADE)))
            assert (code, said) == (INVALID_UPDATE_VERSION, f"{FAILED}{level} for feature {feature}. Local "
                                                            f"controller 1 only supports versions {supported}")
        process.stop()
        process.start()
        assert finalized(process.bootstrap) == before
        assert before[1]["transaction.version"] == 1
    finally:
        process.kill()
