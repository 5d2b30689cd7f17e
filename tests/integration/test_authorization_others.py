"""ACLs enforced on transactions, share groups and delegation tokens, as Kafka 4.4's StandardAuthorizer enforces
them: differential.

As in test_authorization_topics: ``alice`` and ``bob`` (PLAIN, SASL listener) have what a test grants; the
PLAINTEXT listener's ``User:ANONYMOUS`` is the super user.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from kio.schema.add_partitions_to_txn.v3 import request as add_partitions_v3
from kio.schema.describe_producers.v0 import request as describe_producers_v0
from kio.schema.describe_transactions.v0 import request as describe_transactions_v0
from kio.schema.end_txn.v3 import request as end_txn_v3
from kio.schema.list_transactions.v1 import request as list_transactions_v1
from kio.schema.metadata.v12 import request as metadata_v12
from kio.schema.offset_commit.v10 import request as commit_v10
from kio.schema.offset_fetch.v10 import request as fetch_offsets_v10
from kio.schema.produce.v13 import request as produce_v13
from kio.schema.share_group_heartbeat.v1 import request as share_heartbeat_v1
from kio.schema.write_txn_markers.v1 import request as markers_v1
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.testing.clients import one_request

from .authorization_clients import (
    GROUP_AUTHORIZATION_FAILED,
    NONE,
    TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    AclOperation,
    ResourcePatternType,
    ResourceType,
    asked,
    binding,
    create_topic,
    grant,
    grant_ids,
    one,
    revoke,
    unique,
)
from .coordinator_ready import coordinator_ready
from .sasl_listeners import PLAIN_USERS, Listeners, plain_login
from .test_delegation_tokens import ask, create, describe

pytestmark = pytest.mark.differential

DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
INVALID_TOPIC_EXCEPTION = 17
UNKNOWN_TOPIC_ID = 100
CLUSTER_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION = 31, 3


def sasl_conf(bootstrap: str, user: str) -> dict[str, Any]:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": PLAIN_USERS[user]}


def test_a_transactional_producer_needs_write_on_its_id_and_topics(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-txn")
    topic, transactional_id = f"{prefix}-topic", f"{prefix}-id"
    create_topic(plain, topic)
    answers = asked(sasl, "alice", [
        make(add_partitions_v3.AddPartitionsToTxnRequest, v3_and_below_transactional_id=transactional_id,
             v3_and_below_producer_id=1, v3_and_below_producer_epoch=0, v3_and_below_topics=(
                 make(add_partitions_v3.AddPartitionsToTxnTopic, name=topic, partitions=(0,)),)),
        make(end_txn_v3.EndTxnRequest, transactional_id=transactional_id, producer_id=1, producer_epoch=0,
             committed=True),
        make(describe_transactions_v0.DescribeTransactionsRequest, transactional_ids=(transactional_id,))])
    assert [int(p.partition_error_code) for t in answers[0].results_by_topic_v3_and_below
            for p in t.results_by_partition] == [TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    assert int(answers[1].error_code) == TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert [(s.transactional_id, int(s.error_code)) for s in answers[2].transaction_states] == [
        (transactional_id, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)]
    grant(plain, binding(ResourceType.TRANSACTIONAL_ID, transactional_id, "User:bob", AclOperation.WRITE),
          binding(ResourceType.TOPIC, topic, "User:bob", AclOperation.WRITE))
    producer = Producer({**sasl_conf(sasl, "bob"), "transactional.id": transactional_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"in a transaction")
    producer.commit_transaction(30)
    consumer = Consumer({"bootstrap.servers": plain, "group.id": unique("authz-txn-reader"),
                         "auto.offset.reset": "earliest", "isolation.level": "read_committed"})
    try:
        consumer.subscribe([topic])
        message = consumer.poll(20)
        while message is not None and message.error() is not None:
            message = consumer.poll(20)
        assert message is not None and message.value() == b"in a transaction"
    finally:
        consumer.close()
    # bob may describe and list his transaction (WRITE implies DESCRIBE), alice may not see it
    listing = make(list_transactions_v1.ListTransactionsRequest, state_filters=(), producer_id_filters=(),
                   duration_filter=-1)
    assert transactional_id in [s.transactional_id for s in _listed(sasl, "bob", listing, transactional_id)]
    assert transactional_id not in [s.transactional_id for s in one(sasl, "alice", listing).transaction_states]
    described = one(sasl, "bob", make(describe_transactions_v0.DescribeTransactionsRequest,
                                      transactional_ids=(transactional_id,)))
    assert [(s.transactional_id, int(s.error_code), s.transaction_state) for s in described.transaction_states] == [
        (transactional_id, NONE, "CompleteCommit")]
    # a finished transaction keeps its last start (its time, not -1)
    assert described.transaction_states[0].transaction_start_time.year >= 2024


def test_describe_producers_checks_topic_names_before_authorization(authorizing_listeners: Listeners) -> None:
    """A name no topic may have is INVALID_TOPIC_EXCEPTION, with Kafka's words, even for a user who may READ
    nothing; a valid name, existing or not, is TOPIC_AUTHORIZATION_FAILED for that user."""
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    topic = unique("authz-producers")
    create_topic(plain, topic)
    names = (topic, "authz-nowhere", "bad name!", "", "..", "a" * 250)
    answer = one(sasl, "alice", make(describe_producers_v0.DescribeProducersRequest, topics=tuple(
        make(describe_producers_v0.TopicRequest, name=name, partition_indexes=(0,)) for name in names)))
    described = [(entry.name, int(partition.error_code), partition.error_message)
                 for entry in answer.topics for partition in entry.partitions]
    invalid = "Topic name is invalid: "
    assert described == [
        (topic, TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        ("authz-nowhere", TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."),
        ("bad name!", INVALID_TOPIC_EXCEPTION,
         invalid + "'bad name!' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"),
        ("", INVALID_TOPIC_EXCEPTION, invalid + "the empty string is not allowed"),
        ("..", INVALID_TOPIC_EXCEPTION, invalid + "'..' is not allowed"),
        ("a" * 250, INVALID_TOPIC_EXCEPTION,
         invalid + f"the length of '{'a' * 250}' is longer than the max allowed length 249")]


def _listed(bootstrap: str, user: str, request: Any, transactional_id: str) -> Any:
    """The listing, asked again until it has the id (Kafka's coordinator lists it once its state is loaded)."""
    deadline = time.monotonic() + 10
    while True:
        states = one(bootstrap, user, request).transaction_states
        if transactional_id in [s.transactional_id for s in states] or time.monotonic() > deadline:
            return states
        time.sleep(0.1)


def test_share_group_heartbeats_need_read_on_the_group_and_describe_on_topics(
        authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-share")
    group, topic = f"{prefix}-group", f"{prefix}-topic"
    create_topic(plain, topic)

    def heartbeat() -> Any:
        return make(share_heartbeat_v1.ShareGroupHeartbeatRequest, group_id=group, member_id="member-authz-1",
                    member_epoch=0, rack_id=None, subscribed_topic_names=(topic,))

    first = one(sasl, "alice", heartbeat())
    assert int(first.error_code) == GROUP_AUTHORIZATION_FAILED
    grant(plain, binding(ResourceType.GROUP, group, "User:alice", AclOperation.READ))
    second = one(sasl, "alice", heartbeat())
    assert (int(second.error_code), second.member_id, int(second.member_epoch)) == (
        TOPIC_AUTHORIZATION_FAILED, None, 0)
    grant(plain, binding(ResourceType.TOPIC, prefix, "User:alice", AclOperation.READ,
                         pattern=ResourcePatternType.PREFIXED))
    third = one(sasl, "alice", heartbeat())
    assert int(third.error_code) == NONE and int(third.member_epoch) >= 1


def test_a_token_for_another_owner_needs_create_tokens_on_that_user(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext

    async def run() -> list[Any]:
        alice = await plain_login(sasl, "alice")
        bob = await plain_login(sasl, "bob")
        try:
            refused = await ask(alice, create(("User", "bob")))
            own = await ask(alice, create())
            return [refused, own, alice, bob]
        except Exception:
            await alice.close()
            await bob.close()
            raise

    async def finish(alice: Any, bob: Any) -> list[Any]:
        try:
            for_bob = await ask(alice, create(("User", "bob")))
            seen_by_bob = await _described(bob, for_bob["token_id"])
            seen_by_alice = await _described(alice, for_bob["token_id"])
            return [for_bob, seen_by_bob, seen_by_alice]
        finally:
            await alice.close()
            await bob.close()

    refused, own, alice, bob = _sync(run())
    assert (refused["error"], refused["owner"], refused["issue"], refused["max"]) == (
        DELEGATION_TOKEN_AUTHORIZATION_FAILED, ("User", "bob"), -1, -1)
    assert (own["error"], own["owner"]) == (NONE, ("User", "alice"))
    grant_ids(plain, 7, "User:bob", "User:alice", 13)  # USER User:bob, CREATE_TOKENS
    for_bob, seen_by_bob, seen_by_alice = _sync(finish(alice, bob))
    assert (for_bob["error"], for_bob["owner"], for_bob["requester"]) == (NONE, ("User", "bob"), ("User", "alice"))
    assert seen_by_bob == [for_bob["token_id"]]  # its owner sees it
    assert seen_by_alice == [for_bob["token_id"]]  # and so does its requester


_LOOP: asyncio.AbstractEventLoop | None = None


def _sync(work: Any) -> Any:
    """Coroutines of one test on one loop (its connections live across the ACL granted between them)."""
    global _LOOP
    if _LOOP is None or _LOOP.is_closed():
        _LOOP = asyncio.new_event_loop()
    return _LOOP.run_until_complete(work)


async def _described(connection: Any, token_id: str) -> list[str]:
    """The ids of the tokens the connection's principal is shown among those it asks about (every owner), asked
    again for a moment while Kafka's broker learns of a token its controller made."""
    deadline = time.monotonic() + 10
    while True:
        tokens = [token["token_id"] for token in (await ask(connection, describe(None)))["tokens"]]
        if token_id in tokens or time.monotonic() > deadline:
            return [each for each in tokens if each == token_id]
        await asyncio.sleep(0.1)



def test_requests_naming_topics_by_id_authorize_the_names_the_ids_have(authorizing_listeners: Listeners) -> None:
    """Produce v13, OffsetCommit v10 and OffsetFetch v10 name topics by id: a topic ``alice`` may not touch is
    TOPIC_AUTHORIZATION_FAILED, one she may is written, and an id no topic has is UNKNOWN_TOPIC_ID whoever asks."""
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    allowed, denied, group = unique("authz-ids-allowed"), unique("authz-ids-denied"), unique("authz-ids-group")
    for name in (allowed, denied):
        create_topic(plain, name)
    grant(plain, binding(ResourceType.TOPIC, allowed, "User:alice", AclOperation.WRITE),
          binding(ResourceType.TOPIC, allowed, "User:alice", AclOperation.READ),
          binding(ResourceType.GROUP, group, "User:alice", AclOperation.READ))
    ids = {name: _topic_id(plain, name) for name in (allowed, denied)}
    unknown = uuid.uuid4()
    batch = build_batch([Record(0, int(time.time() * 1000), None, b"value")])
    produced = one(sasl, "alice", make(produce_v13.ProduceRequest, transactional_id=None, acks=-1,
                                       timeout=datetime.timedelta(seconds=10), topic_data=tuple(
        make(produce_v13.TopicProduceData, topic_id=topic_id, partition_data=(
            make(produce_v13.PartitionProduceData, index=0, records=batch),))
        for topic_id in (ids[allowed], ids[denied], unknown))))
    commit = make(commit_v10.OffsetCommitRequest, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                  group_instance_id=None, topics=tuple(
        make(commit_v10.OffsetCommitRequestTopic, topic_id=topic_id, partitions=(
            make(commit_v10.OffsetCommitRequestPartition, partition_index=0, committed_offset=1,
                 committed_leader_epoch=-1, committed_metadata=""),))
        for topic_id in (ids[allowed], ids[denied], unknown)))
    asyncio.run(_coordinator_ready(plain, group))
    committed = one(sasl, "alice", commit)
    fetched = one(sasl, "alice", make(fetch_offsets_v10.OffsetFetchRequest, require_stable=False, groups=(
        make(fetch_offsets_v10.OffsetFetchRequestGroup, group_id=group, member_id=None, member_epoch=-1, topics=tuple(
            make(fetch_offsets_v10.OffsetFetchRequestTopics, topic_id=topic_id, partition_indexes=(0,))
            for topic_id in (ids[allowed], ids[denied], unknown))),)))
    role = {ids[allowed]: "allowed", ids[denied]: "denied", unknown: "unknown"}
    assert {role[topic.topic_id]: int(topic.partition_responses[0].error_code) for topic in produced.responses} == {
        "allowed": NONE, "denied": TOPIC_AUTHORIZATION_FAILED, "unknown": UNKNOWN_TOPIC_ID}
    assert {role[topic.topic_id]: int(topic.partitions[0].error_code) for topic in committed.topics} == {
        "allowed": NONE, "denied": TOPIC_AUTHORIZATION_FAILED, "unknown": UNKNOWN_TOPIC_ID}
    [answer] = fetched.groups
    assert {role[topic.topic_id]: (int(topic.partitions[0].error_code), int(topic.partitions[0].committed_offset))
            for topic in answer.topics} == {
        "allowed": (NONE, 1), "denied": (TOPIC_AUTHORIZATION_FAILED, -1), "unknown": (UNKNOWN_TOPIC_ID, -1)}


async def _coordinator_ready(bootstrap: str, group: str) -> None:
    """Kafka creates ``__consumer_offsets`` at the first FindCoordinator, and answers it once the group's partition
    is loaded."""
    connection = await Connection.open(bootstrap, "authz-coordinator")
    try:
        await coordinator_ready(connection, group)
    finally:
        await connection.close()


def _topic_id(bootstrap: str, name: str) -> uuid.UUID:
    """The topic's id, once Metadata knows its leader."""
    deadline = time.monotonic() + 30
    while True:
        [topic] = one_request(bootstrap, make(metadata_v12.MetadataRequest, topics=(
            make(metadata_v12.MetadataRequestTopic, topic_id=None, name=name),), allow_auto_topic_creation=False,
            include_topic_authorized_operations=False)).topics
        if topic.error_code == NONE and topic.partitions and topic.partitions[0].leader_id >= 0:
            assert topic.topic_id is not None
            return topic.topic_id
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_an_admins_transaction_markers_need_cluster_action_or_alter_on_the_cluster(
        authorizing_listeners: Listeners) -> None:
    """WriteTxnMarkers (``kafka-transactions abort``): without ALTER or CLUSTER_ACTION on the cluster every partition
    named is CLUSTER_AUTHORIZATION_FAILED, existing or not; CLUSTER_ACTION alone lets the marker be written."""
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    topic = unique("authz-markers")
    create_topic(plain, topic)

    def markers() -> set[tuple[str, int, int]]:
        answer = one(sasl, "bob", make(markers_v1.WriteTxnMarkersRequest, markers=(make(
            markers_v1.WritableTxnMarker, producer_id=4_000_000, producer_epoch=0, transaction_result=False,
            coordinator_epoch=0, topics=(make(markers_v1.WritableTxnMarkerTopic, name=topic, partition_indexes=(0,)),
                                         make(markers_v1.WritableTxnMarkerTopic, name="authz-nowhere",
                                              partition_indexes=(0,)))),)))
        return {(entry.name, int(partition.partition_index), int(partition.error_code))
                for result in answer.markers for entry in result.topics for partition in entry.partitions}

    assert markers() == {(topic, 0, CLUSTER_AUTHORIZATION_FAILED), ("authz-nowhere", 0, CLUSTER_AUTHORIZATION_FAILED)}
    allowed = binding(ResourceType.BROKER, "kafka-cluster", "User:bob", AclOperation.CLUSTER_ACTION)
    grant(plain, allowed)
    try:
        assert markers() == {(topic, 0, NONE), ("authz-nowhere", 0, UNKNOWN_TOPIC_OR_PARTITION)}
    finally:
        revoke(plain, allowed)
