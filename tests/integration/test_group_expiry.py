"""Committed offsets' expiry and the cleanup of empty groups (`compat.coordinators.group_expiry`), as Kafka 4.4 does it.

On both brokers (``--against kafka``), in real time: a group whose last offset OffsetDelete removed stays, Empty and
deletable, until the next cleanup (``offsets.retention.check.interval.ms``); a cleanup every second then removes it,
a classic group whose last member left without committing, and a KIP-848 group whose member left, and keeps a group
whose offset is not a week old. Kafka's expiry condition over a minute's retention: in real time on Kafka, on the
manual clock on logwright. On logwright's manual clock: offsets expire a week (``offsets.retention.minutes``)
after their commit, or after their own retention (OffsetCommit v2), and an Empty classic group's a week after it
became Empty, counted across a restart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import struct
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic
from kio.schema.delete_groups.v2 import request as delete_groups
from kio.schema.describe_groups.v5 import request as describe_groups
from kio.schema.heartbeat.v4 import request as heartbeat
from kio.schema.join_group.v9 import request as join_group
from kio.schema.leave_group.v5 import request as leave_group
from kio.schema.list_groups.v5 import request as list_groups
from kio.schema.offset_commit.v2 import request as offset_commit_v2
from kio.schema.offset_commit.v9 import request as offset_commit
from kio.schema.offset_delete.v0 import request as offset_delete
from kio.schema.offset_fetch.v9 import request as offset_fetch
from kio.schema.sync_group.v5 import request as sync_group
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .broker_process import BrokerProcess
from .conftest import Clocked
from .coordinator_ready import coordinator_ready
from .test_group_id_namespace import consumer_heartbeat_request, join_request
from .test_share_groups import advance_clock

NONE, INVALID_REQUEST, GROUP_ID_NOT_FOUND = 0, 42, 69
MINUTE, DAY = 60_000, 86_400_000
WEEK = 7 * DAY
CHECK_MS = 600_000
"""Kafka's default ``offsets.retention.check.interval.ms``: how often the cleanup of ``clock_broker`` runs."""


def new_topic(bootstrap: str, partitions: int = 1) -> str:
    topic = f"expiry-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the result: a destroyed handle fails it
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    return topic


async def connect(bootstrap: str, *groups: str) -> Connection:
    connection = await Connection.open(bootstrap, "group-expiry")
    for group in groups:
        await coordinator_ready(connection, group)
    return connection


async def commit(connection: Connection, group: str, topic: str, partitions: tuple[int, ...] = (0,),
                 generation: int = -1, member: str = "", retention_ms: int | None = None) -> list[int]:
    """OffsetCommit v9 (v2 with ``retention_ms``) of offset 5 on ``partitions``; the partitions' error codes."""
    module = offset_commit if retention_ms is None else offset_commit_v2
    answer = await connection.request(make(
        module.OffsetCommitRequest, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        group_instance_id=None, retention_time=datetime.timedelta(milliseconds=retention_ms or -1),
        topics=(module.OffsetCommitRequestTopic(name=topic, partitions=tuple(
            make(module.OffsetCommitRequestPartition, partition_index=index, committed_offset=5,
                 committed_leader_epoch=-1, committed_metadata=None) for index in partitions)),)))
    return [int(partition.error_code) for partition in answer.topics[0].partitions]


async def committed(connection: Connection, group: str, topic: str) -> int:
    answer = await connection.request(make(offset_fetch.OffsetFetchRequest, require_stable=False, groups=(
        offset_fetch.OffsetFetchRequestGroup(group_id=group, member_id=None, member_epoch=-1, topics=(
            offset_fetch.OffsetFetchRequestTopics(name=topic, partition_indexes=(0,)),)),)))
    return int(answer.groups[0].topics[0].partitions[0].committed_offset)


async def listed(connection: Connection) -> dict[str, str]:
    """Every group ListGroups lists, with its state."""
    answer = await connection.request(make(list_groups.ListGroupsRequest, states_filter=(), types_filter=()))
    return {entry.group_id: entry.group_state for entry in answer.groups}


