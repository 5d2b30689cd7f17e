"""Produce (key 0), versions 3-13: RecordBatch v2 only, stored as received with the base offset patched.

Older versions (the v0/v1 message formats) close the connection (`fallback`), as Kafka 4 does, though ApiVersions
names Produce from 0 as Kafka 4.x does (KAFKA-18659: librdkafka before its fix, Debian's kcat among them, sends
uncompressed batches to a broker whose Produce range lacks 0-2; `registry.handler`). v13 names topics by
id (KIP-516): an id no topic has is UNKNOWN_TOPIC_ID for each of its partitions, before any authorization (there is
no name to check), as Kafka 4.4 answers it. A client's
partition bytes are read as Kafka reads them (`produced_batches`): one whole RecordBatch v2, bytes after it that are
no whole batch dropped; a partition named twice is appended once, with the last batch named. The batch is validated
(CRC32C, size, then what Kafka's LogValidator checks: base offset 0, the header, every record read: `record_check`,
producer sequence) and appended whole, or not at all, as Kafka does; a LogValidator refusal carries the partition's
log start offset, and records refused one by one (timestamps, keys of a compacted topic) are named in
``record_errors`` with Kafka's messages (tests/integration/test_produce_checks.py runs on both).

From v12 (transaction version 2, KIP-890 part 2) a transactional batch adds its partition to the transaction the
request names, as Kafka 4.4's leader has its coordinator add it: a producer id or epoch that is not that
transaction's is INVALID_PRODUCER_ID_MAPPING or INVALID_PRODUCER_EPOCH. Before v12 the partition must have been
added (AddPartitionsToTxn), else TRANSACTION_ABORTABLE (v11) or INVALID_TXN_STATE.

``acks=0`` gets no answer, and when a partition of it fails its connection closes (`CloseConnection`), as Kafka
tells such a producer; ``acks=1`` and ``-1`` are
answered once the WriteBatch holding the records is written under the store's durability setting
(there is one replica, so both mean the same); a request of more than `PARTITIONS_PER_TURN` partitions is
validated, then staged and committed, that many at a time, other requests running in between. Topics with
``message.timestamp.type=LogAppendTime`` get the broker's time written into the batch header, with the CRC
recomputed. Internal topics
(``__consumer_offsets``) refuse records with INVALID_TOPIC_EXCEPTION, as Kafka does.

Plugins may refuse partitions before anything is written (``logwright_admit_append``, resolved once
into `Broker.admission`): every partition is validated first, the plugins see the request's counts
and sizes once, and only the admitted partitions are appended. Without such a plugin, or for topics
outside the scopes the plugins declare (`Broker.admission_applies`), no request is built. A plugin
that raises refuses every partition it was asked about (UNKNOWN_SERVER_ERROR), so a broken quota
plugin never lets data through unchecked. A partition refused with `AppendHeld` is held instead: the
request waits and the plugins are asked again after each commit, up to the request's timeout
(`produce_hold`).
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

from logwright.compat.appends import PartitionResult, Prepared, admit, prepare_partition, stage_partition, topic_limits
from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.client_quota_enforcement import PRODUCE
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.kafka.produce_hold import Hold
from logwright.compat.registry import CloseConnection, RequestContext, handler, has_field, make, response_module
from logwright.compat.turns import give_way
from logwright.compat.wire import record_check
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import (
    StorageUnavailable,
)
from logwright.core.keys.dedup import Deduplication
from logwright.core.log.catalog import TopicState

if TYPE_CHECKING:
    from kio.schema.produce import v3, v4, v5, v6, v7, v8, v9, v10, v11, v12, v13

    ProduceRequest: TypeAlias = (
        v3.ProduceRequest | v4.ProduceRequest | v5.ProduceRequest | v6.ProduceRequest | v7.ProduceRequest
        | v8.ProduceRequest | v9.ProduceRequest | v10.ProduceRequest | v11.ProduceRequest | v12.ProduceRequest
        | v13.ProduceRequest
    )
    """Every version served: mypy checks each field read against all of them."""

log = logging.getLogger(__name__)

ABORTABLE_FROM_VERSION = 11
"""Produce v11+ clients (KIP-890) get TRANSACTION_ABORTABLE for a transactional write to a partition their
transaction did not add, as Kafka 4.4 answers them; older ones INVALID_TXN_STATE."""

TRANSACTION_VERSION_2_FROM = 12
"""Produce v12+ is a transaction version 2 client's (KIP-890 part 2): a transactional batch adds its partition to the
request's transaction itself (`appends.join_transaction`), with no AddPartitionsToTxn before it."""

PARTITIONS_PER_TURN = 250
"""Partitions a Produce request validates, then stages and commits, before it lets other connections' requests run:
a request of 10,000 one-batch partitions held every client for its whole length. Kafka does not write a request's
partitions as one either; each partition's batches are appended whole, and a part whose commit failed is answered
so."""


