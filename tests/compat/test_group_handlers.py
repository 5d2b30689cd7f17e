"""Group API handlers over a real RocksEventStore and a ManualClock: kio requests in, kio responses out."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import io
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kio.schema.consumer_protocol_subscription.v1.data import ConsumerProtocolSubscription
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.describe_groups.v5.request import DescribeGroupsRequest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.heartbeat.v1.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.leave_group.v3.request import LeaveGroupRequest, MemberIdentity
from kio.schema.list_groups.v4.request import ListGroupsRequest
from kio.schema.offset_commit.v2.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_delete.v0.request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from kio.schema.offset_fetch.v1.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest as OffsetFetchRequestV8
from kio.schema.offset_fetch.v8.request import OffsetFetchRequestGroup
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.serial import entity_writer
from logwright.compat.coordinators import group_coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.extensions import clock_control
from logwright.compat.kafka import (
    delete_groups,
    delete_topics,
    describe_groups,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from logwright.compat.registry import RequestContext
from logwright.compat.wire.encoder import Encoded
from logwright.core.clock import ManualClock
from logwright.core.events import TopicDeleted
from logwright.core.groups.offset_expiry import CHECK_INTERVAL_MS
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import GivenWay, as_read, in_process_broker

T = TypeVar("T")
GROUP = "workers"


def subscription(*topics: str) -> bytes:
    buffer = io.BytesIO()
    entity_writer(ConsumerProtocolSubscription)(buffer, ConsumerProtocolSubscription(topics=topics,
                                                                                      owned_partitions=()))
    return b"\x00\x01" + buffer.getvalue()


class Harness:
    def __init__(self, path: Path, clock: ManualClock) -> None:
        self.store = RocksEventStore(path, clock=clock)
        self.broker = in_process_broker(self.store, clock=clock)

    def _context(self, version: int) -> RequestContext:
        return RequestContext(self.broker, 0, version, 1, "tester", 1, "127.0.0.1")

    async def call(self, handle: Callable[[RequestContext, Any], Awaitable[T]], version: int, request: Any) -> T:
        """The answer as the client reads it (`as_read`)."""
        return as_read(await handle(self._context(version), request))  # type: ignore[no-any-return]

    async def join(self, member_id: str) -> Any:
        request = JoinGroupRequest(
            group_id=GROUP, session_timeout=datetime.timedelta(seconds=10),
            rebalance_timeout=datetime.timedelta(seconds=30), member_id=member_id, group_instance_id=None,
            protocol_type="consumer",
            protocols=(JoinGroupRequestProtocol(name="range", metadata=subscription("t")),),
        )
        return await self.call(join_group.handle, 5, request)

    async def sync(self, member_id: str, generation: int, assignments: dict[str, bytes]) -> Any:
        request = SyncGroupRequest(group_id=GROUP, generation_id=generation, member_id=member_id,
                                   group_instance_id=None, assignments=tuple(
                                       SyncGroupRequestAssignment(member_id=m, assignment=a)
                                       for m, a in assignments.items()))
        return await self.call(sync_group.handle, 3, request)

    async def new_member(self) -> str:
        first = await self.join("")
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED and first.member_id
        return str(first.member_id)

    async def advance(self, milliseconds: int) -> None:
        """LogwrightAdvanceClock: move the manual clock and run every deadline that fell due."""
        answer = await clock_control.handle(self._context(0), milliseconds.to_bytes(8, "big"))
        assert int.from_bytes(answer[:2], "big") == ErrorCode.NONE

    def close(self) -> None:
        self.broker.coordinators.close()
        self.broker.commit_now()
        self.store.close()


def commit(member_id: str, generation: int, offsets: dict[tuple[str, int], int]) -> OffsetCommitRequest:
    topics = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_metadata="meta"))
    return OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=generation, member_id=member_id,
                               retention_time=datetime.timedelta(milliseconds=-1), topics=tuple(
                                   OffsetCommitRequestTopic(name=name, partitions=tuple(parts))
                                   for name, parts in topics.items()))


def test_a_two_member_group_survives_a_restart(tmp_path: Path) -> None:
    asyncio.run(_two_members_and_a_restart(tmp_path))


async def _rebalance(harness: Harness) -> tuple[str, str]:
    lookup = FindCoordinatorRequest(key_type=0, coordinator_keys=(GROUP,))
    found = await harness.call(find_coordinator.handle, 4, lookup)
    assert found.coordinators[0].node_id == harness.broker.node_id
    m1 = await harness.new_member()
    joined = await harness.join(m1)
    assert (joined.error_code, joined.generation_id, joined.leader) == (ErrorCode.NONE, 1, m1)
    assert (await harness.sync(m1, 1, {m1: b"all"})).assignment == b"all"
    m2 = await harness.new_member()
    second = asyncio.ensure_future(harness.join(m2))
    await asyncio.sleep(0)
    beat = await harness.call(heartbeat.handle, 1, HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=m1))
    assert beat.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    leader, follower = await asyncio.gather(harness.join(m1), second)
    assert leader.generation_id == follower.generation_id == 2
    assert [member.member_id for member in leader.members] == [m1, m2] and follower.members == ()
    waiting = asyncio.ensure_future(harness.sync(m2, 2, {}))
    await asyncio.sleep(0)
    assert not waiting.done()
    await harness.sync(m1, 2, {m1: b"p0,p1", m2: b"p2,p3"})
    assert (await waiting).assignment == b"p2,p3"
    return m1, m2


async def _two_members_and_a_restart(tmp_path: Path) -> None:
    clock = ManualClock()
    harness = Harness(tmp_path, clock)
    harness.broker.create_topic("t", 4)
    await harness.broker.durable()
    m1, m2 = await _rebalance(harness)
    committed = await harness.call(offset_commit.handle, 2, commit(m1, 2, {("t", 0): 42, ("t", 1): 7, ("nope", 0): 1}))
    codes = {(t.name, p.partition_index): p.error_code for t in committed.topics for p in t.partitions}
    assert codes == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NONE,
                     ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    stale = await harness.call(offset_commit.handle, 2, commit(m1, 1, {("t", 0): 1}))
    assert stale.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION
    harness.close()

    restarted = Harness(tmp_path, clock)
    described = await restarted.call(describe_groups.handle, 5, DescribeGroupsRequest(
        groups=(GROUP, "ghost"), include_authorized_operations=False))
    group, ghost = described.groups
    assert (group.group_state, group.protocol_data, ghost.group_state) == ("Stable", "range", "Dead")
    assert {m.member_id: m.member_assignment for m in group.members} == {m1: b"p0,p1", m2: b"p2,p3"}
    beat = await restarted.call(heartbeat.handle, 1, HeartbeatRequest(group_id=GROUP, generation_id=2, member_id=m2))
    assert beat.error_code == ErrorCode.NONE
    fetched = await restarted.call(offset_fetch.handle, 1, OffsetFetchRequest(group_id=GROUP, topics=(
        OffsetFetchRequestTopic(name="t", partition_indexes=(0, 1, 2)),)))
    assert [(p.committed_offset, p.metadata) for p in fetched.topics[0].partitions] == [
        (42, "meta"), (7, "meta"), (-1, "")]
    batched = await restarted.call(offset_fetch.handle, 8, OffsetFetchRequestV8(groups=(
        OffsetFetchRequestGroup(group_id=GROUP, topics=None),), require_stable=True))
    assert {p.partition_index for p in batched.groups[0].topics[0].partitions} == {0, 1}

    listed = await restarted.call(list_groups.handle, 4, ListGroupsRequest(states_filter=("stable",)))
    assert [(g.group_id, g.group_state) for g in listed.groups] == [(GROUP, "Stable")]
    refused = await restarted.call(offset_delete.handle, 0, OffsetDeleteRequest(group_id=GROUP, topics=(
        OffsetDeleteRequestTopic(name="t", partitions=(OffsetDeleteRequestPartition(partition_index=0),)),)))
    assert refused.topics[0].partitions[0].error_code == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    not_empty = await restarted.call(delete_groups.handle, 2, DeleteGroupsRequest(groups_names=(GROUP,)))
    assert not_empty.results[0].error_code == ErrorCode.NON_EMPTY_GROUP

    left = await restarted.call(leave_group.handle, 3, LeaveGroupRequest(group_id=GROUP, members=tuple(
        MemberIdentity(member_id=member_id, group_instance_id=None) for member_id in (m1, m2, "ghost"))))
    assert [m.error_code for m in left.members] == [ErrorCode.NONE, ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    deleted = await restarted.call(delete_groups.handle, 2, DeleteGroupsRequest(groups_names=(GROUP, "ghost")))
    assert [r.error_code for r in deleted.results] == [ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND]
    fetched = await restarted.call(offset_fetch.handle, 1, OffsetFetchRequest(group_id=GROUP, topics=(
        OffsetFetchRequestTopic(name="t", partition_indexes=(0,)),)))
    assert fetched.topics[0].partitions[0].committed_offset == -1
    assert not [key for key in restarted.store.entities("committed_offsets") if key.endswith("/" + GROUP)], \
        "the deleted group's rows went with it"
    restarted.close()


async def turns_during(request: Awaitable[T]) -> tuple[T, int]:
    """``request``'s answer, and how many turns another task got while it ran (at most 5)."""
    turns = 0

    async def count_turns() -> None:
        nonlocal turns
        for _ in range(5):
            turns += 1
            await asyncio.sleep(0)

    counting = asyncio.create_task(count_turns())
    answer = await request
    counted = turns
    await counting
    return answer, counted


