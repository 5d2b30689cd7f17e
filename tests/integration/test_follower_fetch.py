"""A Fetch sent as a follower (a replica id of 0 or more) answered as Apache Kafka 4.4 answers a broker that is not a
replica of the partitions (``--against kafka``): logwright has no followers, so nothing is read.

Kafka's leader answers each partition it has NOT_LEADER_OR_FOLLOWER (naming itself as the current leader from v16,
KIP-951) or, when the request names the leader epoch, UNKNOWN_LEADER_EPOCH; the partitions it does not have come
after the others, in the order asked. Under an authorizer a follower needs CLUSTER_ACTION on the cluster, else every
partition asked is TOPIC_AUTHORIZATION_FAILED, known or not. Negative ids (-1 a consumer, -2 and -3 Kafka's
debugging and future-local ids) read as a consumer does.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.fetch.v17 import request as fetch_v17
from kio.schema.metadata.v12 import request as metadata_v12
from logwright.compat.registry import make

from .authorization_clients import AclOperation, ResourceType, binding, create_topic, grant, one, unique
from .sasl_listeners import Listeners
from .test_controller_timeouts import ask
from .test_fetch_checks import _batch
from .test_produce_checks import _topic, codes, produce

pytestmark = pytest.mark.differential

NONE, NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED = 0, 6, 3, 29
UNKNOWN_SERVER_ERROR, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID = -1, 74, 75, 100
NO_DIRECTORY = uuid.UUID(int=0)


def _topic_id(bootstrap: str, topic: str) -> uuid.UUID:
    (answer,) = ask(bootstrap, make(metadata_v12.MetadataRequest, topics=(
        make(metadata_v12.MetadataRequestTopic, topic_id=None, name=topic),), allow_auto_topic_creation=False,
        include_topic_authorized_operations=False))
    topic_id: uuid.UUID = answer.topics[0].topic_id
    return topic_id


def _v17(replica: int, topics: list[tuple[uuid.UUID, list[tuple[int, int]]]], isolation: int = 0,
         session: tuple[int, int] = (0, -1)) -> Any:
    """A v17 Fetch of ``(topic id, [(partition, current leader epoch)])``, long polling 500 ms for a byte."""
    return make(
        fetch_v17.FetchRequest, cluster_id=None, replica_state=make(fetch_v17.ReplicaState, replica_id=replica,
                                                                      replica_epoch=-1),
        max_wait=datetime.timedelta(milliseconds=500), min_bytes=1, max_bytes=100_000, isolation_level=isolation,
        session_id=session[0], session_epoch=session[1], rack_id="", forgotten_topics_data=(), topics=tuple(
            make(fetch_v17.FetchTopic, topic_id=topic_id, partitions=tuple(
                make(fetch_v17.FetchPartition, partition=index, current_leader_epoch=epoch, fetch_offset=0,
                     last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=10_000,
                     replica_directory_id=NO_DIRECTORY)
                for index, epoch in partitions))
            for topic_id, partitions in topics))


def _v12(replica: int, topic: str, partitions: list[tuple[int, int]]) -> Any:
    return make(
        fetch_v12.FetchRequest, replica_id=replica, max_wait=datetime.timedelta(milliseconds=10), min_bytes=0,
        max_bytes=100_000, isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=(),
        topics=(make(fetch_v12.FetchTopic, topic=topic, partitions=tuple(
            make(fetch_v12.FetchPartition, partition=index, current_leader_epoch=epoch, fetch_offset=0,
                 last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=10_000)
            for index, epoch in partitions)),))


def _answered(answer: Any, ids: dict[uuid.UUID, str]) -> list[tuple[object, ...]]:
    """Each partition answered: topic (a name for the ids given, else ``?``), index, error, high watermark, last
    stable and log start offsets, the current leader named (v12+), aborted transactions and whether records came."""
    return [(getattr(t, "topic", None) or ids.get(t.topic_id, "?"), int(p.partition_index), int(p.error_code),
             int(p.high_watermark), int(p.last_stable_offset), int(p.log_start_offset),
             (int(p.current_leader.leader_id), int(p.current_leader.leader_epoch)),
             p.aborted_transactions, bool(p.records))
            for t in answer.responses for p in t.partitions]


NO_LEADER = (-1, -1)


@pytest.fixture
def three(bootstrap: str) -> tuple[str, uuid.UUID]:
    """A topic of three partitions, one record in each."""
    name = _topic(bootstrap, "follower-fetch", partitions=3)
    for partition in range(3):
        assert codes(produce(bootstrap, name, _batch(b"record"), partition=partition))[0][0] == NONE
    return name, _topic_id(bootstrap, name)


def test_a_follower_is_told_this_broker_is_not_its_leader(bootstrap: str, three: tuple[str, uuid.UUID]) -> None:
    name, topic_id = three
    node = int(ask(bootstrap, make(metadata_v12.MetadataRequest, topics=(), allow_auto_topic_creation=False,
                                   include_topic_authorized_operations=False))[0].brokers[0].node_id)
    stranger = uuid.uuid4()
    ids = {topic_id: name, stranger: "stranger"}
    for replica in (0, node, node + 1, 1_000):
        (answer,) = ask(bootstrap, _v17(replica, [(stranger, [(0, -1)]), (topic_id, [(9, -1), (0, -1), (1, -1)])]))
        assert (int(answer.error_code), answer.session_id, answer.node_endpoints) == (NONE, 0, ()), replica
        assert _answered(answer, ids) == [
            (name, 0, NOT_LEADER_OR_FOLLOWER, -1, -1, -1, (node, 0), None, False),
            (name, 1, NOT_LEADER_OR_FOLLOWER, -1, -1, -1, (node, 0), None, False),
            ("stranger", 0, UNKNOWN_TOPIC_ID, -1, -1, -1, NO_LEADER, (), False),
            (name, 9, UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1, NO_LEADER, (), False)], replica
    (asked_first,) = ask(bootstrap, _v17(node, [(topic_id, [(0, -1), (7, -1)]), (stranger, [(0, -1)])]))
    assert [entry[:3] for entry in _answered(asked_first, ids)] == [
        (name, 0, NOT_LEADER_OR_FOLLOWER), (name, 7, UNKNOWN_TOPIC_OR_PARTITION), ("stranger", 0, UNKNOWN_TOPIC_ID)]
    # an epoch named: this one fenced or unknown as for a consumer, the partition's own "not yet a replica"
    (epochs,) = ask(bootstrap, _v17(node, [(topic_id, [(0, 5), (1, 0), (2, -1)])]))
    assert [entry[:3] + entry[6:7] for entry in _answered(epochs, ids)] == [
        (name, 0, UNKNOWN_LEADER_EPOCH, NO_LEADER), (name, 1, UNKNOWN_LEADER_EPOCH, NO_LEADER),
        (name, 2, NOT_LEADER_OR_FOLLOWER, (node, 0))]
    (session,) = ask(bootstrap, _v17(node, [(topic_id, [(0, -1)])], session=(0, 0)))
    assert int(session.error_code) == NONE and session.session_id != 0, "a full fetch of epoch 0 opens a session"
    (isolation,) = ask(bootstrap, _v17(node, [(topic_id, [(0, -1)])], isolation=7))
    assert (int(isolation.error_code), isolation.session_id, isolation.responses) == (UNKNOWN_SERVER_ERROR, 0, ())
    (no_leader_before_16,) = ask(bootstrap, _v12(node, name, [(0, -1), (1, 3)]))
    assert [entry[:3] + entry[6:7] for entry in _answered(no_leader_before_16, ids)] == [
        (name, 0, NOT_LEADER_OR_FOLLOWER, NO_LEADER), (name, 1, UNKNOWN_LEADER_EPOCH, NO_LEADER)]


def test_negative_replica_ids_read_as_consumers(bootstrap: str, three: tuple[str, uuid.UUID]) -> None:
    name, topic_id = three
    for replica in (-1, -2, -3):
        (answer,) = ask(bootstrap, _v17(replica, [(topic_id, [(0, -1)])]))
        assert [entry[:3] + entry[-1:] for entry in _answered(answer, {topic_id: name})] == [
            (name, 0, NONE, True)], replica


def test_a_follower_needs_cluster_action(authorizing_listeners: Listeners) -> None:
    sasl, plain = authorizing_listeners.sasl, authorizing_listeners.plaintext
    name = unique("authz-follower")
    create_topic(plain, name, 2)
    topic_id, stranger = _topic_id(plain, name), uuid.uuid4()
    ids = {topic_id: name, stranger: "stranger"}
    request = _v17(1, [(stranger, [(0, -1)]), (topic_id, [(9, -1), (0, -1), (1, -1)])])
    refused = one(sasl, "alice", request)
    assert [entry[:3] for entry in _answered(refused, ids)] == [
        ("stranger", 0, TOPIC_AUTHORIZATION_FAILED), (name, 9, TOPIC_AUTHORIZATION_FAILED),
        (name, 0, TOPIC_AUTHORIZATION_FAILED), (name, 1, TOPIC_AUTHORIZATION_FAILED)], "in the order asked"
    isolation = one(sasl, "alice", _v17(1, [(topic_id, [(0, -1)])], isolation=7))
    assert (int(isolation.error_code), [entry[:3] for entry in _answered(isolation, ids)]) == (
        NONE, [(name, 0, TOPIC_AUTHORIZATION_FAILED)]), "refused before its isolation level is read"
    grant(plain, binding(ResourceType.BROKER, "kafka-cluster", "User:alice", AclOperation.CLUSTER_ACTION))
    allowed = one(sasl, "alice", request)
    assert [entry[:3] for entry in _answered(allowed, ids)] == [
        (name, 0, NOT_LEADER_OR_FOLLOWER), (name, 1, NOT_LEADER_OR_FOLLOWER), ("stranger", 0, UNKNOWN_TOPIC_ID),
        (name, 9, UNKNOWN_TOPIC_OR_PARTITION)], "CLUSTER_ACTION is enough: no READ on the topic asked"
