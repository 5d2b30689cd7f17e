"""DescribeProducers (key 61), version 0: the producers a partition knows, for finding hanging transactions.

Each idempotent or transactional producer that appended to the partition is listed with its epoch and
last sequence (the ``producers`` projection) and, when its transaction is open on the partition, the
transaction's first offset (``partition_transactions``), as ``kafka-transactions.sh find-hanging`` reads
it. The last timestamp is not kept (-1); the coordinator epoch is 0, this broker's only one.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.log.producers import ProducerState
from logwright.core.transactions.partition_transactions import PartitionTransactions

if TYPE_CHECKING:
    from kio.schema.describe_producers import v0

    DescribeProducersRequest: TypeAlias = v0.DescribeProducersRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(61, "DescribeProducers", 0, 0)
async def handle(context: RequestContext, request: DescribeProducersRequest) -> Any:
    broker = context.broker
    module = response_module("describe_producers", context.api_version)
    topics = []
    for topic in request.topics:
        partitions = []
        for index in topic.partition_indexes:
            partition_id = broker.partition_id(topic.name, int(index))
            if partition_id is None:
                partitions.append(make(module.PartitionResponse, partition_index=index,
                                       error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                       error_message=f"unknown topic or partition {topic.name}-{index}",
                                       active_producers=()))
                continue
            partitions.append(make(module.PartitionResponse, partition_index=index, error_code=ErrorCode.NONE,
                                   error_message=None, active_producers=tuple(
                                       make(module.ProducerState, producer_id=producer_id, producer_epoch=epoch,
                                            last_sequence=sequence, last_timestamp=-1, coordinator_epoch=0,
                                            current_txn_start_offset=start)
                                       for producer_id, epoch, sequence, start in _producers(broker, partition_id))))
        topics.append(make(module.TopicResponse, name=topic.name, partitions=tuple(partitions)))
    return make(module.DescribeProducersResponse, throttle_time=datetime.timedelta(0), topics=tuple(topics))


def _producers(broker: Broker, partition_id: int) -> list[tuple[int, int, int, int]]:
    """``(producer id, epoch, last sequence, open transaction's first offset or -1)``, by producer id."""
    transactions = broker.store.state("partition_transactions", str(partition_id))
    open_at = {entry.producer_id: entry.first_offset for entry in transactions.open} \
        if isinstance(transactions, PartitionTransactions) else {}
    prefix = f"{partition_id}/"
    found = []
    for key, state in broker.store.entities("producers").items():
        if key.startswith(prefix) and isinstance(state, ProducerState):
            producer_id = int(key[len(prefix):])
            last_sequence = state.recent[-1].last_sequence if state.recent else -1
            found.append((producer_id, state.producer_epoch, last_sequence, open_at.get(producer_id, -1)))
    return sorted(found)
