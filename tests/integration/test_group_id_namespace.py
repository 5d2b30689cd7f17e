"""Group ids are one namespace, as on Apache Kafka 4.4 (``--against kafka``): classic, KIP-848 consumer and share
groups never share an id.

Raw requests on one connection. Under a share group's id (with a member, then empty) the classic and consumer
APIs refuse: JoinGroup INCONSISTENT_GROUP_PROTOCOL naming no member, ConsumerGroupHeartbeat and the describes
GROUP_ID_NOT_FOUND, OffsetCommit, TxnOffsetCommit and OffsetDelete GROUP_ID_NOT_FOUND (logwright used to create a
classic group beside the share group and commit into it); the other way, Alter- and DeleteShareGroupOffsets refuse
a classic or consumer group's id (logwright used to create a share group beside a consumer group). An empty group
changes protocol when a member of the other protocol joins, its committed offsets kept, and is listed once; a
heartbeat's refusal carries its error alone (no member id, epoch 0, interval 0), as Kafka's does.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kio.schema.alter_share_group_offsets.v0 import request as alter_share_offsets
from kio.schema.consumer_group_describe.v1 import request as consumer_describe
from kio.schema.consumer_group_heartbeat.v1 import request as consumer_heartbeat
from kio.schema.delete_groups.v2 import request as delete_groups
from kio.schema.delete_share_group_offsets.v0 import request as delete_share_offsets
from kio.schema.describe_groups.v6 import request as describe_groups
from kio.schema.join_group.v9 import request as join_group
from kio.schema.leave_group.v5 import request as leave_group
from kio.schema.list_groups.v5 import request as list_groups
from kio.schema.offset_commit.v9 import request as offset_commit
from kio.schema.offset_delete.v0 import request as offset_delete
from kio.schema.offset_fetch.v9 import request as offset_fetch
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from kio.schema.sync_group.v5 import request as sync_group
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .coordinator_ready import coordinator_ready
from .test_share_close_order import topic_with_records

pytestmark = pytest.mark.differential

NONE, UNKNOWN_MEMBER_ID, INCONSISTENT_GROUP_PROTOCOL, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, MEMBER_ID_REQUIRED = (
    0, 25, 23, 68, 69, 79)
TIMEOUT = datetime.timedelta(seconds=10)
RANGE = join_group.JoinGroupRequestProtocol(name="range", metadata=bytes(10))  # an empty v0 subscription


async def _open(bootstrap: str, *groups: str) -> Connection:
    connection = await Connection.open(bootstrap, "namespace")
    for group in groups:
        await coordinator_ready(connection, group)
    return connection


def _share_heartbeat(group: str, member: str, epoch: int, topic: str | None = None) -> Any:
    return make(ShareGroupHeartbeatRequest, group_id=group, member_id=member, member_epoch=epoch, rack_id=None,
                subscribed_topic_names=(topic,) if topic is not None else None)


def consumer_heartbeat_request(group: str, member: str, epoch: int, topic: str | None = None) -> Any:
    return make(consumer_heartbeat.ConsumerGroupHeartbeatRequest, group_id=group, member_id=member,
                member_epoch=epoch, instance_id=None, rack_id=None, rebalance_timeout=TIMEOUT,
                subscribed_topic_names=(topic,) if topic is not None else None, subscribed_topic_regex=None,
                server_assignor=None, topic_partitions=() if topic is not None else None)


def join_request(group: str, member: str) -> Any:
    return make(join_group.JoinGroupRequest, group_id=group, session_timeout=TIMEOUT, rebalance_timeout=TIMEOUT,
                member_id=member, group_instance_id=None, protocol_type="consumer", protocols=(RANGE,), reason=None)


def _commit(group: str, topic: str, generation: int, member: str, offset: int) -> Any:
    partition = offset_commit.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset,
                                                           committed_leader_epoch=-1, committed_metadata=None)
    return make(offset_commit.OffsetCommitRequest, group_id=group, generation_id_or_member_epoch=generation,
                member_id=member, group_instance_id=None,
                topics=(offset_commit.OffsetCommitRequestTopic(name=topic, partitions=(partition,)),))


def _codes(answer: Any) -> list[int]:
    return [int(partition.error_code) for topic in answer.topics for partition in topic.partitions]


SETTLE_TRIES = 40
"""Looks at a group before its views are taken as they are: Kafka 4.4 may answer from two states for a moment."""


async def _seen_as(connection: Connection, group: str, topic: str) -> dict[str, Any]:
    """How the group looks through every describing API (`_looked_at`), once the APIs agree on which kind of group
    it is. Kafka 4.4 answered one DescribeGroups right after a JoinGroup that converted an empty consumer group with
    GROUP_ID_NOT_FOUND while its ListGroups already listed the Empty classic group (CI of session 54): its views catch
    up within milliseconds, so a look where they disagree is taken again, 25 ms later, a bounded number of times.
    logwright's views agree at once (a group changes in the turn that answers), so it is looked at once; were they
    to disagree, the last look is what the test compares."""
    seen = await _looked_at(connection, group, topic)
    for _ in range(SETTLE_TRIES):
        if _views_agree(seen):
            break
        await asyncio.sleep(0.025)
        seen = await _looked_at(connection, group, topic)
    return seen


def _views_agree(seen: dict[str, Any]) -> bool:
    """Whether DescribeGroups finds the group exactly when ListGroups lists it as classic, and ConsumerGroupDescribe
    exactly when it lists it as a consumer group (a share group's answers are what the test looks at: taken as they
    are)."""
    kinds = {group_type for _, _, group_type in seen["ListGroups"]}
    return "share" in kinds or ((seen["DescribeGroups"][0] != GROUP_ID_NOT_FOUND) == ("classic" in kinds)
            and (seen["ConsumerGroupDescribe"][0] != GROUP_ID_NOT_FOUND) == ("consumer" in kinds))


async def _looked_at(connection: Connection, group: str, topic: str) -> dict[str, Any]:
    """DescribeGroups v6 (code, state, protocol type), ConsumerGroupDescribe (code, state), ListGroups (protocol
    type, state, type of each entry) and the group's committed offset on partition 0."""
    classic = (await connection.request(make(describe_groups.DescribeGroupsRequest, groups=(group,),
                                             include_authorized_operations=False))).groups[0]
    consumer = (await connection.request(make(consumer_describe.ConsumerGroupDescribeRequest, group_ids=(group,),
                                              include_authorized_operations=False))).groups[0]
    listed = (await connection.request(make(list_groups.ListGroupsRequest, states_filter=(), types_filter=()))).groups
    fetched = (await connection.request(make(offset_fetch.OffsetFetchRequest, require_stable=False, groups=(
        offset_fetch.OffsetFetchRequestGroup(group_id=group, member_id=None, member_epoch=-1, topics=(
            offset_fetch.OffsetFetchRequestTopics(name=topic, partition_indexes=(0,)),)),)))).groups[0]
    return {
        "DescribeGroups": (int(classic.error_code), classic.group_state, classic.protocol_type),
        "ConsumerGroupDescribe": (int(consumer.error_code), consumer.group_state),
        "ListGroups": sorted((entry.protocol_type, entry.group_state, entry.group_type) for entry in listed
                             if entry.group_id == group),
        "committed": int(fetched.topics[0].partitions[0].committed_offset),
    }


