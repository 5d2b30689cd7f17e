"""ShareFetch goes round a share session's partitions fairly, whatever else the connection carries.

franz-go's TestShareGroupETL stalled under load: its consumers send a ShareAcknowledge or a heartbeat between
ShareFetches on the same connection, and the broker started each acquisition round at ``correlation id %
partitions``, so the ShareFetches of a connection always started on the same partitions; once those had a
backlog that filled every fetch's ``max_records``, the others were never served. Here two backlogged
partitions are fetched with a Metadata request between ShareFetches: each fetch must serve the partition the
previous one did not.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.produce.v9 import request as produce
from kio.schema.share_fetch.v1 import request as fetch_v1
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record

from .group_configs import set_group_configs
from .test_share_fetch_limits import join

PARTITIONS, BATCHES, PER_BATCH = 2, 4, 5


async def fill(connection: Connection, topic: str) -> None:
    """``BATCHES`` stored batches of ``PER_BATCH`` records on every partition."""
    now = int(time.time() * 1000)
    for _ in range(BATCHES):
        response = await connection.request(make(
            produce.ProduceRequest, transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
            topic_data=(make(produce.TopicProduceData, name=topic, partition_data=tuple(
                make(produce.PartitionProduceData, index=index,
                     records=build_batch([Record(0, now, None, b"r") for _ in range(PER_BATCH)]))
                for index in range(PARTITIONS))),)))
        assert all(p.error_code == 0 for p in response.responses[0].partition_responses)


async def fetch(connection: Connection, group: str, member: str, topic_id: uuid.UUID, epoch: int) -> list[int]:
    """One ShareFetch of at most one batch (the session names both partitions at epoch 0): the partitions
    it acquired from."""
    topics = (make(fetch_v1.FetchTopic, topic_id=topic_id, partitions=tuple(
        make(fetch_v1.FetchPartition, partition_index=index, acknowledgement_batches=())
        for index in range(PARTITIONS))),) if epoch == 0 else ()
    answer: Any = await connection.request(make(
        fetch_v1.ShareFetchRequest, group_id=group, member_id=member, share_session_epoch=epoch,
        max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=10**6, max_records=PER_BATCH, batch_size=PER_BATCH,
        topics=topics, forgotten_topics_data=()))
    assert answer.error_code == 0, answer.error_message
    return [int(p.partition_index) for t in answer.responses for p in t.partitions if p.acquired_records]


def test_share_fetches_alternate_between_backlogged_partitions(shared_broker: Any) -> None:
    bootstrap = shared_broker.bootstrap
    topic, group = f"rotation-{uuid.uuid4().hex[:8]}", f"rotation-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS)])[topic].result(30)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})

    async def scenario() -> list[list[int]]:
        connection = await Connection.open(bootstrap, "rotation")
        try:
            await fill(connection, topic)
            member, topic_id = await join(connection, group, topic)
            served = []
            for epoch in range(BATCHES):
                served.append(await fetch(connection, group, member, topic_id, epoch))
                await connection.request(make(MetadataRequest, topics=(), allow_auto_topic_creation=False,
                                              include_topic_authorized_operations=False))
            return served
        finally:
            await connection.close()

    served = asyncio.run(asyncio.wait_for(scenario(), 120))
    assert all(len(partitions) == 1 for partitions in served), served
    assert [partitions[0] for partitions in served] in ([0, 1, 0, 1], [1, 0, 1, 0]), served
