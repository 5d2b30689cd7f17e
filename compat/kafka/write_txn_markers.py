"""WriteTxnMarkers (key 27), versions 1-2: an admin writes a COMMIT or ABORT marker for a producer (KIP-664).

Kafka's transaction coordinator sends it to partition leaders; its Admin client sends it too, to abort a hanging
transaction (``Admin.abortTransaction``, ``kafka-transactions.sh abort``). logwright's own coordinator writes its
markers in the WriteBatch that ends the transaction, so this key serves the admin's use: each partition named gets
one control batch at the producer id and epoch named, with the named coordinator epoch in its control record, and
the producer's transaction on the partition ends there (its records aborted or committed for READ_COMMITTED
readers, the store's abort index kept) exactly as when the coordinator ends it. The transaction coordinator is not
told, as Kafka's is not: a producer whose transaction was aborted on a partition may go on writing to it, and its
EndTxn ends what it wrote since.

Checks per partition, in Kafka 4.4's order (`KafkaApis.handleWriteTxnMarkersRequest`, `ProducerAppendInfo`):
UNKNOWN_TOPIC_OR_PARTITION; UNKNOWN_SERVER_ERROR for a negative producer id or epoch or a transaction version of
-1 (Kafka's append refuses them); INVALID_PRODUCER_EPOCH for an epoch older than the producer's on the partition
(from transaction version 2 also the same epoch, unless nothing is open there: a retry); TRANSACTION_COORDINATOR_FENCED
for a coordinator epoch older than the producer's last marker's (`producers.check_marker`). Without ALTER or
CLUSTER_ACTION on the cluster every partition is CLUSTER_AUTHORIZATION_FAILED. Answers are grouped by producer id,
then topic, as Kafka's (whose order is a hash map's). Partitions of ``__consumer_offsets`` are answered NONE and get
nothing: logwright keeps transactional offsets in the transaction, which only EndTxn or its timeout ends
(docs/transactions.md).

A partition named twice in one marker gets one marker and one answer (Kafka 4.4 never answers such a request: its
count of appends waits for a second result that the map of partitions cannot hold). Markers are staged
`PARTITIONS_PER_TURN` at a time, each part made durable before the next, and other requests run every
`CHECKED_PER_TURN` partitions named, so a request naming millions of partitions holds no other client for its length.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed_on_cluster
from logwright.compat.broker import Broker
from logwright.compat.coordinators.transaction_coordinator import marker_batch, stage_marker
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import give_way
from logwright.compat.wire.record_batch import BatchHeader, parse_header
from logwright.core.acls.bindings import AclOperation
from logwright.core.errors import DomainError, StorageUnavailable
from logwright.core.log.internal_topics import CONSUMER_OFFSETS
from logwright.core.log.producers import ProducerState, check_marker, producer_key
from logwright.core.transactions.partition_transactions import PartitionTransactions

if TYPE_CHECKING:
    from kio.schema.write_txn_markers import v1, v2

    WriteTxnMarkersRequest: TypeAlias = v1.WriteTxnMarkersRequest | v2.WriteTxnMarkersRequest
    """Every version served: mypy checks each field read against all of them."""

log = logging.getLogger(__name__)

PARTITIONS_PER_TURN = 250
"""Markers staged before the request makes them durable and lets other connections' requests run."""
CHECKED_PER_TURN = 5_000
"""Partitions answered (most of them refused, say unknown) before the request lets other requests run: a request
of 100 MB may name 25 million."""

Answers: TypeAlias = dict[int, dict[str, dict[int, ErrorCode]]]
"""Producer id -> topic -> partition -> error, in the order first named."""


