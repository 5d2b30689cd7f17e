"""DescribeProducers (key 61), version 0: the producers a partition knows, for finding hanging transactions.

Each idempotent or transactional producer that appended to the partition is listed with its epoch and
last sequence (the ``producers`` projection) and, when its transaction is open on the partition, the
transaction's first offset (``partition_transactions``), as ``kafka-transactions.sh find-hanging`` reads
it, with the last batch's or marker's timestamp and the last marker's coordinator epoch (-1 before one), as Kafka
keeps them. A row stored before logwright kept those two answers -1 until the producer's next batch. A partition named
again is described again, as Kafka does, from the first answer's bytes (`answered_once`). A name no topic may have
is INVALID_TOPIC_EXCEPTION with Kafka's words, before authorization, as Kafka 4.4 checks it.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import answered_once_in_turns
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.log.catalog import topic_name_problem
from logwright.core.log.producers import ProducerState
from logwright.core.transactions.partition_transactions import PartitionTransactions

if TYPE_CHECKING:
    from kio.schema.describe_producers import v0

    DescribeProducersRequest: TypeAlias = v0.DescribeProducersRequest
    """Every version served: mypy checks each field read against all of them."""


UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
"""Kafka's message for UNKNOWN_TOPIC_OR_PARTITION, which it sends for a topic it does not have."""


@handler(61, "DescribeProducers", 0, 0)
async def handle(context: RequestContext, request: DescribeProducersRequest) -> Any:
    broker = context.broker
    module = response_module("describe_producers", context.api_version)
    asked = [(str(topic.name), int(index)) for topic in request.topics for index in topic.partition_indexes]
    partition_ids = {name: broker.partition_id(*name) for name in asked}  # the producers read only where allowed
    producers = _producers(broker, {each for each in partition_ids.values() if each is not None})

    invalid = {topic: topic_name_problem(topic) for topic, _ in asked}
    readable = {topic: invalid[topic] is not None or allowed(context, AclOperation.READ, ResourceType.TOPIC, topic)
                for topic, _ in asked}

    def describe(name: tuple[str, int]) -> Any:
        partition_id = partition_ids[name]
        if (problem := invalid[name[0]]) is not None:  # before authorization, as Kafka 4.4
            return make(module.PartitionResponse, partition_index=name[1],
                        error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, active_producers=(), error_message=problem)
        if not readable[name[0]]:  # before whether it exists, as Kafka
            return make(module.PartitionResponse, partition_index=name[1],
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, active_producers=(),
                        error_message="Topic authorization failed.")
        if partition_id is None:  # Kafka 4.4 gives a message for an unknown topic, none for an unknown partition
            return make(module.PartitionResponse, partition_index=name[1],
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, active_producers=(),
                        error_message=None if broker.topic(name[0]) is not None else UNKNOWN_TOPIC_MESSAGE)
        return make(module.PartitionResponse, partition_index=name[1], error_code=ErrorCode.NONE,
                    error_message=None, active_producers=tuple(
                        make(module.ProducerState, producer_id=producer_id, producer_epoch=epoch,
                             last_sequence=sequence, last_timestamp=timestamp, coordinator_epoch=coordinator_epoch,
                             current_txn_start_offset=start)
                        for producer_id, epoch, sequence, timestamp, coordinator_epoch, start
                        in producers.get(partition_id, ())))

    answers = iter(await answered_once_in_turns(asked, describe))
    return make(module.DescribeProducersResponse, throttle_time=datetime.timedelta(0), topics=tuple(
        make(module.TopicResponse, name=topic.name,
             partitions=tuple(next(answers) for _ in topic.partition_indexes))
        for topic in request.topics))


Described: TypeAlias = tuple[int, int, int, int, int, int]
"""A producer as described: id, epoch, last sequence, last timestamp, coordinator epoch, open transaction's first
offset (or -1)."""


def _producers(broker: Broker, partition_ids: set[int]) -> dict[int, list[Described]]:
    """Per partition of ``partition_ids``: each producer as `Described`, by producer id. One pass over the producers
    for the whole request (a pass per partition named made a request of 10,000 partitions beside 10,000 producers
    hold every client for seconds)."""
    found: dict[int, list[Described]] = {}
    if not partition_ids:
        return found
    for key, state in broker.store.entities("producers").items():
        partition, _, producer = key.partition("/")
        if isinstance(state, ProducerState) and partition.isdecimal() and int(partition) in partition_ids:
            last_sequence = state.recent[-1].last_sequence if state.recent else -1
            found.setdefault(int(partition), []).append((int(producer), state.producer_epoch, last_sequence,
                                                         state.last_timestamp, state.coordinator_epoch, -1))
    for partition_id, listed in found.items():
        transactions = broker.store.state("partition_transactions", str(partition_id))
        if isinstance(transactions, PartitionTransactions):
            open_at = {entry.producer_id: entry.first_offset for entry in transactions.open}
            listed[:] = [(*described[:5], open_at.get(described[0], -1)) for described in listed]
        listed.sort()
    return found