async def described(connection: Connection, group: str) -> tuple[int, str]:
    answer = await connection.request(make(describe_groups.DescribeGroupsRequest, groups=(group,),
                                           include_authorized_operations=False))
    return int(answer.groups[0].error_code), answer.groups[0].group_state


async def delete_offset(connection: Connection, group: str, topic: str, partition: int = 0) -> int:
    answer = await connection.request(make(offset_delete.OffsetDeleteRequest, group_id=group, topics=(
        offset_delete.OffsetDeleteRequestTopic(name=topic, partitions=(
            offset_delete.OffsetDeleteRequestPartition(partition_index=partition),)),)))
    return int(answer.error_code) or int(answer.topics[0].partitions[0].error_code)


async def delete_group(connection: Connection, group: str) -> int:
    answer = await connection.request(make(delete_groups.DeleteGroupsRequest, groups_names=(group,)))
    return int(answer.results[0].error_code)


def subscription(*topics: str) -> bytes:
    """A ``consumer`` protocol subscription, version 0: the topics, no user data."""
    named = b"".join(struct.pack(">h", len(topic.encode())) + topic.encode() for topic in topics)
    return struct.pack(">hi", 0, len(topics)) + named + struct.pack(">i", -1)


async def classic_member(connection: Connection, group: str, session_ms: int | None = None,
                         topics: tuple[str, ...] = ()) -> tuple[str, int]:
    """A classic member subscribed to ``topics``, joined and synced alone: (member id, generation)."""
    def join(member: str) -> Any:
        request = join_request(group, member)
        if topics:
            request = dataclasses.replace(request, protocols=(
                join_group.JoinGroupRequestProtocol(name="range", metadata=subscription(*topics)),))
        if session_ms is None:
            return request
        timeout = datetime.timedelta(milliseconds=session_ms)
        return dataclasses.replace(request, session_timeout=timeout, rebalance_timeout=timeout)

    first = await connection.request(join(""))
    joined = await connection.request(join(first.member_id))
    member, generation = joined.member_id, int(joined.generation_id)
    synced = await connection.request(make(
        sync_group.SyncGroupRequest, group_id=group, generation_id=generation, member_id=member,
        group_instance_id=None, protocol_type="consumer", protocol_name="range",
        assignments=(sync_group.SyncGroupRequestAssignment(member_id=member, assignment=b""),)))
    assert synced.error_code == NONE
    return member, generation


async def leave(connection: Connection, group: str, member: str) -> None:
    answer = await connection.request(make(leave_group.LeaveGroupRequest, group_id=group, members=(
        leave_group.MemberIdentity(member_id=member, group_instance_id=None, reason=None),)))
    assert answer.error_code == NONE


@pytest.mark.differential
def test_a_group_whose_last_offset_is_deleted_stays_empty_and_deletable(bootstrap: str) -> None:
    """Until the next cleanup, ten minutes away by default, the group of offsets only is still there."""
    topic = new_topic(bootstrap)
    kept, deleted = (f"expiry-emptied-{kind}-{uuid.uuid4().hex[:8]}" for kind in ("kept", "deleted"))
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        connection = await connect(bootstrap, kept, deleted)
        try:
            for group in (kept, deleted):
                assert await commit(connection, group, topic) == [NONE]
                seen[f"OffsetDelete {group}"] = await delete_offset(connection, group, topic)
            groups = await listed(connection)
            seen["listed"] = {group: groups.get(group) for group in (kept, deleted)}
            seen["described"] = await described(connection, kept)
            seen["committed"] = await committed(connection, kept, topic)
            seen["DeleteGroups"] = await delete_group(connection, deleted)
            seen["DeleteGroups again"] = await delete_group(connection, deleted)
            seen["still listed"] = kept in await listed(connection)
        finally:
            await connection.close()

    asyncio.run(scenario())
    assert seen == {f"OffsetDelete {kept}": NONE, f"OffsetDelete {deleted}": NONE,
                    "listed": {kept: "Empty", deleted: "Empty"}, "described": (NONE, "Empty"), "committed": -1,
                    "DeleteGroups": NONE, "DeleteGroups again": GROUP_ID_NOT_FOUND, "still listed": True}


