"""Who may commit and fetch a group's offsets, answered as Apache Kafka 4.4 answers (``--against kafka``).

Raw OffsetCommit, OffsetFetch and TxnOffsetCommit requests on one connection, each answer compared with Kafka's:
a KIP-848 member's epoch (current, older, newer, -1; an unknown or empty member id; a null member id is an admin
read), a classic member's generation and ``group.instance.id``, a group that does not exist (GROUP_ID_NOT_FOUND
from OffsetCommit v9, ILLEGAL_GENERATION before and in TxnOffsetCommit) and a group of committed offsets only (an
Empty classic group: a named member is unknown, generation -1 commits whatever member id it names); OffsetDelete of
a topic or partition that does not exist.
"""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.offset_commit.v2 import request as offset_commit_v2
from kio.schema.offset_commit.v8 import request as offset_commit_v8
from kio.schema.offset_commit.v9 import request as offset_commit_v9
from kio.schema.offset_delete.v0 import request as offset_delete
from kio.schema.offset_fetch.v9 import request as offset_fetch
from kio.schema.sync_group.v5 import request as sync_group
from kio.schema.txn_offset_commit.v3 import request as txn_offset_commit
from logwright.client.connection import Connection
from logwright.compat.registry import make

from .coordinator_ready import TRANSACTION, coordinator_ready, init_producer_id
from .test_group_id_namespace import consumer_heartbeat_request, join_request
from .test_share_close_order import topic_with_records

pytestmark = pytest.mark.differential

NONE, UNKNOWN_TOPIC_OR_PARTITION, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND, STALE_MEMBER_EPOCH = (
    0, 3, 22, 25, 69, 113)


async def _commit(connection: Connection, group: str, topic: str, generation: int, member: str,
                  instance: str | None = None, module: Any = offset_commit_v9) -> int:
    partition = make(module.OffsetCommitRequestPartition, partition_index=0, committed_offset=3,
                     committed_leader_epoch=-1, committed_metadata=None)
    answer = await connection.request(make(
        module.OffsetCommitRequest, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        group_instance_id=instance, retention_time=datetime.timedelta(milliseconds=-1),
        topics=(module.OffsetCommitRequestTopic(name=topic, partitions=(partition,)),)))
    return int(answer.topics[0].partitions[0].error_code)


async def _fetch(connection: Connection, group: str, topic: str, member: str | None, epoch: int) -> int:
    answer = await connection.request(make(offset_fetch.OffsetFetchRequest, require_stable=False, groups=(
        offset_fetch.OffsetFetchRequestGroup(group_id=group, member_id=member, member_epoch=epoch, topics=(
            offset_fetch.OffsetFetchRequestTopics(name=topic, partition_indexes=(0,)),)),)))
    return int(answer.groups[0].error_code)


def test_consumer_group_members_commit_and_fetch_with_their_epoch(bootstrap: str) -> None:
    group = f"commit-checks-consumer-{uuid.uuid4().hex[:8]}"
    topic = topic_with_records(bootstrap, group)
    answers: dict[str, tuple[int, int]] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "commit-checks")
        try:
            await coordinator_ready(connection, group)
            member = str(uuid.uuid4())
            epoch = int((await connection.request(consumer_heartbeat_request(group, member, 0, topic))).member_epoch)
            for label, member_id, sent in (("own epoch", member, epoch), ("newer epoch", member, epoch + 1),
                                           ("older epoch", member, epoch - 1), ("epoch -1", member, -1),
                                           ("unknown member", "nobody", epoch), ("empty member, -1", "", -1),
                                           ("empty member, own epoch", "", epoch)):
                answers[label] = (await _commit(connection, group, topic, sent, member_id),
                                  await _fetch(connection, group, topic, member_id, sent))
            answers["null member, -1 (fetch only)"] = (NONE, await _fetch(connection, group, topic, None, -1))
        finally:
            await connection.close()

    asyncio.run(scenario())
    stale, unknown = (STALE_MEMBER_EPOCH, STALE_MEMBER_EPOCH), (UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID)
    assert answers == {"own epoch": (NONE, NONE), "newer epoch": stale, "older epoch": stale, "epoch -1": stale,
                       "unknown member": unknown, "empty member, -1": unknown, "empty member, own epoch": unknown,
                       "null member, -1 (fetch only)": (NONE, NONE)}


