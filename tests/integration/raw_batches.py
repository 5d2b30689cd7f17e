"""Topics filled with raw RecordBatches over a bare connection, so the tests know every stored batch's size and
boundaries (a client library would batch and compress as it likes)."""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.produce.v9 import request as produce
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record


def fill_topic(bootstrap: str, topic: str, batches: int, records: int, record_bytes: int) -> None:
    """A new one-partition ``topic`` holding ``batches`` stored batches of ``records`` records of
    ``record_bytes`` each."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(30)

    async def run() -> None:
        connection = await Connection.open(bootstrap, "limits")
        now = int(time.time() * 1000)
        for _ in range(batches):
            request = produce_request(topic, build_batch([Record(0, now, None, b"x" * record_bytes)] * records))
            deadline = time.monotonic() + 30
            while (code := await _produced(connection, request)) in RETRIABLE and time.monotonic() < deadline:
                await asyncio.sleep(0.1)  # Kafka right after CreateTopics: the partition's leader is not known yet
            assert code == 0, f"produce to {topic}: error code {code}"
        await connection.close()

    asyncio.run(run())


RETRIABLE = (3, 5, 6)
"""UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER: what a client retries."""


async def _produced(connection: Connection, request: Any) -> int:
    response = await connection.request(request)
    return int(response.responses[0].partition_responses[0].error_code)


def produce_request(topic: str, batch: bytes) -> Any:
    """Produce v9 of one batch to partition 0, acks=-1."""
    return make(produce.ProduceRequest, transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30),
                topic_data=(make(produce.TopicProduceData, name=topic, partition_data=(
                    make(produce.PartitionProduceData, index=0, records=batch),)),))
