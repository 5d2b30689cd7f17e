"""ACLs enforced on consumer groups (FindCoordinator, JoinGroup, OffsetCommit, OffsetFetch, DescribeGroups,
ListGroups, DeleteGroups) and on a real consumer, as Kafka 4.4's StandardAuthorizer enforces them: differential.

As in test_authorization_topics: ``alice`` and ``bob`` (PLAIN, SASL listener) have what a test grants; the
PLAINTEXT listener's ``User:ANONYMOUS`` is the super user.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kio.schema.consumer_group_describe.v1 import request as consumer_group_describe_v1
from kio.schema.consumer_group_heartbeat.v1 import request as consumer_group_heartbeat_v1
from kio.schema.delete_groups.v2 import request as delete_groups_v2
from kio.schema.describe_groups.v5 import request as describe_groups_v5
from kio.schema.find_coordinator.v3 import request as find_coordinator_v3
from kio.schema.find_coordinator.v4 import request as find_coordinator_v4
from kio.schema.join_group.v9 import request as join_group_v9
from kio.schema.list_groups.v4 import request as list_groups_v4
from kio.schema.offset_commit.v8 import request as offset_commit_v8
from kio.schema.offset_fetch.v7 import request as offset_fetch_v7
from kio.schema.offset_fetch.v8 import request as offset_fetch_v8
from kio.schema.sync_group.v5 import request as sync_group_v5
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .authorization_clients import (
    GROUP_AUTHORIZATION_FAILED,
    NONE,
    TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_OPERATIONS,
    AclOperation,
    ResourcePatternType,
    ResourceType,
    asked,
    binding,
    bits,
    create_topic,
    grant,
    metadata,
    one,
    unique,
)
from .sasl_listeners import PLAIN_USERS, Listeners

pytestmark = pytest.mark.differential

INCONSISTENT_GROUP_PROTOCOL = 23


def find_coordinator(group: str) -> Any:
    return make(find_coordinator_v3.FindCoordinatorRequest, key=group, key_type=0)


def find_coordinators(*groups: str) -> Any:
    return make(find_coordinator_v4.FindCoordinatorRequest, key_type=0, coordinator_keys=groups)


def join(group: str) -> Any:
    return make(join_group_v9.JoinGroupRequest, group_id=group, session_timeout=datetime.timedelta(seconds=10),
                rebalance_timeout=datetime.timedelta(seconds=10), member_id="", group_instance_id=None,
                protocol_type="consumer", protocols=(make(join_group_v9.JoinGroupRequestProtocol, name="range",
                                                          metadata=b""),), reason=None)


def commit(group: str, *topics: str) -> Any:
    return make(offset_commit_v8.OffsetCommitRequest, group_id=group, generation_id_or_member_epoch=-1,
                member_id="", group_instance_id=None, topics=tuple(
                    make(offset_commit_v8.OffsetCommitRequestTopic, name=topic, partitions=(make(
                        offset_commit_v8.OffsetCommitRequestPartition, partition_index=0, committed_offset=7,
                        committed_leader_epoch=-1, committed_metadata=""),)) for topic in topics))


def committed(answer: Any) -> list[tuple[str, int]]:
    return [(topic.name, int(partition.error_code)) for topic in answer.topics for partition in topic.partitions]


def fetch_offsets(group: str, *topics: str) -> Any:
    return make(offset_fetch_v7.OffsetFetchRequest, group_id=group, require_stable=False, topics=tuple(
        make(offset_fetch_v7.OffsetFetchRequestTopic, name=topic, partition_indexes=(0,)) for topic in topics))


def fetch_group_offsets(group: str, *topics: str | None) -> Any:
    """v8: one group; ``None`` for every partition it has."""
    return make(offset_fetch_v8.OffsetFetchRequest, require_stable=False, groups=(make(
        offset_fetch_v8.OffsetFetchRequestGroup, group_id=group, topics=None if topics == (None,) else tuple(
            make(offset_fetch_v8.OffsetFetchRequestTopics, name=topic, partition_indexes=(0,))
            for topic in topics)),))


def offsets(topics: Any) -> list[tuple[str, int, int]]:
    return [(topic.name, int(partition.error_code), int(partition.committed_offset)) for topic in topics
            for partition in topic.partitions]


def describe_groups(*groups: str) -> Any:
    return make(describe_groups_v5.DescribeGroupsRequest, groups=groups, include_authorized_operations=True)


def described(answer: Any) -> list[tuple[str, int, str, int]]:
    return [(group.group_id, int(group.error_code), group.group_state, int(group.authorized_operations))
            for group in answer.groups]


LIST_GROUPS = make(list_groups_v4.ListGroupsRequest, states_filter=())


def listed(answer: Any) -> list[str]:
    return [group.group_id for group in answer.groups]


def delete_groups(*groups: str) -> Any:
    return make(delete_groups_v2.DeleteGroupsRequest, groups_names=groups)


def test_a_user_without_group_acls_is_refused(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    group, topic = unique("authz-group"), unique("authz-group-topic")
    create_topic(plain, topic)
    grant(plain, binding(ResourceType.TOPIC, topic, "User:alice", AclOperation.READ))
    assert committed(_as_super(plain, commit(group, topic))) == [(topic, NONE)]
    answers = asked(sasl, "alice", [find_coordinator(group), find_coordinators(group), join(group),
                                    commit(group, topic), fetch_offsets(group, topic),
                                    fetch_group_offsets(group, topic), describe_groups(group), LIST_GROUPS,
                                    delete_groups(group)])
    found, batch = answers[0], answers[1]
    assert (int(found.error_code), found.error_message, int(found.node_id), found.host, int(found.port)) == (
        GROUP_AUTHORIZATION_FAILED, "Group authorization failed.", -1, "", -1)
    assert [(c.key, int(c.error_code), c.error_message, int(c.node_id)) for c in batch.coordinators] == [
        (group, GROUP_AUTHORIZATION_FAILED, "", -1)]  # Kafka 4.4 words only the single-key answer
    assert int(answers[2].error_code) == GROUP_AUTHORIZATION_FAILED
    assert committed(answers[3]) == [(topic, GROUP_AUTHORIZATION_FAILED)]
    assert (int(answers[4].error_code), offsets(answers[4].topics)) == (GROUP_AUTHORIZATION_FAILED, [])
    assert [(g.group_id, int(g.error_code), offsets(g.topics)) for g in answers[5].groups] == [
        (group, GROUP_AUTHORIZATION_FAILED, [])]
    assert described(answers[6]) == [(group, GROUP_AUTHORIZATION_FAILED, "", UNKNOWN_OPERATIONS)]
    assert group not in listed(answers[7])
    assert [(r.group_id, int(r.error_code)) for r in answers[8].results] == [(group, GROUP_AUTHORIZATION_FAILED)]


def _as_super(bootstrap: str, request: Any) -> Any:
    """The super user's commit, asked again while Kafka's coordinator loads (NOT_COORDINATOR, COORDINATOR_LOAD_IN_
    PROGRESS, COORDINATOR_NOT_AVAILABLE: its offsets topic is made on the first FindCoordinator)."""
    one_request(bootstrap, find_coordinator(request.group_id))
    deadline = time.monotonic() + 30
    while True:
        answer = one_request(bootstrap, request)
        codes = {code for _, code in committed(answer)}
        if not codes & {14, 15, 16} or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def test_sync_group_without_its_protocol_is_inconsistent_before_authorization(authorizing_listeners: Listeners) -> None:
    """SyncGroup v5 with a null protocol type or name is INCONSISTENT_GROUP_PROTOCOL even from a user who may not
    READ the group; named, the same user is refused GROUP_AUTHORIZATION_FAILED."""
    group = unique("authz-sync")

    def sync(protocol_type: str | None, protocol_name: str | None) -> Any:
        return make(sync_group_v5.SyncGroupRequest, group_id=group, generation_id=1, member_id="m",
                    group_instance_id=None, protocol_type=protocol_type, protocol_name=protocol_name,
                    assignments=())

    answers = asked(authorizing_listeners.sasl, "alice", [
        sync(None, "range"), sync("consumer", None), sync("consumer", "range")])
    assert [(int(answer.error_code), answer.protocol_type, answer.protocol_name, answer.assignment)
            for answer in answers] == [(INCONSISTENT_GROUP_PROTOCOL, None, None, b""),
                                       (INCONSISTENT_GROUP_PROTOCOL, None, None, b""),
                                       (GROUP_AUTHORIZATION_FAILED, None, None, b"")]


def test_read_on_the_group_and_its_topics(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    group, readable, hidden = unique("authz-reader"), unique("authz-readable"), unique("authz-hidden")
    for topic in (readable, hidden):
        create_topic(plain, topic)
    assert committed(_as_super(plain, commit(group, readable, hidden))) == [(readable, NONE), (hidden, NONE)]
    grant(plain, binding(ResourceType.GROUP, group, "User:alice", AclOperation.READ),
          binding(ResourceType.TOPIC, readable, "User:alice", AclOperation.READ))
    answers = asked(sasl, "alice", [find_coordinator(group), commit(group, hidden, readable),
                                    fetch_offsets(group, hidden, readable), fetch_group_offsets(group, None),
                                    describe_groups(group), LIST_GROUPS, delete_groups(group)])
    assert int(answers[0].error_code) == NONE
    assert committed(answers[1]) == [(hidden, TOPIC_AUTHORIZATION_FAILED), (readable, NONE)]
    # the topics it may not DESCRIBE come after the others; asked for every partition, they are left out
    assert offsets(answers[2].topics) == [(readable, NONE, 7), (hidden, TOPIC_AUTHORIZATION_FAILED, -1)]
    assert [(g.group_id, int(g.error_code), offsets(g.topics)) for g in answers[3].groups] == [
        (group, NONE, [(readable, NONE, 7)])]
    assert described(answers[4]) == [(group, NONE, "Empty", bits(AclOperation.READ, AclOperation.DESCRIBE))]
    assert group in listed(answers[5])
    assert [(r.group_id, int(r.error_code)) for r in answers[6].results] == [(group, GROUP_AUTHORIZATION_FAILED)]
    grant(plain, binding(ResourceType.GROUP, group, "User:alice", AclOperation.DELETE))
    assert [(r.group_id, int(r.error_code)) for r in one(sasl, "alice", delete_groups(group)).results] == [
        (group, NONE)]


def test_a_consumer_group_member_reads_with_read_on_group_and_topic(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-consume")
    topic, group = f"{prefix}-topic", f"{prefix}-group"
    create_topic(plain, topic)
    producer = Producer({"bootstrap.servers": plain})
    for index in range(5):
        producer.produce(topic, f"record-{index}".encode())
    assert producer.flush(30) == 0
    login = {"bootstrap.servers": sasl, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
             "sasl.username": "bob", "sasl.password": PLAIN_USERS["bob"], "group.id": group,
             "auto.offset.reset": "earliest", "enable.auto.commit": False}
    refused = Consumer(login)
    try:
        refused.subscribe([topic])
        message = refused.poll(10)
        assert message is not None and message.error() is not None
        assert message.error().code() in (29, 30)  # the topic's or the group's refusal, whichever comes first
    finally:
        refused.close()
    grant(plain, binding(ResourceType.GROUP, prefix, "User:bob", AclOperation.READ,
                         pattern=ResourcePatternType.PREFIXED),
          binding(ResourceType.TOPIC, prefix, "User:bob", AclOperation.READ, pattern=ResourcePatternType.PREFIXED))
    consumer = Consumer(login)
    try:
        consumer.subscribe([topic])
        values = []
        while len(values) < 5:
            message = consumer.poll(15)
            assert message is not None, values
            assert message.error() is None, message.error()
            values.append(message.value())
        consumer.commit(asynchronous=False)
        assert [p.offset for p in consumer.committed([TopicPartition(topic, 0)], timeout=15)] == [5]
    finally:
        consumer.close()
    assert values == [f"record-{index}".encode() for index in range(5)]


def test_consumer_group_describe_hides_a_group_assigned_topics_the_user_may_not_describe(
        authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-cg")
    group, topic = f"{prefix}-group", f"{prefix}-topic"
    create_topic(plain, topic)
    joined = _joined(plain, group, topic)  # the super user's member, assigned the topic
    assert int(joined.error_code) == NONE, joined
    describe = make(consumer_group_describe_v1.ConsumerGroupDescribeRequest, group_ids=(group,),
                    include_authorized_operations=True)
    refused = one(sasl, "alice", describe).groups
    assert [(g.group_id, int(g.error_code), len(g.members)) for g in refused] == [
        (group, GROUP_AUTHORIZATION_FAILED, 0)]
    grant(plain, binding(ResourceType.GROUP, group, "User:alice", AclOperation.DESCRIBE))
    hidden = one(sasl, "alice", describe).groups
    assert [(g.group_id, int(g.error_code), g.error_message, len(g.members), int(g.authorized_operations))
            for g in hidden] == [(group, TOPIC_AUTHORIZATION_FAILED, "The group has described topic(s) that the "
                                  "client is not authorized to describe.", 0, UNKNOWN_OPERATIONS)]
    grant(plain, binding(ResourceType.TOPIC, topic, "User:alice", AclOperation.DESCRIBE))
    shown = one(sasl, "alice", describe).groups
    assert [(g.group_id, int(g.error_code), len(g.members), int(g.authorized_operations)) for g in shown] == [
        (group, NONE, 1, bits(AclOperation.DESCRIBE))]


def _joined(bootstrap: str, group: str, topic: str) -> Any:
    """A KIP-848 member of ``group`` subscribed to ``topic``, heartbeating until it is assigned it (Kafka's
    coordinator assigns on a later heartbeat, and answers NOT_COORDINATOR while its offsets topic is made)."""
    one_request(bootstrap, find_coordinator(group))
    member_id, epoch = f"{group}-member", 0
    deadline = time.monotonic() + 30
    while True:
        answer = one_request(bootstrap, make(
            consumer_group_heartbeat_v1.ConsumerGroupHeartbeatRequest, group_id=group, member_id=member_id,
            member_epoch=epoch, instance_id=None, rack_id=None, rebalance_timeout=datetime.timedelta(seconds=30),
            subscribed_topic_names=(topic,) if epoch == 0 else None, subscribed_topic_regex=None,
            server_assignor=None, topic_partitions=() if epoch == 0 else None))
        if int(answer.error_code) == NONE:
            epoch = int(answer.member_epoch)
            if answer.assignment is not None and answer.assignment.topic_partitions:
                return answer
        if time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def _regex_member(bootstrap: str, user: str | None, group: str, regex: str) -> Any:
    """The assignment of a KIP-848 member of ``group`` subscribed by ``regex``, heartbeating as ``user`` (``None``:
    the PLAINTEXT listener's super user) until it is assigned something, then three heartbeats more so a resolution
    Kafka is still working on has landed (its coordinator resolves a group's regexes off the heartbeat); the last
    answer if nothing is assigned within 30 s."""
    if user is None:
        one_request(bootstrap, find_coordinator(group))
    member_id, epoch, settled, assigned = f"{group}-member", 0, 0, None
    deadline = time.monotonic() + 30
    while True:
        request = make(
            consumer_group_heartbeat_v1.ConsumerGroupHeartbeatRequest, group_id=group, member_id=member_id,
            member_epoch=epoch, instance_id=None, rack_id=None, rebalance_timeout=datetime.timedelta(seconds=30),
            subscribed_topic_names=None, subscribed_topic_regex=regex if epoch == 0 else None,
            server_assignor=None, topic_partitions=() if epoch == 0 else None)
        answer = one_request(bootstrap, request) if user is None else one(bootstrap, user, request)
        if int(answer.error_code) == NONE:
            epoch = int(answer.member_epoch)
            if answer.assignment is not None:  # null: unchanged since the last answer
                assigned = answer.assignment
            if assigned is not None and assigned.topic_partitions:
                settled += 1
                if settled > 3:
                    return assigned
        if time.monotonic() > deadline:
            return answer
        time.sleep(0.3)


def _readable_and_hidden(plain: str, name: str) -> tuple[str, str, str, str, dict[Any, str]]:
    """A prefix, its group and two topics, ``alice`` may READ the group and the first topic only; the topics' names
    by topic id."""
    prefix = unique(name)
    group, readable, hidden = f"{prefix}-group", f"{prefix}-readable", f"{prefix}-hidden"
    for topic in (readable, hidden):
        create_topic(plain, topic)
    grant(plain, binding(ResourceType.GROUP, group, "User:alice", AclOperation.READ),
          binding(ResourceType.TOPIC, readable, "User:alice", AclOperation.READ))
    one_request(plain, find_coordinator(group))
    names = {topic.topic_id: topic.name for topic in one_request(plain, metadata(readable, hidden)).topics}
    return prefix, group, readable, hidden, names


def test_a_regex_subscription_is_assigned_only_topics_its_principal_may_describe(
        authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix, group, readable, hidden, names = _readable_and_hidden(plain, "authz-regex")
    assigned = _regex_member(sasl, "alice", group, f"{prefix}-.*")
    assert sorted(names[entry.topic_id] for entry in assigned.topic_partitions) == [readable]
    # the super user's group with the same regex is assigned both
    everything = _regex_member(plain, None, f"{prefix}-all", f"{prefix}-.*")
    assert sorted(names[entry.topic_id] for entry in everything.topic_partitions) == sorted(
        [readable, hidden])


@pytest.mark.logwright_only(reason="logwright resolves a group's regexes again when an ACL changes; Kafka waits for "
                                   "a new topic")
def test_a_regex_subscription_follows_the_acls(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix, group, readable, hidden, names = _readable_and_hidden(plain, "authz-regex-acl")
    regex = f"{prefix}-.*"
    assert sorted(names[entry.topic_id] for entry in _regex_member(
        sasl, "alice", group, regex).topic_partitions) == [readable]
    grant(plain, binding(ResourceType.TOPIC, hidden, "User:alice", AclOperation.DESCRIBE))
    later = _regex_member(sasl, "alice", group, regex)  # the same member id rejoins with epoch 0
    assert sorted(names[entry.topic_id] for entry in later.topic_partitions) == sorted([readable, hidden])