def _transactional_commit(bootstrap: str, group: str, topic: str) -> str:
    """The outcome of committing an offset for ``group`` in a transaction (librdkafka's TxnOffsetCommit)."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"namespace-{group}", "log_level": 2})
    producer.init_transactions(30)
    producer.begin_transaction()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        producer.send_offsets_to_transaction([TopicPartition(topic, 0, 2)], consumer.consumer_group_metadata(), 30)
        outcome = "committed"
    except KafkaException as error:
        outcome = error.args[0].name()
    finally:
        consumer.close()
    producer.abort_transaction(30)
    return outcome


def test_classic_and_consumer_apis_refuse_a_share_groups_id(bootstrap: str) -> None:
    group = f"namespace-share-{uuid.uuid4().hex[:8]}"
    topic = topic_with_records(bootstrap, group)
    answers: dict[str, Any] = {}

    async def under_share_id(label: str, connection: Connection, share_member: str) -> None:
        for member in ("", "m-1"):
            joined = await connection.request(join_request(group, member))
            answers[f"{label}: JoinGroup {member!r}"] = (int(joined.error_code), joined.member_id)
        refused = await connection.request(consumer_heartbeat_request(group, str(uuid.uuid4()), 0, topic))
        answers[f"{label}: ConsumerGroupHeartbeat"] = (int(refused.error_code), refused.member_id,
                                                        int(refused.member_epoch), refused.heartbeat_interval)
        answers[f"{label}: OffsetCommit"] = (_codes(await connection.request(_commit(group, topic, -1, "", 3)))
                                             + _codes(await connection.request(_commit(group, topic, 1,
                                                                                        share_member, 3))))
        deleted = await connection.request(make(offset_delete.OffsetDeleteRequest, group_id=group, topics=(
            offset_delete.OffsetDeleteRequestTopic(name=topic, partitions=(
                offset_delete.OffsetDeleteRequestPartition(partition_index=0),)),)))
        answers[f"{label}: OffsetDelete"] = int(deleted.error_code)
        answers[f"{label}: TxnOffsetCommit"] = await asyncio.to_thread(_transactional_commit, bootstrap, group, topic)
        answers[f"{label}: seen"] = await _seen_as(connection, group, topic)
        removed = await connection.request(make(delete_groups.DeleteGroupsRequest, groups_names=(group,)))
        answers[f"{label}: DeleteGroups"] = int(removed.results[0].error_code)

    async def scenario() -> None:
        connection = await _open(bootstrap, group)
        try:
            member = str(uuid.uuid4())
            assert (await connection.request(_share_heartbeat(group, member, 0, topic))).error_code == NONE
            await under_share_id("member", connection, member)
            left = await connection.request(_share_heartbeat(group, member, -1))
            answers["share leave"] = (int(left.error_code), left.heartbeat_interval)
            await under_share_id("empty", connection, member)
            gone = await connection.request(make(delete_groups.DeleteGroupsRequest, groups_names=(group,)))
            answers["deleted: DeleteGroups"] = int(gone.results[0].error_code)
        finally:
            await connection.close()

    asyncio.run(scenario())
    refused_heartbeat = (GROUP_ID_NOT_FOUND, None, 0, datetime.timedelta(0))
    expected: dict[str, Any] = {"share leave": (NONE, datetime.timedelta(0)),
                                "deleted: DeleteGroups": GROUP_ID_NOT_FOUND}
    for label, state, deletion in (("member", "Stable", NON_EMPTY_GROUP), ("empty", "Empty", NONE)):
        expected |= {
            f"{label}: JoinGroup ''": (INCONSISTENT_GROUP_PROTOCOL, ""),
            f"{label}: JoinGroup 'm-1'": (INCONSISTENT_GROUP_PROTOCOL, ""),
            f"{label}: ConsumerGroupHeartbeat": refused_heartbeat,
            f"{label}: OffsetCommit": [GROUP_ID_NOT_FOUND, GROUP_ID_NOT_FOUND],
            f"{label}: OffsetDelete": GROUP_ID_NOT_FOUND,
            f"{label}: TxnOffsetCommit": "GROUP_ID_NOT_FOUND",
            f"{label}: seen": {"DescribeGroups": (GROUP_ID_NOT_FOUND, "Dead", ""),
                               "ConsumerGroupDescribe": (GROUP_ID_NOT_FOUND, ""),
                               "ListGroups": [("share", state, "share")], "committed": -1},
            f"{label}: DeleteGroups": deletion,
        }
    assert answers == expected


def test_an_empty_group_changes_protocol_keeping_its_offsets(bootstrap: str) -> None:
    """An emptied consumer group becomes a classic group at a classic member's join, and back at a consumer
    member's join once the classic member left; a group of committed offsets only becomes a consumer group.
    A group with members of one protocol refuses the other's (logwright does not migrate a live group)."""
    tag = uuid.uuid4().hex[:8]
    group, offsets_only = f"namespace-{tag}", f"namespace-offsets-{tag}"
    topic = topic_with_records(bootstrap, group)
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        connection = await _open(bootstrap, group, offsets_only)
        try:
            member = str(uuid.uuid4())
            joined = await connection.request(consumer_heartbeat_request(group, member, 0, topic))
            assert _codes(await connection.request(_commit(group, topic, int(joined.member_epoch), member, 4))) == [0]
            assert (await connection.request(consumer_heartbeat_request(group, member, -1))).error_code == NONE
            seen["consumer group, emptied"] = await _seen_as(connection, group, topic)
            unknown = await connection.request(join_request(group, "m-1"))
            seen["classic JoinGroup naming an unknown member"] = int(unknown.error_code)
            seen["after it"] = await _seen_as(connection, group, topic)

            first = await connection.request(join_request(group, ""))
            seen["classic JoinGroup"] = int(first.error_code)
            seen["classic JoinGroup asked for a member id"] = await _seen_as(connection, group, topic)
            joined = await connection.request(join_request(group, first.member_id))
            synced = await connection.request(make(
                sync_group.SyncGroupRequest, group_id=group, generation_id=joined.generation_id,
                member_id=joined.member_id, group_instance_id=None, protocol_type="consumer", protocol_name="range",
                assignments=(sync_group.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b""),)))
            seen["classic member synced"] = (int(joined.error_code), int(synced.error_code))
            seen["classic group"] = await _seen_as(connection, group, topic)
            await connection.request(make(leave_group.LeaveGroupRequest, group_id=group, members=(
                leave_group.MemberIdentity(member_id=joined.member_id, group_instance_id=None, reason=None),)))

            again = await connection.request(consumer_heartbeat_request(group, str(uuid.uuid4()), 0, topic))
            seen["consumer member joins the emptied classic group"] = int(again.error_code)
            seen["consumer group again"] = await _seen_as(connection, group, topic)

            assert _codes(await connection.request(_commit(offsets_only, topic, -1, "", 9))) == [0]
            seen["offsets only"] = await _seen_as(connection, offsets_only, topic)
            joined_offsets = await connection.request(consumer_heartbeat_request(offsets_only, str(uuid.uuid4()), 0,
                                                                                 topic))
            seen["consumer member joins a group of offsets"] = int(joined_offsets.error_code)
            seen["offsets only, now a consumer group"] = await _seen_as(connection, offsets_only, topic)
        finally:
            await connection.close()

    asyncio.run(scenario())
    not_classic, not_consumer = (GROUP_ID_NOT_FOUND, "Dead", ""), (GROUP_ID_NOT_FOUND, "")
    empty_classic = {"DescribeGroups": (NONE, "Empty", ""), "ConsumerGroupDescribe": not_consumer,
                     "ListGroups": [("", "Empty", "classic")], "committed": 4}
    assert seen == {
        "consumer group, emptied": {"DescribeGroups": not_classic, "ConsumerGroupDescribe": (NONE, "Empty"),
                                    "ListGroups": [("consumer", "Empty", "consumer")], "committed": 4},
        "classic JoinGroup naming an unknown member": UNKNOWN_MEMBER_ID,
        "after it": {"DescribeGroups": not_classic, "ConsumerGroupDescribe": (NONE, "Empty"),
                     "ListGroups": [("consumer", "Empty", "consumer")], "committed": 4},
        "classic JoinGroup": MEMBER_ID_REQUIRED,
        "classic JoinGroup asked for a member id": empty_classic,
        "classic member synced": (NONE, NONE),
        "classic group": {"DescribeGroups": (NONE, "Stable", "consumer"), "ConsumerGroupDescribe": not_consumer,
                          "ListGroups": [("consumer", "Stable", "classic")], "committed": 4},
        "consumer member joins the emptied classic group": NONE,
        "consumer group again": {"DescribeGroups": not_classic, "ConsumerGroupDescribe": (NONE, "Stable"),
                                 "ListGroups": [("consumer", "Stable", "consumer")], "committed": 4},
        "offsets only": {**empty_classic, "committed": 9},
        "consumer member joins a group of offsets": NONE,
        "offsets only, now a consumer group": {"DescribeGroups": not_classic, "ConsumerGroupDescribe": (NONE, "Stable"),
                                               "ListGroups": [("consumer", "Stable", "consumer")], "committed": 9},
    }