async def _one_member(harness: Harness) -> str:
    member = await harness.new_member()
    assert (await harness.join(member)).generation_id == 1
    assert (await harness.sync(member, 1, {member: b"all"})).error_code == ErrorCode.NONE
    return member


def test_a_commit_of_many_partitions_lets_other_requests_run_and_checks_the_member_again_before_staging(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request naming thousands of partitions must not hold the event loop for all of them; a member that left
    while the request waited commits nothing (its commits are staged in the turn they were last allowed)."""
    monkeypatch.setattr(offset_commit, "PARTITIONS_PER_TURN", 3)

    async def scenario() -> None:
        harness = Harness(tmp_path, ManualClock())
        harness.broker.create_topic("t", 10)
        await harness.broker.durable()
        member = await _one_member(harness)
        answered, turns = await turns_during(
            harness.call(offset_commit.handle, 2, commit(member, 1, {("t", p): 5 for p in range(10)})))
        assert {p.error_code for p in answered.topics[0].partitions} == {ErrorCode.NONE}
        assert turns >= 3, "other tasks ran while the commit was checked"

        async def leave() -> None:
            await harness.call(leave_group.handle, 3, LeaveGroupRequest(group_id=GROUP, members=(
                MemberIdentity(member_id=member, group_instance_id=None),)))

        leaving = asyncio.create_task(leave())
        refused = await harness.call(offset_commit.handle, 2, commit(member, 1, {("t", p): 9 for p in range(10)}))
        await leaving
        assert {p.error_code for p in refused.topics[0].partitions} == {ErrorCode.UNKNOWN_MEMBER_ID}
        fetched = await harness.call(offset_fetch.handle, 1, OffsetFetchRequest(group_id=GROUP, topics=(
            OffsetFetchRequestTopic(name="t", partition_indexes=tuple(range(10))),)))
        assert {p.committed_offset for p in fetched.topics[0].partitions} == {5}, "nothing of the refused commit"
        harness.close()

    asyncio.run(scenario())


def test_a_fetch_of_many_partitions_lets_other_requests_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(offset_fetch, "PARTITIONS_PER_TURN", 3)

    async def scenario() -> None:
        harness = Harness(tmp_path, ManualClock())
        harness.broker.create_topic("t", 10)
        await harness.broker.durable()
        await harness.call(offset_commit.handle, 2, commit("", -1, {("t", p): p for p in range(10)}))
        request = OffsetFetchRequestV8(groups=(OffsetFetchRequestGroup(group_id=GROUP, topics=None),),
                                       require_stable=False)
        fetched, turns = await turns_during(harness.call(offset_fetch.handle, 8, request))
        assert [p.committed_offset for p in fetched.groups[0].topics[0].partitions] == list(range(10))
        assert turns >= 3, "other tasks ran while the fetch was answered"
        answer = await offset_fetch.handle(harness._context(8), request)
        assert all(isinstance(p, Encoded) for p in answer.groups[0].topics[0].partitions), (
            "each partition's answer is encoded in the turn that reads it: encoding 5,000 at the end held the loop")
        harness.close()

    asyncio.run(scenario())


def test_the_session_timer_expires_a_silent_member(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = ManualClock()
        harness = Harness(tmp_path, clock)
        member_id = await harness.new_member()
        assert (await harness.join(member_id)).generation_id == 1
        await harness.sync(member_id, 1, {member_id: b"x"})
        await harness.advance(9_999)
        still = await harness.call(describe_groups.handle, 5, DescribeGroupsRequest(
            groups=(GROUP,), include_authorized_operations=False))
        assert [m.member_id for m in still.groups[0].members] == [member_id], "not before its session timeout"
        await harness.advance(1)
        described = await harness.call(describe_groups.handle, 5, DescribeGroupsRequest(
            groups=(GROUP,), include_authorized_operations=False))
        assert (described.groups[0].group_state, described.groups[0].members) == ("Empty", ())
        beat = await harness.call(heartbeat.handle, 1, HeartbeatRequest(group_id=GROUP, generation_id=1,
                                                                        member_id=member_id))
        assert beat.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        harness.close()

    asyncio.run(scenario())


def test_deleting_a_topic_deletes_every_groups_offsets_on_it_and_keeps_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As Kafka's coordinator does: a topic created again under the same name starts without committed offsets."""
    monkeypatch.setattr(group_coordinator, "OFFSETS_DELETED_PER_TURN", 2)

    async def scenario() -> None:
        clock = ManualClock()
        harness = Harness(tmp_path, clock)
        harness.broker.create_topic("t", 3)
        harness.broker.create_topic("u", 1)
        await harness.broker.durable()
        for group, offsets in (("g1", {("t", 0): 5, ("t", 1): 6, ("u", 0): 7}), ("g2", {("t", 2): 8})):
            request = dataclasses.replace(commit("", -1, offsets), group_id=group)
            assert (await harness.call(offset_commit.handle, 2, request)).topics[0].partitions[0].error_code == 0
        deleted = await harness.call(delete_topics.handle, 6, DeleteTopicsRequest(
            topics=(DeleteTopicState(name="t", topic_id=None),), timeout=datetime.timedelta(seconds=5)))
        assert deleted.responses[0].error_code == ErrorCode.NONE
        harness.broker.create_topic("t", 3)
        await harness.broker.durable()

        async def fetch(group: str, topic: str, partitions: tuple[int, ...]) -> list[int]:
            answer = await harness.call(offset_fetch.handle, 1, OffsetFetchRequest(group_id=group, topics=(
                OffsetFetchRequestTopic(name=topic, partition_indexes=partitions),)))
            return [p.committed_offset for p in answer.topics[0].partitions]

        assert await fetch("g1", "t", (0, 1, 2)) == [-1, -1, -1]
        assert await fetch("g2", "t", (2,)) == [-1]
        assert await fetch("g1", "u", (0,)) == [7], "offsets on other topics stay"
        listed = await harness.call(list_groups.handle, 4, ListGroupsRequest(states_filter=()))
        assert [g.group_id for g in listed.groups] == ["g1", "g2"], "left without offsets, Empty until the cleanup"
        clock.advance(CHECK_INTERVAL_MS)
        harness.broker.coordinators.run_due()
        await harness.broker.durable()
        listed = await harness.call(list_groups.handle, 4, ListGroupsRequest(states_filter=()))
        assert [g.group_id for g in listed.groups] == ["g1"], "the cleanup removed the group"
        harness.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("sliced", ["searching", "deleting"])
def test_an_offset_committed_again_while_a_deleted_topics_offsets_go_is_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sliced: str) -> None:
    """The rows are searched, then deleted, in slices; a row committed anew between two (a new topic of the same
    name) stays."""
    monkeypatch.setattr(group_coordinator, "OFFSETS_DELETED_PER_TURN", 2 if sliced == "deleting" else 1_000)
    monkeypatch.setattr(group_coordinator, "ROWS_SEARCHED_PER_TURN", 2 if sliced == "searching" else 1_000)

    async def scenario() -> None:
        harness = Harness(tmp_path, ManualClock())
        harness.broker.create_topic("t", 4)
        await harness.broker.durable()
        await harness.call(offset_commit.handle, 2, commit("", -1, {("t", p): 5 for p in range(4)}))
        forgetting = asyncio.create_task(group_coordinator.forget_topic_offsets(harness.broker, ["t"]))
        await asyncio.sleep(0)  # the first slice is searched, or staged
        await harness.call(offset_commit.handle, 2, commit("", -1, {("t", 3): 9}))
        await forgetting
        fetched = await harness.call(offset_fetch.handle, 1, OffsetFetchRequest(group_id=GROUP, topics=(
            OffsetFetchRequestTopic(name="t", partition_indexes=(0, 1, 2, 3)),)))
        assert [p.committed_offset for p in fetched.topics[0].partitions] == [-1, -1, -1, 9]
        harness.close()

    asyncio.run(scenario())