@handler(27, "WriteTxnMarkers", 1, 2)
async def handle(context: RequestContext, request: WriteTxnMarkersRequest) -> Any:
    broker = context.broker
    answers: Answers = {}
    authorized = allowed_on_cluster(context, AclOperation.ALTER) or allowed_on_cluster(
        context, AclOperation.CLUSTER_ACTION)
    staged: list[tuple[int, str, int]] = []
    checked = 0
    for marker in request.markers:
        producer_id, epoch = int(marker.producer_id), int(marker.producer_epoch)
        version = int(getattr(marker, "transaction_version", 0))  # v2 on; v1 markers are transaction version 0
        by_topic = answers.setdefault(producer_id, {})
        marker_bytes: tuple[bytes, BatchHeader] | None = None  # built once a partition takes it
        for topic in marker.topics:
            by_partition = by_topic.setdefault(topic.name, {})
            for index in dict.fromkeys(int(index) for index in topic.partition_indexes):
                checked += 1
                if checked % CHECKED_PER_TURN == 0:
                    await give_way()
                if not authorized:
                    by_partition[index] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    continue
                partition_id = broker.partition_id(topic.name, index)
                code = _refusal(broker, partition_id, producer_id, epoch, int(marker.coordinator_epoch), version)
                if code is None and topic.name != CONSUMER_OFFSETS:
                    assert partition_id is not None
                    if marker_bytes is None:
                        batch = marker_batch(producer_id, epoch, bool(marker.transaction_result),
                                             broker.clock.now_ms(), int(marker.coordinator_epoch))
                        marker_bytes = batch, parse_header(batch)
                    try:
                        with broker.staging_together():
                            stage_marker(broker, partition_id, *marker_bytes, bool(marker.transaction_result),
                                         int(marker.coordinator_epoch))
                    except DomainError as error:  # the store failed: nothing of it was staged
                        code = error_code_for(error)
                    else:
                        staged.append((producer_id, topic.name, index))
                by_partition[index] = code or ErrorCode.NONE
                if len(staged) >= PARTITIONS_PER_TURN:
                    await _made_durable(broker, staged, answers)
    if staged:
        await _made_durable(broker, staged, answers)
    module = response_module("write_txn_markers", context.api_version)
    return make(module.WriteTxnMarkersResponse, markers=tuple(
        make(module.WritableTxnMarkerResult, producer_id=producer_id, topics=tuple(
            make(module.WritableTxnMarkerTopicResult, name=name, partitions=tuple(
                make(module.WritableTxnMarkerPartitionResult, partition_index=index, error_code=code)
                for index, code in partitions.items()))
            for name, partitions in by_topic.items() if partitions))
        for producer_id, by_topic in answers.items() if any(by_topic.values())))  # one naming no partition: none


def _refusal(broker: Broker, partition_id: int | None, producer_id: int, epoch: int, coordinator_epoch: int,
             transaction_version: int) -> ErrorCode | None:
    """Why this partition gets no marker, as Kafka 4.4 checks it; ``None`` to write it."""
    if partition_id is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if producer_id < 0 or epoch < 0 or transaction_version == -1:
        return ErrorCode.UNKNOWN_SERVER_ERROR
    state = broker.store.state("producers", producer_key(partition_id, producer_id))
    transactions = broker.store.state("partition_transactions", str(partition_id))
    transaction_open = isinstance(transactions, PartitionTransactions) and any(
        entry.producer_id == producer_id for entry in transactions.open)
    try:
        check_marker(state if isinstance(state, ProducerState) else None, transaction_open, epoch, coordinator_epoch,
                     transaction_version)
    except DomainError as error:
        log.info("WriteTxnMarkers refused for producer %d on partition %d: %s", producer_id, partition_id, error)
        return error_code_for(error)
    return None


async def _made_durable(broker: Broker, staged: list[tuple[int, str, int]], answers: Answers) -> None:
    """Wait for the staged markers' commit; should it fail, their partitions answer the store's error."""
    try:
        await broker.durable()
    except StorageUnavailable as error:
        for producer_id, name, index in staged:
            answers[producer_id][name][index] = error_code_for(error)
    staged.clear()
