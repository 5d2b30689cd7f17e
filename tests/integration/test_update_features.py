"""UpdateFeatures (``kafka-features upgrade|downgrade``) on logwright and on Kafka 4.4 (``--against kafka``).

Refusals and validation run on the shared broker with ``validate_only``, so nothing changes there; the changes of
transaction.version, group.version and share.version run on a broker of the test's own. Where the two brokers'
supported ranges differ (logwright runs transaction.version 1-2 only, Kafka 0-2; no metadata.version here) only the
code and the message's start are compared.
"""

from __future__ import annotations

import datetime
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.schema.alter_share_group_offsets.v0 import request as alter_share_offsets_v0
from kio.schema.api_versions.v4 import request as versions_v4
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.delete_share_group_offsets.v0 import request as delete_share_offsets_v0
from kio.schema.describe_share_group_offsets.v1 import request as describe_share_offsets_v1
from kio.schema.end_txn.v5 import request as end_v5
from kio.schema.list_groups.v5 import request as list_groups_v5
from kio.schema.produce.v12 import request as produce_v12
from kio.schema.share_group_describe.v1 import request as share_describe_v1
from kio.schema.share_group_heartbeat.v1 import request as share_heartbeat_v1
from kio.schema.update_features.v0 import request as update_v0
from kio.schema.update_features.v1 import request as update_v1
from kio.schema.update_features.v2 import request as update_v2
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .broker_process import BrokerProcess
from .consumer_protocol_wire import heartbeat, ready_request, request
from .test_authorization_share import acknowledge, share_fetch, topic_id
from .test_transaction_version_2 import end, init, produce
from .test_transactions import new_topic

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
NONE, UNSUPPORTED_VERSION, INVALID_UPDATE_VERSION = 0, 35, 95
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


def changed(bootstrap: str, *updates: tuple[str, int, int]) -> dict[str, int]:
    """UpdateFeatures v2 of ``updates``, which must succeed, then the levels ApiVersions names once they show it
    (Kafka's broker applies the controller's record a moment after answering)."""
    assert outcome(update(bootstrap, update_v2, *updates)) == (0, None, [])
    deadline = time.monotonic() + 30
    while True:
        _, levels = finalized(bootstrap)
        if all(levels.get(name, 0) == level for name, level, _ in updates):
            return levels
        assert time.monotonic() < deadline, f"{updates} answered, but ApiVersions still names {levels}"
        time.sleep(0.1)


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
    changed(bootstrap, ("transaction.version", 1, SAFE_DOWNGRADE))
    lowered, levels = finalized(bootstrap)
    assert levels["transaction.version"] == 1 and lowered > epoch
    assert levels["group.version"] == 1, "the others as they were"

    topic, transactional_id = new_topic(bootstrap), "tv-at-level-1"
    producer_id, producer_epoch = producer = init(bootstrap, transactional_id)
    assert produce(bootstrap, produce_v12, transactional_id, topic, 0, producer, 0, b"a") == 0
    assert end(bootstrap, end_v5, transactional_id, producer, True) == (0, producer_id, producer_epoch + 1)

    assert outcome(update(bootstrap, update_v1, ("transaction.version", 2, UPGRADE))) == (0, None, [
        ("transaction.version", 0, "NONE")])
    changed(bootstrap, ("transaction.version", 2, UPGRADE))  # already at 2: waits only for ApiVersions to say so
    raised, levels = finalized(bootstrap)
    assert levels["transaction.version"] == 2 and raised > lowered


@pytest.mark.logwright_only(reason="a restart of the broker process")
def test_the_finalized_levels_survive_a_restart_and_transaction_level_0_is_not_served(tmp_path: Path) -> None:
    """The levels are an event in the log: a restarted broker names them with their epoch, and a feature turned off
    stays off. transaction.version 0 (no verification of transactional writes) is outside logwright's range."""
    process = BrokerProcess(tmp_path / "data").start()
    try:
        assert outcome(update(process.bootstrap, update_v2, ("transaction.version", 1, SAFE_DOWNGRADE),
                              ("share.version", 0, SAFE_DOWNGRADE)))[0] == 0
        before = finalized(process.bootstrap)
        code, said, _ = outcome(update(process.bootstrap, update_v2, ("transaction.version", 0, UNSAFE_DOWNGRADE)))
        assert (code, said) == (INVALID_UPDATE_VERSION, f"{FAILED}0 for feature transaction.version. Local "
                                                        "controller 1 only supports versions 1-2")
        process.stop()
        process.start()
        assert finalized(process.bootstrap) == before
        assert before[1]["transaction.version"] == 1 and "share.version" not in before[1]
        answer = share_heartbeat(process.bootstrap, f"after-restart-{uuid.uuid4().hex[:8]}", new_topic(
            process.bootstrap))
        assert int(answer.error_code) == UNSUPPORTED_VERSION
    finally:
        process.kill()


def share_heartbeat(bootstrap: str, group: str, topic: str) -> Any:
    """A new member's ShareGroupHeartbeat, asked again while Kafka loads the group's coordinator."""
    return ready_request(bootstrap, group, make(share_heartbeat_v1.ShareGroupHeartbeatRequest, group_id=group,
                                                member_id=str(uuid.uuid4()), member_epoch=0, rack_id=None,
                                                subscribed_topic_names=(topic,)))


