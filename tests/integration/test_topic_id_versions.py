"""The versions Kafka 4.4 added that name topics by id, answered as Kafka answers them (``--against kafka``):
Produce v13 (KIP-516), OffsetCommit v10 and OffsetFetch v10, and the newest Fetch (v18) and DescribeLogDirs (v5).

An id no topic has (a random one, or all zeros) is UNKNOWN_TOPIC_ID for each of its partitions; a partition past the
topic's end is UNKNOWN_TOPIC_OR_PARTITION, as by name; an offset committed by id is the one fetched by name, and the
other way round. Kafka orders a Produce or OffsetCommit answer's topics and partitions as its maps do, so answers are
compared as mappings.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.describe_log_dirs.v5 import request as describe_log_dirs
from kio.schema.fetch.v18 import request as fetch
from kio.schema.metadata.v12 import request as metadata
from kio.schema.offset_commit.v10 import request as commit
from kio.schema.offset_fetch.v9 import request as fetch_offsets_by_name
from kio.schema.offset_fetch.v10 import request as fetch_offsets
from kio.schema.produce.v13 import request as produce
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record

from .coordinator_ready import coordinator_ready
from .raw_batches import RETRIABLE

pytestmark = pytest.mark.differential

NONE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 0, 3, 100
ZERO = uuid.UUID(int=0)
RECORDS = 3


def _topic(bootstrap: str) -> str:
    name = f"topic-ids-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # held: a collected client fails its futures
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    return name


async def _topic_id(connection: Connection, name: str) -> uuid.UUID:
    """The topic's id, once Metadata knows its leader (Kafka learns it a moment after CreateTopics returns)."""
    deadline = time.monotonic() + 30
    while True:
        answer = await connection.request(make(metadata.MetadataRequest, topics=(
            make(metadata.MetadataRequestTopic, topic_id=None, name=name),), allow_auto_topic_creation=False,
            include_topic_authorized_operations=False))
        [topic] = answer.topics
        if topic.error_code == NONE and topic.partitions and all(p.leader_id >= 0 for p in topic.partitions):
            assert topic.topic_id is not None
            return topic.topic_id
        assert time.monotonic() < deadline, f"no leader for {name}: error {topic.error_code}"
        await asyncio.sleep(0.1)


def _by_id(topic_id: uuid.UUID | None) -> uuid.UUID:
    return topic_id or ZERO  # kio reads the all-zero id as None


async def _produce(connection: Connection, topic_id: uuid.UUID, batch: bytes) -> dict[Any, Any]:
    answer = await connection.request(make(
        produce.ProduceRequest, transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30), topic_data=(
            make(produce.TopicProduceData, topic_id=topic_id, partition_data=(
                make(produce.PartitionProduceData, index=0, records=batch),
                make(produce.PartitionProduceData, index=7, records=batch))),
            make(produce.TopicProduceData, topic_id=uuid.uuid5(topic_id, "unknown"), partition_data=(
                make(produce.PartitionProduceData, index=0, records=batch),)),
            make(produce.TopicProduceData, topic_id=None, partition_data=(
                make(produce.PartitionProduceData, index=0, records=batch),)))))
    return {_by_id(topic.topic_id): {int(p.index): (int(p.error_code), int(p.base_offset))
                                      for p in topic.partition_responses} for topic in answer.responses}


async def _commit(connection: Connection, group: str, topic_id: uuid.UUID) -> dict[Any, Any]:
    def partition(index: int) -> Any:
        return make(commit.OffsetCommitRequestPartition, partition_index=index, committed_offset=2,
                    committed_leader_epoch=-1, committed_metadata="by id")

    answer = await connection.request(make(
        commit.OffsetCommitRequest, group_id=group, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=(
            make(commit.OffsetCommitRequestTopic, topic_id=topic_id, partitions=(partition(0), partition(9))),
            make(commit.OffsetCommitRequestTopic, topic_id=uuid.uuid5(topic_id, "unknown"), partitions=(
                partition(0),)),
            make(commit.OffsetCommitRequestTopic, topic_id=None, partitions=(partition(0),)))))
    return {_by_id(topic.topic_id): {int(p.partition_index): int(p.error_code) for p in topic.partitions}
            for topic in answer.topics}


async def _fetch_offsets(connection: Connection, group: str, topics: Any) -> tuple[int, dict[Any, Any]]:
    answer = await connection.request(make(fetch_offsets.OffsetFetchRequest, groups=(
        make(fetch_offsets.OffsetFetchRequestGroup, group_id=group, member_id=None, member_epoch=-1, topics=topics),),
        require_stable=False))
    [found] = answer.groups
    return int(found.error_code), {
        _by_id(topic.topic_id): {int(p.partition_index): (int(p.committed_offset), p.metadata, int(p.error_code))
                                 for p in topic.partitions} for topic in found.topics}


