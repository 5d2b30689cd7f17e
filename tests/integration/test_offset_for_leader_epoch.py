"""OffsetForLeaderEpoch answered as Apache Kafka 4.4 answers it (``--against kafka``).

Raw requests of versions 2-4 on a two-partition topic (three records in partition 0, partition 1 empty): the
partition's epoch (0) ends at the log end, a newer epoch or -1 is undefined, an older one (below -1) answers the log
start offset, the current leader epoch is checked as ListOffsets checks it, a partition named twice is answered twice
in the order asked, and DeleteRecords moves what an older epoch answers. The Java consumer's use of it (validating a
committed position, finding a truncation) is the ``leader-epoch`` step of the Java peers (tests/peers); ACLs are in
test_authorization_topics. librdkafka validates only when a partition's leader epoch changes, which never happens
on one broker.
"""

from __future__ import annotations

import importlib
import uuid
from typing import Any

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from kio.schema.api_versions.v3 import request as api_versions_v3
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .test_list_offsets_checks import TIMEOUT_S, two_partition_topic

pytestmark = pytest.mark.differential

NONE, UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH = 0, 3, 35, 74, 75
RECORDS = 3

Answer = tuple[int, int, int, int]
"""Partition, error, leader epoch, end offset."""


def offsets_for_leader_epochs(bootstrap: str, topic: str, asked: list[tuple[int, int, int]], version: int = 4,
                              replica_id: int = -1) -> list[Answer]:
    """The answers, in the order given, to one request of ``(partition, current leader epoch, leader epoch)``."""
    module: Any = importlib.import_module(f"kio.schema.offset_for_leader_epoch.v{version}.request")
    fields = {"replica_id": replica_id} if version >= 3 else {}
    request = make(module.OffsetForLeaderEpochRequest, **fields, topics=(make(
        module.OffsetForLeaderTopic, topic=topic, partitions=tuple(
            make(module.OffsetForLeaderPartition, partition=partition, current_leader_epoch=current,
                 leader_epoch=epoch)
            for partition, current, epoch in asked)),))
    answer = one_request(bootstrap, request)
    assert [str(topic.topic) for topic in answer.topics] == [topic]
    return [(int(p.partition), int(p.error_code), int(p.leader_epoch), int(p.end_offset))
            for t in answer.topics for p in t.partitions]


@pytest.fixture
def topic(bootstrap: str) -> str:
    return two_partition_topic(bootstrap, "offset-for-leader-epoch", (0,) * RECORDS)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_each_epoch_asked_and_each_current_epoch(bootstrap: str, topic: str, version: int) -> None:
    asked = [(0, -1, 0), (1, -1, 0), (0, -1, 1), (0, -1, -1), (0, -1, -2), (0, -1, -7), (1, -1, 2**31 - 1),
             (1, -1, -(2**31)), (0, 0, 0), (0, 1, 0), (0, -2, 0), (0, -3, 5), (9, -1, 0), (0, -1, 0), (1, 5, 0)]
    assert offsets_for_leader_epochs(bootstrap, topic, asked, version) == [
        (0, NONE, 0, RECORDS), (1, NONE, 0, 0), (0, NONE, -1, -1), (0, NONE, -1, -1), (0, NONE, -2, 0),
        (0, NONE, -7, 0), (1, NONE, -1, -1), (1, NONE, -(2**31), 0), (0, NONE, 0, RECORDS),
        (0, UNKNOWN_LEADER_EPOCH, -1, -1), (0, FENCED_LEADER_EPOCH, -1, -1), (0, FENCED_LEADER_EPOCH, -1, -1),
        (9, UNKNOWN_TOPIC_OR_PARTITION, -1, -1), (0, NONE, 0, RECORDS), (1, UNKNOWN_LEADER_EPOCH, -1, -1)]


def test_a_topic_that_does_not_exist_or_cannot(bootstrap: str) -> None:
    missing = f"no-such-topic-{uuid.uuid4().hex[:8]}"
    assert offsets_for_leader_epochs(bootstrap, missing, [(0, -1, 0), (0, 3, 0)]) == [
        (0, UNKNOWN_TOPIC_OR_PARTITION, -1, -1)] * 2
    assert offsets_for_leader_epochs(bootstrap, "no such topic!", [(0, -1, 0)]) == [
        (0, UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]


def test_the_replica_id_is_not_read(bootstrap: str, topic: str) -> None:
    for replica_id in (1, 7, -2):
        assert offsets_for_leader_epochs(bootstrap, topic, [(0, -1, 0)], replica_id=replica_id) == [
            (0, NONE, 0, RECORDS)]


def test_an_older_epoch_ends_where_the_log_now_starts(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for done in admin.delete_records([TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 0)]).values():
        done.result(TIMEOUT_S)
    assert offsets_for_leader_epochs(bootstrap, topic, [(0, -1, 0), (0, -1, -2), (1, -1, -2), (0, -1, -1)]) == [
        (0, NONE, 0, RECORDS), (0, NONE, -2, 2), (1, NONE, -2, 0), (0, NONE, -1, -1)]
    for done in admin.delete_records([TopicPartition(topic, 0, RECORDS)]).values():
        done.result(TIMEOUT_S)
    assert offsets_for_leader_epochs(bootstrap, topic, [(0, -1, 0), (0, -1, -2)]) == [
        (0, NONE, 0, RECORDS), (0, NONE, -2, RECORDS)]


def test_versions_before_2_are_not_served(bootstrap: str) -> None:
    """Kafka 4.x dropped versions 0-1 (KIP-896); ApiVersions lists 2-4."""
    answer = one_request(bootstrap, make(api_versions_v3.ApiVersionsRequest, client_software_name="logwright-tests",
                                         client_software_version="1"))
    assert [(int(key.min_version), int(key.max_version)) for key in answer.api_keys if key.api_key == 23] == [(2, 4)]