def _share_offset_requests(group: str, topic: str) -> tuple[Any, Any, Any]:
    return (make(describe_share_offsets_v1.DescribeShareGroupOffsetsRequest, groups=(make(
                describe_share_offsets_v1.DescribeShareGroupOffsetsRequestGroup, group_id=group, topics=None),)),
            make(alter_share_offsets_v0.AlterShareGroupOffsetsRequest, group_id=group, topics=(make(
                alter_share_offsets_v0.AlterShareGroupOffsetsRequestTopic, topic_name=topic, partitions=(make(
                    alter_share_offsets_v0.AlterShareGroupOffsetsRequestPartition, partition_index=0,
                    start_offset=0),)),)),
            make(delete_share_offsets_v0.DeleteShareGroupOffsetsRequest, group_id=group, topics=(make(
                delete_share_offsets_v0.DeleteShareGroupOffsetsRequestTopic, topic_name=topic),)))


@pytest.mark.differential
@pytest.mark.parametrize("started_with", [{}], indirect=True)
def test_group_and_share_version_0_turn_their_groups_apis_off_and_back_on(started_with: str) -> None:
    """``kafka-features downgrade --feature group.version=0`` turns KIP-848 groups off and share.version=0 share
    groups, as on Kafka 4.4: every API of theirs is UNSUPPORTED_VERSION (no message but for Alter and
    DeleteShareGroupOffsets), first thing, for groups that exist and new ones; the keys stay listed and the groups
    stay (ListGroups). The upgrade back serves them again."""
    bootstrap = started_with
    topic = new_topic(bootstrap, 1)
    tag = uuid.uuid4().hex[:8]
    consumers, shares = f"gv0-consumers-{tag}", f"gv0-shares-{tag}"
    member = heartbeat(bootstrap, consumers, str(uuid.uuid4()), 0, topics=(topic,), rebalance_timeout_ms=30_000)
    assert int(member.error_code) == NONE and member.member_id is not None
    sharer = share_heartbeat(bootstrap, shares, topic)
    assert int(sharer.error_code) == NONE and sharer.member_id is not None
    shared_topic = topic_id(bootstrap, topic)

    changed(bootstrap, ("group.version", 0, SAFE_DOWNGRADE))
    levels = changed(bootstrap, ("share.version", 0, SAFE_DOWNGRADE))
    assert "group.version" not in levels and "share.version" not in levels and levels["transaction.version"] == 2

    rejoin = heartbeat(bootstrap, consumers, member.member_id, int(member.member_epoch))
    fresh = heartbeat(bootstrap, f"{consumers}-new", str(uuid.uuid4()), 0, topics=(topic,),
                      rebalance_timeout_ms=30_000)
    assert [(int(answer.error_code), answer.error_message) for answer in (rejoin, fresh)] == [
        (UNSUPPORTED_VERSION, None)] * 2
    described = request(bootstrap, ConsumerGroupDescribeRequest(group_ids=(consumers, "gv0-none"),
                                                                include_authorized_operations=False))
    assert [(g.group_id, int(g.error_code), g.error_message, g.group_state, g.members) for g in described.groups] == [
        (consumers, UNSUPPORTED_VERSION, None, "", ()), ("gv0-none", UNSUPPORTED_VERSION, None, "", ())]

    assert int(share_heartbeat(bootstrap, shares, topic).error_code) == UNSUPPORTED_VERSION
    shared = request(bootstrap, make(share_describe_v1.ShareGroupDescribeRequest, group_ids=(shares,),
                                     include_authorized_operations=False))
    assert [(g.group_id, int(g.error_code), g.error_message, g.group_state) for g in shared.groups] == [
        (shares, UNSUPPORTED_VERSION, None, "")]
    fetched = request(bootstrap, share_fetch(shares, sharer.member_id, 0, shared_topic))
    acknowledged = request(bootstrap, acknowledge(shares, sharer.member_id, 1, shared_topic))
    assert [(int(answer.error_code), answer.error_message, answer.responses) for answer in (fetched, acknowledged)] == [
        (UNSUPPORTED_VERSION, None, ())] * 2
    described_offsets, altered, deleted = (request(bootstrap, each) for each in _share_offset_requests(shares, topic))
    assert [(g.group_id, int(g.error_code), g.error_message, g.topics) for g in described_offsets.groups] == [
        (shares, UNSUPPORTED_VERSION, None, ())]
    assert [(int(answer.error_code), answer.error_message, answer.responses) for answer in (altered, deleted)] == [
        (UNSUPPORTED_VERSION, "The version of API is not supported.", ())] * 2

    listed = request(bootstrap, make(list_groups_v5.ListGroupsRequest, states_filter=(), types_filter=()))
    assert {(g.group_id, g.group_type) for g in listed.groups} >= {(consumers, "consumer"), (shares, "share")}
    versions = request(bootstrap, make(versions_v4.ApiVersionsRequest, client_software_name="logwright-tests",
                                       client_software_version="1"))
    assert {68, 69, 76, 77, 78, 79, 90, 91, 92} <= {int(key.api_key) for key in versions.api_keys}

    changed(bootstrap, ("group.version", 1, UPGRADE))
    changed(bootstrap, ("share.version", 2, UPGRADE))
    again = heartbeat(bootstrap, f"{consumers}-again", str(uuid.uuid4()), 0, topics=(topic,),
                      rebalance_timeout_ms=30_000)
    assert int(again.error_code) == NONE and int(again.member_epoch) >= 1
    assert int(share_heartbeat(bootstrap, f"{shares}-again", topic).error_code) == NONE