def test_classic_commits_and_groups_that_do_not_exist(bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    classic, offsets_only, transactional = (f"commit-checks-{kind}-{tag}" for kind in ("classic", "offsets", "txn"))
    topic = topic_with_records(bootstrap, classic)
    missing = [f"commit-checks-missing-{index}-{tag}" for index in range(6)]
    answers: dict[str, int] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "commit-checks")
        try:
            for group in (classic, offsets_only, *missing):
                await coordinator_ready(connection, group)
            first = await connection.request(join_request(classic, ""))
            joined = await connection.request(join_request(classic, first.member_id))
            member, generation = joined.member_id, int(joined.generation_id)
            answers["before SyncGroup"] = await _commit(connection, classic, topic, generation, member)
            await connection.request(make(
                sync_group.SyncGroupRequest, group_id=classic, generation_id=generation, member_id=member,
                group_instance_id=None, protocol_type="consumer", protocol_name="range",
                assignments=(sync_group.SyncGroupRequestAssignment(member_id=member, assignment=b""),)))
            for label, sent, member_id, instance in (
                    ("own generation", generation, member, None), ("newer generation", generation + 1, member, None),
                    ("generation -1, a member", -1, member, None), ("unknown member", generation, "nobody", None),
                    ("generation -1, no member", -1, "", None), ("an instance id nobody holds", generation, member,
                                                                "instance-1")):
                answers[label] = await _commit(connection, classic, topic, sent, member_id, instance)

            for label, module, group in (("no group, v9", offset_commit_v9, missing[0]),
                                         ("no group, v8", offset_commit_v8, missing[1]),
                                         ("no group, v2", offset_commit_v2, missing[2])):
                answers[label] = await _commit(connection, group, topic, 1, "nobody", module=module)
            answers["no group, generation -1 naming a member"] = await _commit(connection, missing[3], topic, -1, "x")
            answers["offsets only: simple commit"] = await _commit(connection, offsets_only, topic, -1, "")
            answers["offsets only: a generation"] = await _commit(connection, offsets_only, topic, 1, "nobody")
            answers["offsets only: generation 0, no member"] = await _commit(connection, offsets_only, topic, 0, "")
            answers["offsets only: generation -1 naming a member"] = await _commit(connection, offsets_only, topic,
                                                                                   -1, "x")

            await coordinator_ready(connection, transactional, TRANSACTION)
            producer = await init_producer_id(connection, transactional)
            ids = {"transactional_id": transactional, "producer_id": producer.producer_id,
                   "producer_epoch": producer.producer_epoch}
            for label, group, sent, member_id in (("txn: no group, a generation", missing[4], 1, "nobody"),
                                                  ("txn: offsets only, a generation", offsets_only, 1, "nobody"),
                                                  ("txn: offsets only, generation -1", offsets_only, -1, "x"),
                                                  ("txn: no group, generation -1", missing[5], -1, "x")):
                assert (await connection.request(make(AddOffsetsToTxnRequest, group_id=group, **ids))).error_code == 0
                answer = await connection.request(make(
                    txn_offset_commit.TxnOffsetCommitRequest, group_id=group, generation_id=sent, member_id=member_id,
                    group_instance_id=None, **ids, topics=(txn_offset_commit.TxnOffsetCommitRequestTopic(
                        name=topic, partitions=(txn_offset_commit.TxnOffsetCommitRequestPartition(
                            partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                            committed_metadata=None),)),)))
                answers[label] = int(answer.topics[0].partitions[0].error_code)
            assert (await connection.request(make(EndTxnRequest, committed=False, **ids))).error_code == 0
        finally:
            await connection.close()

    asyncio.run(scenario())
    assert answers == {
        "before SyncGroup": 27,  # REBALANCE_IN_PROGRESS
        "own generation": NONE, "newer generation": ILLEGAL_GENERATION, "generation -1, a member": ILLEGAL_GENERATION,
        "unknown member": UNKNOWN_MEMBER_ID, "generation -1, no member": UNKNOWN_MEMBER_ID,
        "an instance id nobody holds": UNKNOWN_MEMBER_ID,
        "no group, v9": GROUP_ID_NOT_FOUND, "no group, v8": ILLEGAL_GENERATION, "no group, v2": ILLEGAL_GENERATION,
        "no group, generation -1 naming a member": NONE,
        "offsets only: simple commit": NONE, "offsets only: a generation": UNKNOWN_MEMBER_ID,
        "offsets only: generation 0, no member": UNKNOWN_MEMBER_ID, "offsets only: generation -1 naming a member": NONE,
        "txn: no group, a generation": ILLEGAL_GENERATION, "txn: offsets only, a generation": UNKNOWN_MEMBER_ID,
        "txn: offsets only, generation -1": NONE, "txn: no group, generation -1": NONE,
    }


