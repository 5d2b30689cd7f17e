"""DescribeTransactions (key 65), version 0: the coordinator's view of transactional ids (kafka-transactions.sh).

An unknown id answers TRANSACTIONAL_ID_NOT_FOUND, an empty one INVALID_REQUEST, the other fields at their defaults
(0), as Kafka 4.4. The start time is -1 unless a transaction is ongoing (Kafka keeps a finished transaction's start;
logwright does not);
partitions are named by topic and index (a partition of a topic deleted meanwhile is left out). An id named
again is answered again, as Kafka does, from the first answer's bytes (`answered_once`).
"""

from __future__ import annotations

import datetime
from collections import defaultdict
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import answered_once_in_turns
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.transactions.transactions import TransactionState

if TYPE_CHECKING:
    from kio.schema.describe_transactions import v0

    DescribeTransactionsRequest: TypeAlias = v0.DescribeTransactionsRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(65, "DescribeTransactions", 0, 0)
async def handle(context: RequestContext, request: DescribeTransactionsRequest) -> Any:
    broker = context.broker
    module = response_module("describe_transactions", context.api_version)

    def describe(transactional_id: str) -> Any:
        state = broker.transaction(transactional_id) if transactional_id else None
        if state is None:  # the fields Kafka 4.4 leaves at their defaults
            code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND if transactional_id else ErrorCode.INVALID_REQUEST
            return make(module.TransactionState, error_code=code, transactional_id=transactional_id,
                        transaction_state="", transaction_timeout=datetime.timedelta(0), transaction_start_time=0,
                        producer_id=0, producer_epoch=0, topics=())
        return make(
            module.TransactionState, error_code=ErrorCode.NONE, transactional_id=transactional_id,
            transaction_state=state.status, transaction_timeout=datetime.timedelta(milliseconds=state.timeout_ms),
            transaction_start_time=state.started_ms,  # a finished one's last start, as Kafka 4.4 answers
            producer_id=state.producer_id, producer_epoch=state.producer_epoch,
            topics=tuple(make(module.TopicData, topic=topic, partitions=tuple(indexes))
                         for topic, indexes in _partitions(broker, state).items()
                         if allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)),
        )

    if broker.authorizer is None:
        return make(module.DescribeTransactionsResponse, throttle_time=datetime.timedelta(0),
                    transaction_states=await answered_once_in_turns(request.transactional_ids, describe))
    # with an authorizer, as Kafka: the ids the principal may not DESCRIBE first, refused; the others' partitions
    # only of topics it may DESCRIBE
    described = [each for each in request.transactional_ids
                 if allowed(context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, each)]
    refused = tuple(make(module.TransactionState, error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                         transactional_id=each, transaction_state="", transaction_timeout=datetime.timedelta(0),
                         transaction_start_time=0, producer_id=0, producer_epoch=0, topics=())
                    for each in request.transactional_ids
                    if not allowed(context, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, each))
    return make(module.DescribeTransactionsResponse, throttle_time=datetime.timedelta(0), transaction_states=(
        *refused, *await answered_once_in_turns(described, describe)))


def _partitions(broker: Broker, state: TransactionState) -> dict[str, list[int]]:
    """The transaction's partitions by topic name (names in order, indexes ascending), each looked up: a search
    of every topic's partitions per transaction grew with the ids asked times the broker's partitions."""
    found: dict[str, list[int]] = defaultdict(list)
    for partition_id in state.partition_ids:
        located = broker.topic_of_partition(partition_id)
        if located is not None:
            found[located[0].name].append(located[1])
    return {name: sorted(found[name]) for name in sorted(found)}