@pytest.mark.differential
@pytest.mark.parametrize("started_with", [{"offsets.retention.check.interval.ms": "1000"}], indirect=True)
def test_the_cleanup_removes_groups_left_empty_and_keeps_young_offsets(started_with: str) -> None:
    """And the two keys are static broker configs, read-only, as DescribeConfigs shows them."""
    bootstrap = started_with
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = admin.describe_configs([resource])[resource].result(30)
    assert {name: (configs[name].value, configs[name].source, configs[name].is_read_only) for name in (
        "offsets.retention.minutes", "offsets.retention.check.interval.ms")} == {
        "offsets.retention.minutes": ("10080", ConfigSource.DEFAULT_CONFIG.value, True),
        "offsets.retention.check.interval.ms": ("1000", ConfigSource.STATIC_BROKER_CONFIG.value, True)}
    for name in ("offsets.retention.minutes", "offsets.retention.check.interval.ms"):
        for alter in ("incremental", "legacy"):
            if alter == "incremental":
                change = ConfigResource(ConfigResource.Type.BROKER, "1", incremental_configs=[
                    ConfigEntry(name, "5", incremental_operation=AlterConfigOpType.SET)])
                future = admin.incremental_alter_configs([change])[change]
            else:
                change = ConfigResource(ConfigResource.Type.BROKER, "1", set_config={name: "5"})
                future = admin.alter_configs([change])[change]
            with pytest.raises(KafkaException) as refused:
                future.result(30)
            assert (refused.value.args[0].code(), refused.value.args[0].str()) == (
                INVALID_REQUEST, f"Cannot update these configs dynamically: [{name}]"), alter
    topic = new_topic(bootstrap)
    tag = uuid.uuid4().hex[:8]
    emptied, left, consumer, young = (f"expiry-{kind}-{tag}" for kind in ("emptied", "left", "consumer", "young"))
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        connection = await connect(bootstrap, emptied, left, consumer, young)
        try:
            assert await commit(connection, emptied, topic) == [NONE]
            assert await delete_offset(connection, emptied, topic) == NONE
            member, _ = await classic_member(connection, left)
            await leave(connection, left, member)
            member, generation = await classic_member(connection, young)
            assert await commit(connection, young, topic, generation=generation, member=member) == [NONE]
            await leave(connection, young, member)
            joined = await connection.request(consumer_heartbeat_request(consumer, str(uuid.uuid4()), 0, topic))
            assert joined.error_code == NONE
            await connection.request(consumer_heartbeat_request(consumer, joined.member_id, -1))
            gone = {emptied, left, consumer}
            deadline = time.monotonic() + 60
            while gone & set(await listed(connection)) and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            seen["left listed"] = sorted(gone & set(await listed(connection)))
            await asyncio.sleep(2.5)  # two more cleanups
            seen["young"] = (await listed(connection)).get(young), await committed(connection, young, topic)
            seen["DeleteGroups of a removed group"] = await delete_group(connection, emptied)
        finally:
            await connection.close()

    asyncio.run(scenario())
    assert seen == {"left listed": [], "young": ("Empty", 5), "DeleteGroups of a removed group": GROUP_ID_NOT_FOUND}


@pytest.mark.parametrize("clocked_with", [{"offsets.retention.minutes": "1",
                                           "offsets.retention.check.interval.ms": "1000"}], indirect=True)
