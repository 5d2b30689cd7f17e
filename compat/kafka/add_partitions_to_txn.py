"""AddPartitionsToTxn (key 24), versions 0-3: partitions join the producer's transaction.

Versions 4-5 (KIP-890: batched, ``verify_only``) are for brokers and for clients of transaction
version 2, which logwright does not finalize, so they are not advertised. An unknown topic or
partition fails with UNKNOWN_TOPIC_OR_PARTITION and the others in the request with
OPERATION_NOT_ATTEMPTED, as Kafka answers; a producer id or epoch that is not current fails every
partition (INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED from v2, INVALID_PRODUCER_EPOCH before).
"""

from __future__ import annotations

import datetime
import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.coordinators.transaction_coordinator import check_not_ending, wire_failure
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError
from logwright.core.log.internal_topics import is_internal_topic
from logwright.core.transactions.transactions import add_partitions

if TYPE_CHECKING:
    from kio.schema.add_partitions_to_txn import v0, v1, v2, v3

    AddPartitionsToTxnRequest: TypeAlias = (
        v0.AddPartitionsToTxnRequest | v1.AddPartitionsToTxnRequest | v2.AddPartitionsToTxnRequest
        | v3.AddPartitionsToTxnRequest
    )
    """Every version served: mypy checks each field read against all of them."""

log = logging.getLogger(__name__)


@handler(24, "AddPartitionsToTxn", 0, 3)
async def handle(context: RequestContext, request: AddPartitionsToTxnRequest) -> Any:
    broker = context.broker
    module = response_module("add_partitions_to_txn", context.api_version)
    requested = [(topic.name, [int(index) for index in topic.partitions]) for topic in request.v3_and_below_topics]
    partition_ids: list[int] = []
    unknown: set[tuple[str, int]] = set()
    denied = {name for name, _ in requested if broker.authorizer is not None and (
        is_internal_topic(name) or not allowed(context, AclOperation.WRITE, ResourceType.TOPIC, name))}
    for name, indexes in requested:
        for index in indexes:
            partition_id = broker.partition_id(name, index)
            if name in denied:
                continue  # TOPIC_AUTHORIZATION_FAILED, before whether it exists (internal topics too), as Kafka
            if partition_id is None:
                unknown.add((name, index))
            else:
                partition_ids.append(partition_id)
    code = ErrorCode.NONE
    if unknown or denied:
        code = ErrorCode.OPERATION_NOT_ATTEMPTED
    else:
        try:
            check_not_ending(broker, request.v3_and_below_transactional_id)
            event = add_partitions(broker.transaction(request.v3_and_below_transactional_id),
                                   int(request.v3_and_below_producer_id), int(request.v3_and_below_producer_epoch),
                                   partition_ids, broker.clock.now_ms())
        except DomainError as error:
            code, message = wire_failure(error, context.api_version, fenced_from_version=2)
            log.info("AddPartitionsToTxn of %r refused with %s: %s", request.v3_and_below_transactional_id,
                     code.name, message)
        else:
            if event is not None:
                broker.stage([event])
                await broker.durable()

    def result(name: str, index: int) -> Any:
        partition_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED if name in denied else \
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if (name, index) in unknown else code
        return make(module.AddPartitionsToTxnPartitionResult, partition_index=index,
                    partition_error_code=partition_code)

    return make(module.AddPartitionsToTxnResponse, throttle_time=datetime.timedelta(0),
                results_by_topic_v3_and_below=tuple(
                    make(module.AddPartitionsToTxnTopicResult, name=name,
                         results_by_partition=tuple(result(name, index) for index in indexes))
                    for name, indexes in requested
                ))