INFLATED_PER_TURN = 64 * 1024 * 1024
"""Bytes of compressed records inflated to be checked before the request gives way, whatever the partitions
counted: a batch may inflate to 64 MiB (40 ms of zstd), and 250 partitions of one each were 10 s in one stretch."""


@handler(0, "Produce", 3, 13, at_once=True, advertised_min_version=0)  # 0: see `registry.handler`
async def handle(context: RequestContext, request: ProduceRequest) -> Any:
    broker = context.broker
    acks = int(request.acks)
    outcomes: list[tuple[TopicKey, list[tuple[int, PartitionResult | Prepared]]]] = []
    checked = 0
    inflated_at = record_check.inflated_bytes
    last_named = _named_twice(request.topic_data)
    for topic_data in request.topic_data:
        key = _topic_key(topic_data)
        topic = _topic(broker, key)
        name = topic.name if topic is not None else key if isinstance(key, str) else None
        writable = name is not None and allowed(context, AclOperation.WRITE, ResourceType.TOPIC, name)
        limits = topic_limits(broker, topic) if topic is not None else None
        partitions: list[tuple[int, PartitionResult | Prepared]] = []
        for partition_data in topic_data.partition_data:
            if last_named is not None:  # a partition named twice: once, where first named, with the last batch
                partition_data = last_named.pop((key, int(partition_data.index)), None)
                if partition_data is None:
                    continue
            checked += 1
            if checked % PARTITIONS_PER_TURN == 0 or record_check.inflated_bytes - inflated_at >= INFLATED_PER_TURN:
                inflated_at = record_check.inflated_bytes
                await give_way()
                topic = _topic(broker, key)  # looked up again: it may be gone (staging checks each)
                limits = topic_limits(broker, topic) if topic is not None else None
            index = int(partition_data.index)
            if isinstance(key, _ById) and topic is None:  # no name to authorize: Kafka 4.4 says only this
                partitions.append((index, _UNKNOWN_TOPIC_ID))
            elif not writable:  # before whether the topic exists, as Kafka: a client denied it learns nothing more
                partitions.append((index, _NOT_AUTHORIZED))
            elif acks not in (0, 1, -1):
                message = f"acks={acks} is not 0, 1 or -1"
                partitions.append((index, PartitionResult(ErrorCode.INVALID_REQUIRED_ACKS, error_message=message)))
            else:
                partitions.append((index, prepare_partition(broker, topic, index, partition_data.records, limits,
                                                            one_batch=True, produce_version=context.api_version)))
        if partitions or not topic_data.partition_data:
            outcomes.append((key, partitions))
    prepared = [item for _, partitions in outcomes for _, item in partitions if isinstance(item, Prepared)]
    if request.transactional_id is None and any(header.is_transactional for item in prepared
                                                for _, header in item.batches):
        outcomes = [(name, [(index, _UNNAMED_TRANSACTION) for index, _ in partitions])
                    for name, partitions in outcomes]
        prepared = []
    refused, deduplicated = admit(broker, context, prepared)

    def ask_again(held: list[Prepared]) -> dict[int, PartitionResult]:
        again, more = admit(broker, context, held)
        deduplicated.update(more)
        return again

    hold: Hold[Prepared, PartitionResult] = Hold()
    refused = await hold.settle(broker, prepared, lambda item: item.partition_id, refused, lambda r: r.error_code,
                                ask_again, _milliseconds(request.timeout))
    joining = request.transactional_id if context.api_version >= TRANSACTION_VERSION_2_FROM else None
    every = [item for _, partitions in outcomes for _, item in partitions] if checked > PARTITIONS_PER_TURN else None
    answered: list[PartitionResult] = []
    for start in range(0, len(every) if every is not None else 1, PARTITIONS_PER_TURN):
        appended = False
        with broker.staging_together():
            part = every[start : start + PARTITIONS_PER_TURN] if every is not None else (
                item for _, partitions in outcomes for _, item in partitions)  # one part: no list built
            for item in part:
                if isinstance(item, Prepared):
                    item = refused.get(item.partition_id) or _stage_if_there(
                        broker, item, deduplicated.get(item.partition_id), joining)
                    appended = appended or item.error_code == ErrorCode.NONE
                answered.append(item)
        if appended and acks != 0:  # each part's commit lets other requests run, and says what it wrote
            try:
                await broker.durable()
            except StorageUnavailable as error:  # the commit failed and dropped this part's appends
                answered[start:] = [_storage_failed(result, error) for result in answered[start:]]
        elif every is not None and start + PARTITIONS_PER_TURN < len(every):
            await give_way()
    throttle_ms = hold.throttle_ms
    if broker.client_quotas.producing:  # Kafka's producer byte-rate quota: the request's bytes, whatever became of it
        throttle_ms = max(throttle_ms, broker.client_quotas.record(PRODUCE, context.client_id, context.connection_id,
                                                                   context.request_bytes, context.principal))
    if acks == 0:
        if any(result.error_code != ErrorCode.NONE for result in answered):
            raise CloseConnection("an acks=0 produce request failed; as Kafka, the connection closes to say so")
        return None
    if context.api_version >= ABORTABLE_FROM_VERSION:
        answered = [result._replace(error_code=ErrorCode.TRANSACTION_ABORTABLE) if result.abortable else result
                    for result in answered]
    answers = iter(answered)
    results = [(name, [(index, next(answers)) for index, _ in partitions]) for name, partitions in outcomes]
    module = response_module("produce", context.api_version)
    return make(
        module.ProduceResponse,
        responses=tuple(
            make(module.TopicProduceResponse, **_topic_field(key), partition_responses=tuple(
                _partition_response(module, index, result) for index, result in partitions
            ))
            for key, partitions in results
        ),
        throttle_time=datetime.timedelta(milliseconds=throttle_ms),
    )