def test_kafkas_expiry_condition_in_a_minute(clocked_with: Clocked) -> None:
    """A minute's retention, a pass every second: after 66 s a group of offsets only has lost its offset and gone, a
    Stable consumer group has lost the offset of the topic it does not subscribe to and kept the other, and a group
    Empty for 46 s (its commit 66 s old) keeps its offset. In real time on Kafka (not in CI's differential subset:
    a minute is its shortest retention), on the manual clock on logwright."""
    bootstrap = clocked_with.bootstrap
    subscribed, other = new_topic(bootstrap), new_topic(bootstrap)
    tag = uuid.uuid4().hex[:8]
    simple, stable, emptied = (f"expiry-minute-{kind}-{tag}" for kind in ("simple", "stable", "emptied"))
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        connection = await connect(bootstrap, simple, stable, emptied)
        try:
            assert await commit(connection, simple, subscribed) == [NONE]
            member, generation = await classic_member(connection, stable, topics=(subscribed,))
            for topic in (subscribed, other):
                assert await commit(connection, stable, topic, generation=generation, member=member) == [NONE]
            leaving, leaving_generation = await classic_member(connection, emptied, topics=(subscribed,))
            assert await commit(connection, emptied, subscribed, generation=leaving_generation,
                                member=leaving) == [NONE]
            for elapsed in range(0, 66_000, 2_000):
                for group, member_id, generation_id in ((stable, member, generation),
                                                        (emptied, leaving, leaving_generation)):
                    if group == emptied and elapsed > 20_000:
                        continue
                    beat = await connection.request(make(
                        heartbeat.HeartbeatRequest, group_id=group, generation_id=generation_id,
                        member_id=member_id, group_instance_id=None))
                    assert beat.error_code == NONE, group
                if elapsed == 20_000:
                    await leave(connection, emptied, leaving)
                await clocked_with.elapse(2_000)
            groups = await listed(connection)
            seen["listed"] = {group: groups.get(group) for group in (simple, stable, emptied)}
            seen["committed"] = {group: [await committed(connection, group, topic) for topic in (subscribed, other)]
                                 for group in (simple, stable, emptied)}
        finally:
            await connection.close()

    asyncio.run(scenario())
    assert seen == {"listed": {simple: None, stable: "Stable", emptied: "Empty"},
                    "committed": {simple: [-1, -1], stable: [5, -1], emptied: [5, -1]}}


def run(scenario: Any) -> Any:
    return asyncio.run(scenario)


def test_offsets_expire_a_week_after_their_commit_or_after_their_own_retention(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = new_topic(bootstrap)
    simple, own = "expiry-simple", "expiry-own-retention"

    async def look() -> tuple[dict[str, str], int, int]:
        connection = await connect(bootstrap)
        try:
            groups = await listed(connection)
            return ({group: groups[group] for group in (simple, own) if group in groups},
                    await committed(connection, simple, topic), await committed(connection, own, topic))
        finally:
            await connection.close()

    async def commits() -> None:
        connection = await connect(bootstrap, simple, own)
        try:
            assert await commit(connection, simple, topic) == [NONE]
            assert await commit(connection, own, topic, retention_ms=60 * MINUTE) == [NONE]
        finally:
            await connection.close()

    run(commits())
    advance_clock(bootstrap, 60 * MINUTE - 1)
    assert run(look()) == ({simple: "Empty", own: "Empty"}, 5, 5)
    advance_clock(bootstrap, CHECK_MS)
    assert run(look()) == ({simple: "Empty"}, 5, -1), "its own hour passed: gone with its group"
    advance_clock(bootstrap, WEEK - 60 * MINUTE - CHECK_MS)
    assert run(look()) == ({simple: "Empty"}, 5, -1), "a week since the commit, not yet looked at"
    advance_clock(bootstrap, CHECK_MS)
    assert run(look()) == ({}, -1, -1)


def test_an_empty_classic_groups_offsets_count_from_when_it_became_empty_across_a_restart(
        clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = new_topic(bootstrap)
    group = "expiry-classic"

    async def join_commit() -> str:
        connection = await connect(bootstrap, group)
        try:
            member, generation = await classic_member(connection, group, session_ms=30 * MINUTE)
            assert await commit(connection, group, topic, generation=generation, member=member) == [NONE]
            return member
        finally:
            await connection.close()

    async def leave_group(member: str) -> None:
        connection = await connect(bootstrap, group)
        try:
            await leave(connection, group, member)
        finally:
            await connection.close()

    async def look() -> tuple[str | None, int]:
        connection = await connect(bootstrap)
        try:
            return (await listed(connection)).get(group), await committed(connection, group, topic)
        finally:
            await connection.close()

    member = run(join_commit())
    advance_clock(bootstrap, 20 * MINUTE)
    run(leave_group(member))
    advance_clock(bootstrap, WEEK - 20 * MINUTE)
    assert run(look()) == ("Empty", 5), "a week after the commit, but not since it became Empty"
    clock_broker.stop()
    clock_broker.start()
    assert run(look()) == ("Empty", 5)
    advance_clock(bootstrap, 20 * MINUTE)
    assert run(look()) == (None, -1), "a week since it became Empty: its offsets and the group are gone"
