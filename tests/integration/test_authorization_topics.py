"""ACLs enforced on a topic's data path (Produce, Fetch, ListOffsets, OffsetForLeaderEpoch, Metadata), as Kafka 4.4's
StandardAuthorizer enforces them: differential (``--against kafka`` runs the same on Apache Kafka).

``alice`` and ``bob`` authenticate with PLAIN on the SASL listener and have only what a test grants; the PLAINTEXT
listener's ``User:ANONYMOUS`` is the super user that creates topics and ACLs. ``allow.everyone.if.no.acl.found`` is
false (the default): a resource no ACL names is denied.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kio.schema.offset_for_leader_epoch.v4 import request as offset_for_leader_epoch_v4
from logwright.compat.registry import make

from .authorization_clients import (
    NONE,
    TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_OPERATIONS,
    UNKNOWN_TOPIC_OR_PARTITION,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    asked,
    binding,
    bits,
    create_topic,
    described_topics,
    fetch,
    fetched,
    grant,
    list_offsets,
    listed_offsets,
    metadata,
    one,
    produce,
    produced,
    revoke,
    unique,
)
from .sasl_listeners import Listeners

pytestmark = pytest.mark.differential


def test_a_user_without_acls_is_refused_on_every_topic_existing_or_not(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    topic, missing = unique("authz-none"), unique("authz-missing")
    create_topic(plain, topic)
    answers = asked(sasl, "alice", [produce(topic), produce(missing), fetch(topic, missing),
                                    list_offsets(topic, missing), metadata(topic, missing)])
    assert produced(answers[0]) == [(topic, TOPIC_AUTHORIZATION_FAILED)]
    assert produced(answers[1]) == [(missing, TOPIC_AUTHORIZATION_FAILED)]
    assert fetched(answers[2]) == [(topic, TOPIC_AUTHORIZATION_FAILED), (missing, TOPIC_AUTHORIZATION_FAILED)]
    assert listed_offsets(answers[3]) == [(topic, TOPIC_AUTHORIZATION_FAILED, -1),
                                          (missing, TOPIC_AUTHORIZATION_FAILED, -1)]
    # neither the topic's id nor whether it exists is told
    assert sorted(described_topics(answers[4]), key=str) == sorted(
        [(topic, TOPIC_AUTHORIZATION_FAILED, False, UNKNOWN_OPERATIONS),
         (missing, TOPIC_AUTHORIZATION_FAILED, False, UNKNOWN_OPERATIONS)], key=str)
    every = one(sasl, "alice", metadata(None))
    assert topic not in [name for name, *_ in described_topics(every)]


def test_write_allows_produce_and_implies_describe_not_read(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    topic, missing = unique("authz-write"), unique("authz-write-missing")
    create_topic(plain, topic)
    grant(plain, binding(ResourceType.TOPIC, topic, "User:alice", AclOperation.WRITE),
          binding(ResourceType.TOPIC, missing, "User:alice", AclOperation.WRITE))
    answers = asked(sasl, "alice", [produce(topic), produce(missing), fetch(topic), list_offsets(topic),
                                    metadata(topic, missing, operations=True)])
    assert produced(answers[0]) == [(topic, NONE)]
    assert produced(answers[1]) == [(missing, UNKNOWN_TOPIC_OR_PARTITION)]
    assert fetched(answers[2]) == [(topic, TOPIC_AUTHORIZATION_FAILED)]
    assert listed_offsets(answers[3]) == [(topic, NONE, 1)]
    assert described_topics(answers[4]) == [
        (topic, NONE, True, bits(AclOperation.WRITE, AclOperation.DESCRIBE)),
        (missing, UNKNOWN_TOPIC_OR_PARTITION, False, bits(AclOperation.WRITE, AclOperation.DESCRIBE))]
    # bob has nothing: alice's ACLs are hers
    assert produced(one(sasl, "bob", produce(topic))) == [(topic, TOPIC_AUTHORIZATION_FAILED)]
    every = one(sasl, "alice", metadata(None))
    assert topic in [name for name, *_ in described_topics(every)]


def test_prefixed_and_wildcard_acls_and_a_deny_that_wins(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-prefix")
    first, second = f"{prefix}-one", f"{prefix}-two"
    for topic in (first, second):
        create_topic(plain, topic)
    read_prefixed = binding(ResourceType.TOPIC, prefix, "User:*", AclOperation.READ,
                            pattern=ResourcePatternType.PREFIXED)
    write_all = binding(ResourceType.TOPIC, prefix, "User:bob", AclOperation.ALL,
                        pattern=ResourcePatternType.PREFIXED)
    grant(plain, read_prefixed, write_all)
    assert fetched(one(sasl, "alice", fetch(first, second))) == [(first, NONE), (second, NONE)]
    assert produced(one(sasl, "alice", produce(first))) == [(first, TOPIC_AUTHORIZATION_FAILED)]
    assert produced(one(sasl, "bob", produce(second))) == [(second, NONE)]
    deny = binding(ResourceType.TOPIC, second, "User:alice", AclOperation.READ, AclPermissionType.DENY)
    grant(plain, deny)
    assert fetched(one(sasl, "alice", fetch(first, second))) == [(first, NONE), (second, TOPIC_AUTHORIZATION_FAILED)]
    # a DENY of READ implies nothing: alice still describes the topic through her READ
    assert described_topics(one(sasl, "alice", metadata(second, operations=True))) == [
        (second, NONE, True, bits(AclOperation.DESCRIBE))]
    revoke(plain, deny)
    assert fetched(one(sasl, "alice", fetch(second))) == [(second, NONE)]


def test_auto_creation_needs_create_on_the_cluster_or_the_topic(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    prefix = unique("authz-auto")
    refused, created = f"{prefix}-refused", f"{prefix}-created"
    grant(plain, binding(ResourceType.TOPIC, prefix, "User:alice", AclOperation.DESCRIBE,
                         pattern=ResourcePatternType.PREFIXED),
          binding(ResourceType.TOPIC, created, "User:alice", AclOperation.CREATE))
    answer = one(sasl, "alice", metadata(refused, created, create=True))
    outcome = {name: (code, has_id) for name, code, has_id, _ in described_topics(answer)}
    assert outcome[refused] == (TOPIC_AUTHORIZATION_FAILED, False)
    assert outcome[created][0] in (NONE, UNKNOWN_TOPIC_OR_PARTITION, 5)  # Kafka answers while its controller creates
    deadline = time.monotonic() + 30
    while described_topics(one(sasl, "alice", metadata(created)))[0][1] != NONE:  # created, not only answered
        assert time.monotonic() < deadline
        time.sleep(0.1)


def _epoch_ends(*topics: str) -> Any:
    return make(offset_for_leader_epoch_v4.OffsetForLeaderEpochRequest, replica_id=-1, topics=tuple(
        make(offset_for_leader_epoch_v4.OffsetForLeaderTopic, topic=topic, partitions=(make(
            offset_for_leader_epoch_v4.OffsetForLeaderPartition, partition=0, current_leader_epoch=-1,
            leader_epoch=0),))
        for topic in topics))


def _ends(answer: Any) -> list[tuple[str, int, int]]:
    return [(str(topic.topic), int(partition.error_code), int(partition.end_offset))
            for topic in answer.topics for partition in topic.partitions]


def test_offset_for_leader_epoch_needs_describe_or_cluster_action(authorizing_listeners: Listeners) -> None:
    """DESCRIBE on each topic (READ implies it), or CLUSTER_ACTION on the cluster for every topic (a follower's
    right); refused topics come after the allowed ones, whether they exist or not."""
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    readable, hidden, missing = unique("authz-epoch-read"), unique("authz-epoch-hidden"), unique("authz-epoch-none")
    for topic in (readable, hidden):
        create_topic(plain, topic)
    grant(plain, binding(ResourceType.TOPIC, readable, "User:alice", AclOperation.READ))
    assert _ends(one(sasl, "alice", _epoch_ends(hidden, readable, missing))) == [
        (readable, NONE, 0), (hidden, TOPIC_AUTHORIZATION_FAILED, -1), (missing, TOPIC_AUTHORIZATION_FAILED, -1)]
    grant(plain, binding(ResourceType.BROKER, "kafka-cluster", "User:bob", AclOperation.CLUSTER_ACTION))
    assert _ends(one(sasl, "bob", _epoch_ends(hidden, readable, missing))) == [
        (hidden, NONE, 0), (readable, NONE, 0), (missing, UNKNOWN_TOPIC_OR_PARTITION, -1)]
