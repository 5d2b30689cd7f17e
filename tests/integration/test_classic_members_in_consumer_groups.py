"""Classic members of a KIP-848 consumer group (Kafka 4.4's online migration), with confluent-kafka over TCP.

A consumer on ``group.protocol=classic`` joins a group whose members use ``group.protocol=consumer``: the server-side
assignor splits the partitions between both kinds, no record is read twice while members come and go, and a classic
member that leaves hands its partitions back. The differential scenarios pass on Apache Kafka 4.4 as they are.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import struct
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from kio.schema.describe_groups.v5 import request as describe_groups
from kio.schema.heartbeat.v4 import request as heartbeat_v4
from kio.schema.join_group.v9 import request as join_group
from kio.schema.leave_group.v5 import request as leave_group
from kio.schema.offset_commit.v8 import request as offset_commit_v8
from kio.schema.sync_group.v5 import request as sync_group
from logwright.compat.registry import make
from logwright.compat.wire.consumer_protocol import read_assignment, write_assignment

from .broker_process import BrokerProcess
from .consumer_protocol_wire import assigned, describe, heartbeat, ready_request, request
from .test_consumer_protocol import PARTITIONS, Work, _disjoint_cover, _member, _produce, _topic
from .test_share_groups import advance_clock, check_consistent

CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE = 0, 1


class ClassicWork(Work):
    """`Work` for a classic group's rebalances: a commit refused while the group rebalances is given up (the record
    may be read again), as a classic consumer's own loop would."""

    def commit(self, member: Consumer, message: Message) -> None:
        try:
            member.commit(message, asynchronous=False)
        except KafkaException as error:
            assert error.args[0].code() in (KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION,
                                            KafkaError.UNKNOWN_MEMBER_ID), error


def _classic(bootstrap: str, group: str, topic: str, strategy: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "classic",
                         "partition.assignment.strategy": strategy, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 10_000,
                         "heartbeat.interval.ms": 500})
    consumer.subscribe([topic])
    return consumer