def test_share_offset_apis_refuse_a_classic_or_consumer_groups_id(bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    classic, consumer, offsets_only, unknown = (f"namespace-{kind}-{tag}" for kind in ("classic", "consumer",
                                                                                         "offsets", "unknown"))
    topic = topic_with_records(bootstrap, unknown)
    answers: dict[str, Any] = {}

    async def scenario() -> None:
        connection = await _open(bootstrap, classic, consumer, offsets_only, unknown)
        try:
            first = await connection.request(join_request(classic, ""))
            assert (await connection.request(join_request(classic, first.member_id))).error_code == NONE
            assert (await connection.request(consumer_heartbeat_request(consumer, str(uuid.uuid4()), 0, topic))
                    ).error_code == NONE
            assert _codes(await connection.request(_commit(offsets_only, topic, -1, "", 1))) == [NONE]
            for group in (classic, consumer, offsets_only, unknown):
                altered = await connection.request(make(
                    alter_share_offsets.AlterShareGroupOffsetsRequest, group_id=group, topics=(
                        alter_share_offsets.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=(
                            alter_share_offsets.AlterShareGroupOffsetsRequestPartition(partition_index=0,
                                                                                       start_offset=0),)),)))
                deleted = await connection.request(make(
                    delete_share_offsets.DeleteShareGroupOffsetsRequest, group_id=group,
                    topics=(delete_share_offsets.DeleteShareGroupOffsetsRequestTopic(topic_name=topic),)))
                answers[group] = (int(altered.error_code), int(deleted.error_code))
        finally:
            await connection.close()

    asyncio.run(scenario())
    refused = (GROUP_ID_NOT_FOUND, GROUP_ID_NOT_FOUND)
    assert answers == {classic: refused, consumer: refused, offsets_only: refused, unknown: (NONE, NONE)}