def _answers(bootstrap: str) -> dict[str, object]:
    name = _topic(bootstrap)
    group = f"topic-ids-{uuid.uuid4().hex[:8]}"
    batch = build_batch([Record(index, int(time.time() * 1000), None, b"v%d" % index) for index in range(RECORDS)])
    answers: dict[str, object] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "topic-ids")
        try:
            topic_id = await _topic_id(connection, name)
            unknown = uuid.uuid5(topic_id, "unknown")

            def named(found: dict[Any, Any]) -> dict[str, Any]:  # ids vary from run to run: named by role
                return {{topic_id: "topic", unknown: "unknown", ZERO: "zeros"}[key]: value
                        for key, value in found.items()}

            deadline = time.monotonic() + 30  # Kafka's Metadata names the leader a moment before it takes records
            while (produced := await _produce(connection, topic_id, batch))[topic_id][0][0] in RETRIABLE and (
                    time.monotonic() < deadline):
                await asyncio.sleep(0.1)
            answers["produce v13"] = named(produced)
            read = await connection.request(make(
                fetch.FetchRequest, replica_id=-1, max_wait=datetime.timedelta(milliseconds=10), min_bytes=0,
                max_bytes=1_000_000, isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                forgotten_topics_data=(), topics=(make(fetch.FetchTopic, topic_id=topic_id, partitions=(
                    make(fetch.FetchPartition, partition=0, current_leader_epoch=-1, fetch_offset=0,
                         last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=1_000_000),)),)))
            [partition] = read.responses[0].partitions
            answers["fetch v18"] = (read.responses[0].topic_id == topic_id, int(partition.error_code),
                                    int(partition.high_watermark), bool(partition.records))
            await coordinator_ready(connection, group)
            answers["offset commit v10"] = named(await _commit(connection, group, topic_id))
            code, every = await _fetch_offsets(connection, group, None)
            answers["offset fetch v10, every partition"] = (code, named(every))
            code, asked = await _fetch_offsets(connection, group, (
                make(fetch_offsets.OffsetFetchRequestTopics, topic_id=topic_id, partition_indexes=(0, 1, 9)),
                make(fetch_offsets.OffsetFetchRequestTopics, topic_id=unknown, partition_indexes=(0,))))
            answers["offset fetch v10, by id"] = (code, named(asked))
            by_name = await connection.request(make(fetch_offsets_by_name.OffsetFetchRequest, groups=(
                make(fetch_offsets_by_name.OffsetFetchRequestGroup, group_id=group, member_id=None, member_epoch=-1,
                     topics=(make(fetch_offsets_by_name.OffsetFetchRequestTopics, name=name,
                                  partition_indexes=(0,)),)),), require_stable=False))
            answers["offset fetch v9, by name"] = [
                (topic.name == name, [(int(p.partition_index), int(p.committed_offset)) for p in topic.partitions])
                for topic in by_name.groups[0].topics]
            dirs = await connection.request(make(describe_log_dirs.DescribeLogDirsRequest, topics=(
                make(describe_log_dirs.DescribableLogDirTopic, topic=name, partitions=(0, 1)),)))
            answers["describe log dirs v5"] = sorted(
                (int(p.partition_index), result.is_cordoned) for result in dirs.results for topic in result.topics
                for p in topic.partitions)
        finally:
            await connection.close()

    asyncio.run(scenario())
    return answers


def test_versions_naming_topics_by_id_answer_as_kafka(bootstrap: str) -> None:
    assert _answers(bootstrap) == {
        "produce v13": {"topic": {0: (NONE, 0), 7: (UNKNOWN_TOPIC_OR_PARTITION, -1)},
                        "unknown": {0: (UNKNOWN_TOPIC_ID, -1)}, "zeros": {0: (UNKNOWN_TOPIC_ID, -1)}},
        "fetch v18": (True, NONE, RECORDS, True),
        "offset commit v10": {"topic": {0: NONE, 9: UNKNOWN_TOPIC_OR_PARTITION}, "unknown": {0: UNKNOWN_TOPIC_ID},
                              "zeros": {0: UNKNOWN_TOPIC_ID}},
        "offset fetch v10, every partition": (NONE, {"topic": {0: (2, "by id", NONE)}}),
        "offset fetch v10, by id": (NONE, {"topic": {0: (2, "by id", NONE), 1: (-1, "", NONE), 9: (-1, "", NONE)},
                                           "unknown": {0: (-1, "", UNKNOWN_TOPIC_ID)}}),
        "offset fetch v9, by name": [(True, [(0, 2)])],
        "describe log dirs v5": [(0, False), (1, False)],
    }