@pytest.mark.parametrize("strategy", [pytest.param("cooperative-sticky", marks=pytest.mark.differential), "range"])
def test_a_classic_consumer_shares_a_consumer_groups_partitions(bootstrap: str, strategy: str) -> None:
    """(CI's differential subset runs the cooperative strategy on Kafka, the one with more steps; the full
    ``make compat-kafka`` runs both.)"""
    topic = _topic(bootstrap)
    group = f"migrate-{uuid.uuid4().hex[:8]}"
    _produce(bootstrap, topic, 0, 300)
    work = Work()
    members = {1: _member(bootstrap, group, topic)}
    try:
        work.until(members, 100, layout=PARTITIONS)
        members[2] = _classic(bootstrap, group, topic, strategy)
        _disjoint_cover(work.until(members, 300, layout=PARTITIONS // 2))
        described = describe(bootstrap, group)
        assert described.error_code == 0
        kinds = sorted(int(member.member_type) for member in described.members)
        assert kinds == [CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE]
        members[3] = _classic(bootstrap, group, topic, strategy)
        _produce(bootstrap, topic, 300, 300)
        _disjoint_cover(work.until(members, 600, layout=PARTITIONS // 3))
        members.pop(2).close()
        _produce(bootstrap, topic, 600, 300)
        _disjoint_cover(work.until(members, 900, layout=PARTITIONS // 2))
        work.read_once(900)
    finally:
        for member in members.values():
            member.close()


NONE, ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID = 0, 22, 23, 25
REBALANCE_IN_PROGRESS, GROUP_ID_NOT_FOUND, MEMBER_ID_REQUIRED = 27, 69, 79
TEN_SECONDS = datetime.timedelta(seconds=10)


def _subscription(topics: tuple[str, ...], owned: tuple[tuple[str, tuple[int, ...]], ...] = ()) -> bytes:
    """A ConsumerProtocolSubscription v1 (topics, no user data, owned partitions), as a classic consumer sends."""
    parts = [struct.pack(">hi", 1, len(topics))]
    parts += [struct.pack(">h", len(topic)) + topic.encode() for topic in topics]
    parts.append(struct.pack(">ii", -1, len(owned)))
    for topic, indexes in owned:
        parts.append(struct.pack(">h", len(topic)) + topic.encode()
                     + struct.pack(f">i{len(indexes)}i", len(indexes), *indexes))
    return b"".join(parts)


def _join(group: str, metadata: bytes, member_id: str = "", protocol_type: str = "consumer",
          names: tuple[str, ...] = ("range",), session: datetime.timedelta = TEN_SECONDS,
          rebalance: datetime.timedelta = TEN_SECONDS, instance_id: str | None = None) -> Any:
    return make(join_group.JoinGroupRequest, group_id=group, session_timeout=session,
                rebalance_timeout=rebalance, member_id=member_id, group_instance_id=instance_id,
                protocol_type=protocol_type, reason=None,
                protocols=tuple(join_group.JoinGroupRequestProtocol(name=name, metadata=metadata) for name in names))


def _sync(group: str, member_id: str, generation: int, name: str = "range", assignments: Any = ()) -> Any:
    return make(sync_group.SyncGroupRequest, group_id=group, generation_id=generation, member_id=member_id,
                group_instance_id=None, protocol_type="consumer", protocol_name=name, assignments=assignments)


def _heartbeat(group: str, member_id: str, generation: int) -> Any:
    return make(heartbeat_v4.HeartbeatRequest, group_id=group, generation_id=generation, member_id=member_id,
                group_instance_id=None)


def _partitions(assignment: bytes) -> set[tuple[str, int]]:
    partitions, _ = read_assignment(bytes(assignment))
    assert partitions is not None, assignment
    return {(topic, index) for topic, indexes in partitions for index in indexes}


@pytest.mark.differential
def test_a_classic_members_requests_to_a_consumer_group(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    group = f"migrate-wire-{uuid.uuid4().hex[:8]}"
    consumer_id = str(uuid.uuid4())
    first = heartbeat(bootstrap, group, consumer_id, 0, topics=(topic,), rebalance_timeout_ms=60_000)
    assert first.error_code == NONE, first.error_message

    required = request(bootstrap, _join(group, _subscription((topic,)), names=("range", "roundrobin")))
    assert (required.error_code, required.generation_id, required.members) == (MEMBER_ID_REQUIRED, -1, ())
    member_id = str(required.member_id)
    assert member_id
    joined = request(bootstrap, _join(group, _subscription((topic,)), member_id=member_id,
                                      names=("range", "roundrobin")))
    assert (joined.error_code, joined.member_id, joined.protocol_type, joined.protocol_name, joined.leader,
            joined.members, joined.skip_assignment) == (NONE, member_id, "consumer", "range", "", (), False)
    generation = int(joined.generation_id)
    described = {member.member_id: member for member in describe(bootstrap, group).members}
    assert int(described[member_id].member_epoch) == generation
    assert int(described[member_id].member_type) == CLASSIC_MEMBER_TYPE
    assert int(described[consumer_id].member_type) == CONSUMER_MEMBER_TYPE

    # the group epoch moves past the member's as the target assignment is computed (paced): rejoin until it stays
    deadline = time.monotonic() + 60
    consumer_epoch = int(first.member_epoch)
    while True:
        beat_consumer = heartbeat(bootstrap, group, consumer_id, consumer_epoch, owned=assigned(first))
        assert beat_consumer.error_code == NONE, beat_consumer.error_message
        consumer_epoch = int(beat_consumer.member_epoch)
        first = beat_consumer if beat_consumer.assignment is not None else first
        synced = request(bootstrap, _sync(group, member_id, generation))
        beat = request(bootstrap, _heartbeat(group, member_id, generation))
        if (synced.error_code, beat.error_code) == (NONE, NONE) or time.monotonic() > deadline:
            break
        assert REBALANCE_IN_PROGRESS in (synced.error_code, beat.error_code), (synced, beat)
        time.sleep(0.2)
        rejoined = request(bootstrap, _join(group, _subscription((topic,)), member_id=member_id,
                                            names=("range", "roundrobin")))
        assert rejoined.error_code == NONE
        generation = int(rejoined.generation_id)
    assert (synced.error_code, synced.protocol_type, synced.protocol_name) == (NONE, "consumer", "range")
    assert _partitions(synced.assignment) <= {(topic, index) for index in range(PARTITIONS)}
    answers = {
        "sync, another generation": request(bootstrap, _sync(group, member_id, generation + 7)).error_code,
        "sync, another protocol name": request(bootstrap, _sync(group, member_id, generation, "roundrobin")).error_code,
        "sync, unknown member": request(bootstrap, _sync(group, "nobody", generation)).error_code,
        "sync, the consumer member": request(bootstrap, _sync(group, consumer_id, generation)).error_code,
        "heartbeat, another generation": request(bootstrap, _heartbeat(group, member_id, generation + 7)).error_code,
        "heartbeat, unknown member": request(bootstrap, _heartbeat(group, "nobody", generation)).error_code,
        "join, another protocol type": request(bootstrap, _join(group, _subscription((topic,)), member_id=member_id,
                                                                protocol_type="connect")).error_code,
        "join, no protocol in common": request(bootstrap, _join(group, _subscription((topic,)),
                                                                names=("sticky",))).error_code,
    }
    assert answers == {
        "sync, another generation": ILLEGAL_GENERATION,
        "sync, another protocol name": INCONSISTENT_GROUP_PROTOCOL,
        "sync, unknown member": UNKNOWN_MEMBER_ID,
        "sync, the consumer member": UNKNOWN_MEMBER_ID,
        "heartbeat, another generation": ILLEGAL_GENERATION,
        "heartbeat, unknown member": UNKNOWN_MEMBER_ID,
        "join, another protocol type": INCONSISTENT_GROUP_PROTOCOL,
        "join, no protocol in common": INCONSISTENT_GROUP_PROTOCOL,
    }

    def commit(epoch: int) -> int:
        answer = request(bootstrap, make(offset_commit_v8.OffsetCommitRequest, group_id=group,
                                         generation_id_or_member_epoch=epoch, member_id=member_id,
                                         group_instance_id=None, topics=(offset_commit_v8.OffsetCommitRequestTopic(
                                             name=topic, partitions=(offset_commit_v8.OffsetCommitRequestPartition(
                                                 partition_index=0, committed_offset=0, committed_leader_epoch=-1,
                                                 committed_metadata=None),)),)))
        return int(answer.topics[0].partitions[0].error_code)

    assert (commit(generation), commit(generation + 1)) == (NONE, ILLEGAL_GENERATION)

    left = request(bootstrap, make(leave_group.LeaveGroupRequest, group_id=group, members=(
        leave_group.MemberIdentity(member_id=member_id, group_instance_id=None, reason=None),
        leave_group.MemberIdentity(member_id="nobody", group_instance_id=None, reason=None))))
    assert [(m.member_id, int(m.error_code)) for m in left.members] == [(member_id, NONE),
                                                                      ("nobody", UNKNOWN_MEMBER_ID)]
    assert request(bootstrap, _heartbeat(group, member_id, generation)).error_code == UNKNOWN_MEMBER_ID
    assert [m.member_id for m in describe(bootstrap, group).members] == [consumer_id]
    # LeaveGroup removes a consumer-protocol member too (the admin client's removal of members)
    left = request(bootstrap, make(leave_group.LeaveGroupRequest, group_id=group, members=(
        leave_group.MemberIdentity(member_id=consumer_id, group_instance_id=None, reason=None),)))
    assert [(m.member_id, int(m.error_code)) for m in left.members] == [(consumer_id, NONE)]
    assert describe(bootstrap, group).members == ()


@pytest.mark.differential
def test_a_classic_group_becomes_a_consumer_group_when_a_consumer_member_joins(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    group = f"upgrade-{uuid.uuid4().hex[:8]}"
    _produce(bootstrap, topic, 0, 300)
    work = Work()
    # range, not cooperative-sticky: librdkafka's cooperative-sticky leader writes user data into some assignments,
    # and Kafka 4.4 refuses to upgrade a group whose assignments carry user data (a custom assignor's, it assumes)
    members = {1: _classic(bootstrap, group, topic, "range"), 2: _classic(bootstrap, group, topic, "range")}
    try:
        _disjoint_cover(work.until(members, 300, layout=PARTITIONS // 2))
        assert describe(bootstrap, group).error_code == GROUP_ID_NOT_FOUND, "a classic group so far"
        members[3] = _member(bootstrap, group, topic)
        _produce(bootstrap, topic, 300, 300)
        _disjoint_cover(work.until(members, 600, layout=PARTITIONS // 3))
        described = describe(bootstrap, group)
        assert described.error_code == 0
        assert sorted(int(member.member_type) for member in described.members) == [
            CLASSIC_MEMBER_TYPE, CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE]
        members.pop(1).close()
        _produce(bootstrap, topic, 600, 300)
        _disjoint_cover(work.until(members, 900, layout=PARTITIONS // 2))
        work.read_once(900)
        # the last consumer-protocol member leaves: a classic group again (bidirectional, Kafka's default), where a
        # commit during a classic rebalance may fail and its record be read again by the next owner
        classic_work = ClassicWork()
        classic_work.readers = work.readers
        members.pop(3).close()
        _produce(bootstrap, topic, 900, 300)
        _disjoint_cover(classic_work.until(members, 1200, layout=PARTITIONS))
        assert describe(bootstrap, group).error_code == GROUP_ID_NOT_FOUND, "not a consumer group any more"
        members[4] = _classic(bootstrap, group, topic, "range")
        _produce(bootstrap, topic, 1200, 300)
        _disjoint_cover(classic_work.until(members, 1500, layout=PARTITIONS // 2))
        assert _classic_described(bootstrap, group) == ("Stable", "consumer", 2)
        assert sorted(classic_work.readers) == list(range(1500))
    finally:
        for member in members.values():
            member.close()


def _classic_described(bootstrap: str, group: str) -> tuple[str, str, int]:
    """DescribeGroups: the state, protocol type and member count of a classic group."""
    answer = request(bootstrap, make(describe_groups.DescribeGroupsRequest, groups=(group,),
                                     include_authorized_operations=False))
    [described] = answer.groups
    assert described.error_code == NONE, described
    return described.group_state, described.protocol_type, len(described.members)


def _classic_group(bootstrap: str, group: str, metadata: bytes, assignment: bytes,
                   protocol_type: str = "consumer") -> tuple[str, int]:
    """A Stable classic group of one member, formed by hand: the member id and the generation."""
    required = ready_request(bootstrap, group, _join(group, metadata, protocol_type=protocol_type))
    assert required.error_code == MEMBER_ID_REQUIRED
    joined = request(bootstrap, _join(group, metadata, member_id=required.member_id, protocol_type=protocol_type))
    assert (joined.error_code, joined.leader) == (NONE, required.member_id)
    member_id, generation = str(joined.member_id), int(joined.generation_id)
    synced = request(bootstrap, make(sync_group.SyncGroupRequest, group_id=group, generation_id=generation,
                                     member_id=member_id, group_instance_id=None, protocol_type=protocol_type,
                                     protocol_name="range", assignments=(sync_group.SyncGroupRequestAssignment(
                                         member_id=member_id, assignment=assignment),)))
    assert synced.error_code == NONE
    return member_id, generation


@pytest.mark.differential
def test_a_consumer_member_joining_a_classic_group_with_members(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    tag = uuid.uuid4().hex[:8]
    owned = write_assignment(((topic, tuple(range(PARTITIONS))),), 1)
    refusals = {}
    for case, metadata, assignment, protocol_type, epoch in (
            ("connect", b"whatever", b"", "connect", 0),
            ("not a join", _subscription((topic,)), owned, "consumer", 5),
            ("malformed subscription", b"\x00\x01\x7f", owned, "consumer", 0),
            ("malformed assignment", _subscription((topic,)), b"\x00\x01\x00", "consumer", 0),
            ("custom user data", _subscription((topic,)), owned[:-4] + b"\x00\x00\x00\x01u", "consumer", 0)):
        group = f"upgrade-refused-{case.replace(' ', '-')}-{tag}"
        _classic_group(bootstrap, group, metadata, assignment, protocol_type)
        answer = heartbeat(bootstrap, group, str(uuid.uuid4()), epoch, topics=(topic,), rebalance_timeout_ms=60_000)
        refusals[case] = (int(answer.error_code), answer.error_message)
    assert refusals == {
        "connect": (GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group upgrade-refused-connect-{tag} to consumer group "
                                        "because the group does not use the consumer embedded protocol."),
        "not a join": (GROUP_ID_NOT_FOUND, f"Group upgrade-refused-not-a-join-{tag} is not a consumer group."),
        "malformed subscription": (GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group upgrade-refused-malformed-"
                                                       f"subscription-{tag} to consumer group because the embedded "
                                                       "consumer protocol is malformed."),
        "malformed assignment": (GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group upgrade-refused-malformed-"
                                                     f"assignment-{tag} to consumer group because the embedded "
                                                     "consumer protocol is malformed."),
        "custom user data": (GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group upgrade-refused-custom-user-data-"
                                                 f"{tag} to consumer group because an unsupported custom assignor is "
                                                 "in use. Please refer to the documentation or switch to a default "
                                                 "assignor before re-attempting the upgrade."),
    }

    group = f"upgraded-{tag}"
    classic_id, generation = _classic_group(bootstrap, group, _subscription((topic,)), owned)
    consumer_id = str(uuid.uuid4())
    joined = heartbeat(bootstrap, group, consumer_id, 0, topics=(topic,), rebalance_timeout_ms=60_000)
    assert joined.error_code == NONE, joined.error_message
    described = {member.member_id: member for member in describe(bootstrap, group).members}
    assert int(described[classic_id].member_type) == CLASSIC_MEMBER_TYPE
    assert int(described[classic_id].member_epoch) == generation
    assert _partition_set(described[classic_id].assignment) == set(range(PARTITIONS)), "it keeps what it owned"
    assert request(bootstrap, _heartbeat(group, classic_id, generation)).error_code == REBALANCE_IN_PROGRESS
    rejoined = request(bootstrap, _join(group, _subscription((topic,), ((topic, tuple(range(PARTITIONS))),)),
                                        member_id=classic_id))
    assert (rejoined.error_code, rejoined.leader, rejoined.members) == (NONE, "", ())


def _partition_set(assignment: Any) -> set[int]:
    return {int(index) for part in assignment.topic_partitions for index in part.partitions}


@pytest.mark.differential
@pytest.mark.parametrize("started_with", [{"group.consumer.migration.policy": "DISABLED"}], indirect=True)
def test_no_migration_when_the_policy_is_disabled(started_with: str) -> None:
    bootstrap = started_with
    topic = _topic(bootstrap)
    tag = uuid.uuid4().hex[:8]
    classic_group = f"classic-{tag}"
    _classic_group(bootstrap, classic_group, _subscription((topic,)), b"")
    refused = heartbeat(bootstrap, classic_group, str(uuid.uuid4()), 0, topics=(topic,), rebalance_timeout_ms=60_000)
    assert (refused.error_code, refused.error_message) == (
        GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {classic_group} to consumer group because online upgrade "
                            "is disabled.")
    consumer_group = f"consumer-{tag}"
    assert heartbeat(bootstrap, consumer_group, str(uuid.uuid4()), 0, topics=(topic,),
                     rebalance_timeout_ms=60_000).error_code == NONE
    join = request(bootstrap, _join(consumer_group, _subscription((topic,))))
    assert (join.error_code, join.member_id) == (INCONSISTENT_GROUP_PROTOCOL, "")


SESSION = datetime.timedelta(seconds=30)


@pytest.mark.logwright_only(reason="moves a manual broker clock")
def test_classic_members_time_out_on_the_broker_clock(clock_broker: BrokerProcess) -> None:
    """A classic member of a consumer group lives by its own session timeout (30 s here, the group's is 45 s), must
    send SyncGroup within its rebalance timeout (10 s) after JoinGroup, and JoinGroup within it once told to
    rejoin, heartbeats or not; a restart keeps the members and starts their sessions again."""
    bootstrap = clock_broker.bootstrap
    topic = _topic(bootstrap)
    group = "classic-timeouts"
    consumer_id = str(uuid.uuid4())
    consumer = heartbeat(bootstrap, group, consumer_id, 0, topics=(topic,), rebalance_timeout_ms=60_000)
    epoch = {"consumer": int(consumer.member_epoch)}
    owned = {"consumer": assigned(consumer) or {}}

    def beat_consumer() -> None:
        """The consumer member heartbeats with what it owns, so it revokes what it is asked to at once."""
        answer = heartbeat(bootstrap, group, consumer_id, epoch["consumer"], owned=owned["consumer"])
        assert answer.error_code == NONE, answer.error_message
        epoch["consumer"] = int(answer.member_epoch)
        if answer.assignment is not None:
            owned["consumer"] = assigned(answer) or {}

    def joined(member_id: str = "") -> tuple[str, int]:
        answer = request(bootstrap, _join(group, _subscription((topic,)), member_id=member_id, session=SESSION))
        if answer.error_code == MEMBER_ID_REQUIRED:
            answer = request(bootstrap, _join(group, _subscription((topic,)), member_id=str(answer.member_id),
                                              session=SESSION))
        assert answer.error_code == NONE
        return str(answer.member_id), int(answer.generation_id)

    def settled() -> tuple[str, int]:
        member_id, generation = joined()
        for _ in range(10):
            advance_clock(bootstrap, 1_000)  # the target assignment is paced: 1 s
            beat_consumer()
            synced = request(bootstrap, _sync(group, member_id, generation))
            if synced.error_code == NONE and request(bootstrap, _heartbeat(group, member_id,
                                                                            generation)).error_code == NONE:
                return member_id, generation
            member_id, generation = joined(member_id)
        raise AssertionError("the classic member never settled")

    never_synced, generation = joined()
    advance_clock(bootstrap, 9_999)
    beat_consumer()
    assert request(bootstrap, _heartbeat(group, never_synced, generation)).error_code in (NONE, REBALANCE_IN_PROGRESS)
    advance_clock(bootstrap, 1)
    assert request(bootstrap, _heartbeat(group, never_synced, generation)).error_code == UNKNOWN_MEMBER_ID

    quiet, generation = settled()
    advance_clock(bootstrap, 29_999)
    beat_consumer()
    assert request(bootstrap, _heartbeat(group, quiet, generation)).error_code == NONE, "its session restarts"
    advance_clock(bootstrap, 29_999)
    beat_consumer()
    advance_clock(bootstrap, 1)
    assert request(bootstrap, _heartbeat(group, quiet, generation)).error_code == UNKNOWN_MEMBER_ID

    stubborn, generation = settled()
    assert clock_broker.stop() == 0
    clock_broker.start()
    assert request(bootstrap, _heartbeat(group, stubborn, generation)).error_code == NONE, "kept over a restart"
    heartbeat(bootstrap, group, str(uuid.uuid4()), 0, topics=(topic,), rebalance_timeout_ms=60_000)
    beat_consumer()
    assert request(bootstrap, _heartbeat(group, stubborn, generation)).error_code == REBALANCE_IN_PROGRESS
    advance_clock(bootstrap, 5_000)
    beat_consumer()
    assert request(bootstrap, _heartbeat(group, stubborn, generation)).error_code == REBALANCE_IN_PROGRESS
    advance_clock(bootstrap, 5_000)
    assert request(bootstrap, _heartbeat(group, stubborn, generation)).error_code == UNKNOWN_MEMBER_ID
    check_consistent(clock_broker)


def _mixed_group(bootstrap: str, group: str, topic: str, instance_id: str | None = None) -> tuple[str, int, str, int]:
    """A consumer group of one consumer-protocol member (static when ``instance_id`` is given) and one classic member,
    both settled: their ids and epochs."""
    consumer_id = str(uuid.uuid4())
    answer = heartbeat(bootstrap, group, consumer_id, 0, topics=(topic,), rebalance_timeout_ms=60_000,
                       instance_id=instance_id)
    assert answer.error_code == NONE, answer.error_message
    consumer_epoch, owned = int(answer.member_epoch), assigned(answer) or {}
    required = ready_request(bootstrap, group, _join(group, _subscription((topic,))))
    member_id, generation = str(required.member_id), -1
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        joined = request(bootstrap, _join(group, _subscription((topic,)), member_id=member_id))
        assert joined.error_code == NONE
        generation = int(joined.generation_id)
        answer = heartbeat(bootstrap, group, consumer_id, consumer_epoch, owned=owned, instance_id=instance_id)
        assert answer.error_code == NONE, answer.error_message
        consumer_epoch = int(answer.member_epoch)
        owned = assigned(answer) if answer.assignment is not None else owned
        synced = request(bootstrap, _sync(group, member_id, generation))
        described = describe(bootstrap, group)
        if synced.error_code == NONE and described.group_state == "Stable":
            return consumer_id, consumer_epoch, member_id, generation
        time.sleep(0.3)
    raise AssertionError("the group never settled")


@pytest.mark.differential
def test_a_consumer_group_of_classic_members_becomes_a_classic_group(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    group = f"downgrade-{uuid.uuid4().hex[:8]}"
    consumer_id, consumer_epoch, member_id, generation = _mixed_group(bootstrap, group, topic)
    group_epoch = int(describe(bootstrap, group).group_epoch)
    left = heartbeat(bootstrap, group, consumer_id, -1)
    assert (left.error_code, left.member_epoch) == (NONE, -1)
    assert describe(bootstrap, group).error_code == GROUP_ID_NOT_FOUND
    assert _classic_described(bootstrap, group) == ("PreparingRebalance", "consumer", 1)
    assert request(bootstrap, _heartbeat(group, member_id, group_epoch)).error_code == REBALANCE_IN_PROGRESS
    rejoined = request(bootstrap, _join(group, _subscription((topic,)), member_id=member_id))
    assert (rejoined.error_code, rejoined.generation_id, rejoined.leader, rejoined.protocol_name) == (
        NONE, group_epoch + 1, member_id, "range")
    assert [member.member_id for member in rejoined.members] == [member_id]
    synced = request(bootstrap, make(sync_group.SyncGroupRequest, group_id=group, generation_id=group_epoch + 1,
                                     member_id=member_id, group_instance_id=None, protocol_type="consumer",
                                     protocol_name="range", assignments=(sync_group.SyncGroupRequestAssignment(
                                         member_id=member_id, assignment=write_assignment((), 0)),)))
    assert synced.error_code == NONE
    assert _classic_described(bootstrap, group) == ("Stable", "consumer", 1)


@pytest.mark.differential
def test_a_classic_static_member_replacing_the_last_consumer_member_makes_a_classic_group(bootstrap: str) -> None:
    """Kafka 4.4 downgrades in the JoinGroup itself: the group is a classic group, Stable at the group epoch, and the
    newcomer holds what the member it replaces was assigned, with no rebalance."""
    topic = _topic(bootstrap)
    group = f"downgrade-static-{uuid.uuid4().hex[:8]}"
    instance = f"static-{uuid.uuid4().hex[:8]}"
    consumer_id, _, member_id, generation = _mixed_group(bootstrap, group, topic, instance_id=instance)
    before = describe(bootstrap, group)
    group_epoch = int(before.group_epoch)
    held = {(topic, index) for member in before.members if member.member_id == consumer_id
            for entry in member.assignment.topic_partitions for index in entry.partitions}
    replacing = request(bootstrap, _join(group, _subscription((topic,)), instance_id=instance))
    seen = {"join": _replacing_join(replacing, consumer_id),
            "consumer described": describe(bootstrap, group).error_code,
            "classic described": _classic_described(bootstrap, group)}
    synced = request(bootstrap, _static_sync(group, replacing, instance))
    seen["sync"] = synced.error_code, _partitions(synced.assignment) == held
    seen["other member's heartbeat"] = request(bootstrap, _heartbeat(group, member_id, generation)).error_code
    seen["old member's heartbeat"] = heartbeat(bootstrap, group, consumer_id, 1).error_code
    assert seen == {"join": (NONE, group_epoch, "consumer", "range", "", 0, True),
                    "consumer described": GROUP_ID_NOT_FOUND,
                    "classic described": ("Stable", "consumer", 2),
                    "sync": (NONE, True),
                    "other member's heartbeat": NONE,
                    "old member's heartbeat": GROUP_ID_NOT_FOUND}


@pytest.mark.differential
def test_a_static_replacement_with_a_new_subscription_downgrades_into_a_rebalance(bootstrap: str) -> None:
    """The newcomer subscribes to more: the group epoch moves past the target's, so Kafka answers it unreconciled
    (generation 0) and the classic group it makes starts a rebalance at once (its assignment is stale)."""
    topic, more = _topic(bootstrap), _topic(bootstrap)
    group = f"downgrade-stale-{uuid.uuid4().hex[:8]}"
    instance = f"static-{uuid.uuid4().hex[:8]}"
    consumer_id, _, member_id, generation = _mixed_group(bootstrap, group, topic, instance_id=instance)
    replacing = request(bootstrap, _join(group, _subscription((topic, more)), instance_id=instance))
    seen = {"join": _replacing_join(replacing, consumer_id),
            "classic described": _classic_described(bootstrap, group),
            "sync": request(bootstrap, _static_sync(group, replacing, instance)).error_code,
            "other member's heartbeat": request(bootstrap, _heartbeat(group, member_id, generation)).error_code}
    assert seen == {"join": (NONE, 0, "consumer", "range", "", 0, True),
                    "classic described": ("PreparingRebalance", "consumer", 2),
                    "sync": ILLEGAL_GENERATION,
                    "other member's heartbeat": REBALANCE_IN_PROGRESS}


def _replacing_join(answer: Any, replaced_id: str) -> tuple[Any, ...]:
    return (answer.error_code, int(answer.generation_id), answer.protocol_type, answer.protocol_name, answer.leader,
            len(answer.members), answer.member_id not in ("", replaced_id))


def _static_sync(group: str, joined: Any, instance: str) -> Any:
    return make(sync_group.SyncGroupRequest, group_id=group, generation_id=joined.generation_id,
                member_id=joined.member_id, group_instance_id=instance, protocol_type="consumer",
                protocol_name="range", assignments=())


@pytest.mark.differential
@pytest.mark.parametrize("started_with", [{"group.consumer.migration.policy": "upgrade"}], indirect=True)
def test_a_consumer_group_of_classic_members_stays_without_downgrades(started_with: str) -> None:
    bootstrap = started_with
    topic = _topic(bootstrap)
    group = f"no-downgrade-{uuid.uuid4().hex[:8]}"
    consumer_id, _, member_id, generation = _mixed_group(bootstrap, group, topic)
    assert heartbeat(bootstrap, group, consumer_id, -1).error_code == NONE
    described = describe(bootstrap, group)
    assert (described.error_code, [m.member_id for m in described.members]) == (NONE, [member_id])
    assert int(described.group_epoch) == int(described.assignment_epoch) + 1, "a leave bumps, and does not assign"
    beat = request(bootstrap, _heartbeat(group, member_id, generation))
    assert beat.error_code == NONE, "its epoch is the target's: nothing to rejoin for"


@pytest.mark.logwright_only(reason="Kafka 4.4 fails this heartbeat (UNKNOWN_SERVER_ERROR): its first generation has "
                                   "no protocol name to read the subscriptions with")
@pytest.mark.parametrize("started_with", [{"group.initial.rebalance.delay.ms": "60000"}], indirect=True)
def test_a_classic_group_in_its_first_rebalance_upgrades_and_its_joiner_is_told_to_rejoin(started_with: str) -> None:
    """The classic member's JoinGroup waits out the initial rebalance delay; a consumer-protocol member's join
    meanwhile upgrades the group with the protocol the members would elect, and the waiting JoinGroup is answered
    REBALANCE_IN_PROGRESS, so the member rejoins the consumer group."""
    bootstrap = started_with
    topic = _topic(bootstrap)
    group = f"upgrade-first-{uuid.uuid4().hex[:8]}"
    required = request(bootstrap, _join(group, _subscription((topic,))))
    assert required.error_code == MEMBER_ID_REQUIRED
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(request, bootstrap, _join(group, _subscription((topic,)), member_id=required.member_id))
        time.sleep(1)
        assert not waiting.done(), "held by the initial rebalance delay"
        joined = heartbeat(bootstrap, group, str(uuid.uuid4()), 0, topics=(topic,), rebalance_timeout_ms=60_000)
        assert joined.error_code == NONE, joined.error_message
        assert waiting.result(timeout=30).error_code == REBALANCE_IN_PROGRESS
    rejoined = request(bootstrap, _join(group, _subscription((topic,)), member_id=required.member_id))
    assert (rejoined.error_code, rejoined.member_id, rejoined.leader) == (NONE, required.member_id, "")
    described = {member.member_id: int(member.member_type) for member in describe(bootstrap, group).members}
    assert sorted(described.values()) == [CLASSIC_MEMBER_TYPE, CONSUMER_MEMBER_TYPE]