class _ById(NamedTuple):
    """A topic as v13 names it (KIP-516): its id, ``None`` for all zeros (kio's reading of the null id)."""

    topic_id: uuid.UUID | None


TopicKey: TypeAlias = "str | _ById"
"""A topic as the request names it: by name (v3-v12) or by id (v13), and so its answer."""


def _topic_key(topic_data: Any) -> TopicKey:
    return _ById(topic_data.topic_id) if has_field(topic_data, "topic_id") else str(topic_data.name)


def _topic(broker: Broker, key: TopicKey) -> TopicState | None:
    if isinstance(key, _ById):
        return broker.topic_by_id(key.topic_id) if key.topic_id is not None else None
    return broker.topic(key)


def _topic_field(key: TopicKey) -> dict[str, Any]:
    return {"topic_id": key.topic_id} if isinstance(key, _ById) else {"name": key}


def _named_twice(topic_data: Any) -> dict[tuple[TopicKey, int], Any] | None:
    """Each partition's data as last named, when the request names a partition more than once (else ``None``):
    Kafka takes a request's partitions as a map, so the last batch named is the one appended, answered once."""
    if len(topic_data) == 1 and len(topic_data[0].partition_data) == 1:
        return None
    last = {(key, int(partition.index)): partition
            for topic in topic_data for key in (_topic_key(topic),) for partition in topic.partition_data}
    return last if len(last) < sum(len(topic.partition_data) for topic in topic_data) else None


_UNKNOWN_TOPIC_ID = PartitionResult(ErrorCode.UNKNOWN_TOPIC_ID)
"""A partition of a topic id no topic has (v13): Kafka 4.4 answers only that, whatever the principal may do."""

_NOT_AUTHORIZED = PartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
"""A partition of a topic the principal may not WRITE (with an authorizer, `compat.authorization`)."""

_UNNAMED_TRANSACTION = PartitionResult(
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    error_message="transactional records in a request naming no transactional id")
"""Every partition's answer to a request carrying transactional batches but no transactional id: Kafka 4.4 refuses
the whole request so (it cannot authorize a transaction it cannot name), and so nothing of it is written."""


def _stage_if_there(broker: Broker, prepared: Prepared, deduplication: Deduplication | None,
                    joining: str | None) -> PartitionResult:
    """`stage_partition`, unless the partition went while a request of many partitions gave way (its topic deleted)."""
    if not broker.partition_exists(prepared.partition_id):
        return PartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown topic or partition")
    return stage_partition(broker, prepared, deduplication, joining)


def _milliseconds(timeout: datetime.timedelta | int) -> int:
    return int(timeout.total_seconds() * 1000) if isinstance(timeout, datetime.timedelta) else int(timeout)


def _storage_failed(result: PartitionResult, error: StorageUnavailable) -> PartitionResult:
    if result.error_code != ErrorCode.NONE:
        return result
    return PartitionResult(error_code_for(error), error_message=str(error))


def _partition_response(module: Any, index: int, result: PartitionResult) -> Any:
    """One partition's answer; the records a refusal names go in ``record_errors`` from v8, which brought it."""
    append_time = (
        datetime.datetime.fromtimestamp(result.log_append_time / 1000, tz=datetime.UTC)
        if result.log_append_time >= 0 else None
    )
    return make(module.PartitionProduceResponse, index=index, error_code=result.error_code,
                base_offset=result.base_offset, log_append_time=append_time,
                log_start_offset=result.log_start_offset, error_message=result.error_message,
                record_errors=tuple(make(module.BatchIndexAndErrorMessage, batch_index=position,
                                         batch_index_error_message=message)
                                    for position, message in result.record_errors)
                if result.record_errors and has_field(module.PartitionProduceResponse, "record_errors") else ())