def test_a_start_deletes_the_offsets_left_on_topics_that_no_longer_exist(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that stopped between a topic's deletion and its offsets' (or a store from before DeleteTopics
    deleted them) leaves rows no commit could make now: the next start deletes them, in slices."""
    monkeypatch.setattr(group_coordinator, "OFFSETS_DELETED_PER_TURN", 2)

    async def fetch(harness: Harness, topic: str, partitions: tuple[int, ...]) -> list[int]:
        answer = await harness.call(offset_fetch.handle, 1, OffsetFetchRequest(group_id=GROUP, topics=(
            OffsetFetchRequestTopic(name=topic, partition_indexes=partitions),)))
        return [p.committed_offset for p in answer.topics[0].partitions]

    async def stopped_after_the_deletion() -> None:
        harness = Harness(tmp_path, ManualClock())
        harness.broker.create_topic("t", 3)
        harness.broker.create_topic("u", 1)
        await harness.broker.durable()
        await harness.call(offset_commit.handle, 2, commit("", -1, {("t", 0): 5, ("t", 1): 6, ("t", 2): 7,
                                                                    ("u", 0): 8}))
        topic = harness.broker.topic("t")
        assert topic is not None
        harness.broker.stage([TopicDeleted("t", topic.topic_id, topic.partition_ids)])  # and no offsets deleted
        await harness.broker.durable()
        assert group_coordinator.offsets_of_missing_topics(harness.broker) == ["t"]
        harness.close()

    async def restarted() -> None:
        harness = Harness(tmp_path, ManualClock())
        harness.broker.coordinators.start()
        for _ in range(5):
            await asyncio.sleep(0)
        await harness.broker.durable()
        assert group_coordinator.offsets_of_missing_topics(harness.broker) == []
        harness.broker.create_topic("t", 3)
        await harness.broker.durable()
        assert await fetch(harness, "t", (0, 1, 2)) == [-1, -1, -1], "a topic of the same name starts afresh"
        assert await fetch(harness, "u", (0,)) == [8], "offsets on a topic that exists stay"
        harness.close()

    asyncio.run(stopped_after_the_deletion())
    asyncio.run(restarted())


def test_the_groups_with_offsets_are_read_once_and_then_kept_by_the_commits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ListGroups searched every committed-offset row for the groups' heads (32 ms at 1 M rows); the classic
    coordinator finds them once and the commits that write or delete a head keep the set."""
    searches = 0
    search = group_coordinator.groups_with_offsets

    def counted(states: Any) -> Any:
        nonlocal searches
        searches += 1
        return search(states)

    monkeypatch.setattr(group_coordinator, "groups_with_offsets", counted)

    async def scenario() -> None:
        harness = Harness(tmp_path, ManualClock())
        harness.broker.create_topic("t", 3)
        await harness.broker.durable()

        async def listed() -> list[str]:
            answer = await harness.call(list_groups.handle, 4, ListGroupsRequest(states_filter=()))
            return [group.group_id for group in answer.groups]

        async def commit_as(group: str, offsets: dict[tuple[str, int], int]) -> None:
            request = dataclasses.replace(commit("", -1, offsets), group_id=group)
            assert (await harness.call(offset_commit.handle, 2, request)).topics[0].partitions[0].error_code == 0

        await commit_as("g1", {("t", 0): 5})
        assert await listed() == ["g1"]
        await commit_as("g2", {("t", 1): 6, ("t", 2): 7})
        await commit_as("g3", {("t", 0): 1})
        assert await listed() == ["g1", "g2", "g3"]
        deleted = await harness.call(offset_delete.handle, 0, OffsetDeleteRequest(group_id="g3", topics=(
            OffsetDeleteRequestTopic(name="t", partitions=(OffsetDeleteRequestPartition(partition_index=0),)),)))
        assert deleted.topics[0].partitions[0].error_code == ErrorCode.NONE
        assert await listed() == ["g1", "g2", "g3"], "its last offset deleted, g3 is Empty until the cleanup"
        gone = await harness.call(delete_groups.handle, 2, DeleteGroupsRequest(groups_names=("g1", "g3")))
        assert [result.error_code for result in gone.results] == [ErrorCode.NONE, ErrorCode.NONE]
        assert await listed() == ["g2"]
        assert searches == 1, "the rows were searched once, for the first listing"
        assert harness.store.reopen()
        assert await listed() == ["g2"]
        assert searches == 2, "and once again after the store reloaded from disk"
        harness.close()

    asyncio.run(scenario())


def test_a_deletion_of_many_topics_gives_way_between_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten 10,000-partition topics deleted in one stretch held every client 98 ms; and the committed-offset rows
    are searched for theirs in slices."""
    monkeypatch.setattr(delete_topics, "PARTITIONS_PER_TURN", 2)
    monkeypatch.setattr(group_coordinator, "ROWS_SEARCHED_PER_TURN", 2)
    deleting, searching = GivenWay(monkeypatch, delete_topics), GivenWay(monkeypatch, group_coordinator)

    async def scenario() -> None:
        harness = Harness(tmp_path, ManualClock())
        for name in ("a", "b", "c", "d"):
            harness.broker.create_topic(name, 2)
        await harness.broker.durable()
        await harness.call(offset_commit.handle, 2, commit("", -1, {(name, 0): 1 for name in ("a", "b", "c", "d")}))
        deleted = await harness.call(delete_topics.handle, 6, DeleteTopicsRequest(
            topics=tuple(DeleteTopicState(name=name, topic_id=None) for name in ("a", "b", "c")),
            timeout=datetime.timedelta(seconds=5)))
        assert [topic.error_code for topic in deleted.responses] == [ErrorCode.NONE] * 3
        assert [harness.broker.topic(name) is None for name in ("a", "b", "c", "d")] == [True, True, True, False]
        assert (deleting.count, searching.count) == (2, 2), "five rows (four and the group's head), two a slice"
        fetched = await harness.call(offset_fetch.handle, 1, OffsetFetchRequest(group_id=GROUP, topics=tuple(
            OffsetFetchRequestTopic(name=name, partition_indexes=(0,)) for name in ("a", "d"))))
        assert [topic.partitions[0].committed_offset for topic in fetched.topics] == [-1, 1]
        harness.close()

    asyncio.run(scenario())


def test_a_deletion_of_many_groups_gives_way_between_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """40 groups of 10,000 committed partitions each were deleted in one stretch: 450 ms with every client
    waiting. The request gives way every `ROWS_PER_TURN` rows deleted."""
    monkeypatch.setattr(delete_groups, "ROWS_PER_TURN", 4)
    given_way = GivenWay(monkeypatch, delete_groups)

    async def scenario() -> None:
        harness = Harness(tmp_path, ManualClock())
        harness.broker.create_topic("t", 3)
        await harness.broker.durable()
        names = [f"g{n}" for n in range(4)]
        for name in names:
            request = dataclasses.replace(commit("", -1, {("t", p): 5 for p in range(3)}), group_id=name)
            assert (await harness.call(offset_commit.handle, 2, request)).topics[0].partitions[0].error_code == 0
        deleted = await harness.call(delete_groups.handle, 2, DeleteGroupsRequest(groups_names=(*names, "gone")))
        assert [result.error_code for result in deleted.results] == [ErrorCode.NONE] * 4 + [
            ErrorCode.GROUP_ID_NOT_FOUND]
        assert given_way.count == 4, "after each group: three rows and its head"
        listed = await harness.call(list_groups.handle, 4, ListGroupsRequest(states_filter=()))
        assert listed.groups == ()
        harness.close()

    asyncio.run(scenario())


def test_a_group_named_twice_is_deleted_and_answered_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        harness = Harness(tmp_path, ManualClock())
        harness.broker.create_topic("t", 1)
        await harness.broker.durable()
        request = dataclasses.replace(commit("", -1, {("t", 0): 5}), group_id="g")
        assert (await harness.call(offset_commit.handle, 2, request)).topics[0].partitions[0].error_code == 0
        deleted = await harness.call(delete_groups.handle, 2, DeleteGroupsRequest(groups_names=("g", "g")))
        assert [(result.group_id, result.error_code) for result in deleted.results] == [("g", ErrorCode.NONE)]

    asyncio.run(scenario())