def test_offset_delete_answers_unknown_topics_and_partitions(bootstrap: str) -> None:
    group = f"commit-checks-delete-{uuid.uuid4().hex[:8]}"
    topic = topic_with_records(bootstrap, group)
    missing = f"commit-checks-no-topic-{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[int, list[tuple[str, list[int]]]]:
        connection = await Connection.open(bootstrap, "commit-checks")
        try:
            await coordinator_ready(connection, group)
            assert await _commit(connection, group, topic, -1, "") == NONE
            answer = await connection.request(make(offset_delete.OffsetDeleteRequest, group_id=group, topics=(
                offset_delete.OffsetDeleteRequestTopic(name=missing, partitions=(
                    offset_delete.OffsetDeleteRequestPartition(partition_index=0),)),
                offset_delete.OffsetDeleteRequestTopic(name=topic, partitions=(
                    offset_delete.OffsetDeleteRequestPartition(partition_index=9),
                    offset_delete.OffsetDeleteRequestPartition(partition_index=0))))))
            return int(answer.error_code), sorted((entry.name, [int(p.error_code) for p in entry.partitions])
                                                  for entry in answer.topics)
        finally:
            await connection.close()

    assert asyncio.run(scenario()) == (NONE, sorted([(missing, [UNKNOWN_TOPIC_OR_PARTITION]),
                                                     (topic, [UNKNOWN_TOPIC_OR_PARTITION, NONE])]))


OFFSET_METADATA_TOO_LARGE = 12


def _metadata_answers(bootstrap: str, metadata: dict[str, str]) -> dict[str, int]:
    """Each metadata committed by a simple OffsetCommit (generation -1) and in a transaction (TxnOffsetCommit)."""
    topic = f"commit-metadata-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    group, transactional = f"commit-metadata-{uuid.uuid4().hex[:8]}", f"commit-metadata-{uuid.uuid4().hex[:8]}"
    answers: dict[str, int] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "commit-metadata")
        try:
            await coordinator_ready(connection, group)
            for label, text in metadata.items():
                partition = make(offset_commit_v9.OffsetCommitRequestPartition, partition_index=0, committed_offset=3,
                                 committed_leader_epoch=-1, committed_metadata=text)
                answer = await connection.request(make(
                    offset_commit_v9.OffsetCommitRequest, group_id=group, generation_id_or_member_epoch=-1,
                    member_id="", group_instance_id=None, retention_time=datetime.timedelta(milliseconds=-1),
                    topics=(offset_commit_v9.OffsetCommitRequestTopic(name=topic, partitions=(partition,)),)))
                answers[label] = int(answer.topics[0].partitions[0].error_code)
            await coordinator_ready(connection, transactional, TRANSACTION)
            producer = await init_producer_id(connection, transactional)
            ids = {"transactional_id": transactional, "producer_id": producer.producer_id,
                   "producer_epoch": producer.producer_epoch}
            assert (await connection.request(make(AddOffsetsToTxnRequest, group_id=group, **ids))).error_code == 0
            for label, text in metadata.items():
                answer = await connection.request(make(
                    txn_offset_commit.TxnOffsetCommitRequest, group_id=group, generation_id=-1, member_id="",
                    group_instance_id=None, **ids, topics=(txn_offset_commit.TxnOffsetCommitRequestTopic(
                        name=topic, partitions=(txn_offset_commit.TxnOffsetCommitRequestPartition(
                            partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                            committed_metadata=text),)),)))
                answers[f"txn: {label}"] = int(answer.topics[0].partitions[0].error_code)
            assert (await connection.request(make(EndTxnRequest, committed=False, **ids))).error_code == 0
        finally:
            await connection.close()

    asyncio.run(scenario())
    return answers


def test_offset_metadata_is_bounded_in_javas_characters(bootstrap: str) -> None:
    """``offset.metadata.max.bytes`` (4096) counts UTF-16 code units, as Java's ``String.length()``: 4,096 "é" (8,192
    bytes) pass, 2,049 characters outside the BMP (4,098 units) do not; TxnOffsetCommit is held to it too."""
    answers = _metadata_answers(bootstrap, {"4096 x": "x" * 4096, "4097 x": "x" * 4097, "4096 é": "é" * 4096,
                                            "2049 emoji": "\U0001F600" * 2049})
    assert answers == {label: code for prefix in ("", "txn: ") for label, code in (
        (f"{prefix}4096 x", NONE), (f"{prefix}4097 x", OFFSET_METADATA_TOO_LARGE), (f"{prefix}4096 é", NONE),
        (f"{prefix}2049 emoji", OFFSET_METADATA_TOO_LARGE))}


@pytest.mark.parametrize("started_with", [{"offset.metadata.max.bytes": "10"}], indirect=True)
def test_the_brokers_offset_metadata_max_bytes_is_the_bound(started_with: str) -> None:
    assert _metadata_answers(started_with, {"10": "x" * 10, "11": "é" * 11}) == {
        "10": NONE, "11": OFFSET_METADATA_TOO_LARGE, "txn: 10": NONE, "txn: 11": OFFSET_METADATA_TOO_LARGE}
