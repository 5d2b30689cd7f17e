"""Produce (key 0), versions 3-12: RecordBatch v2 only, stored as received with the base offset patched.

Older versions (the v0/v1 message formats) are answered UNSUPPORTED_VERSION by `fallback`. A
partition's batches are validated together (magic, CRC32C, size, record count, producer sequence) and
appended together, or not at all, as Kafka does. ``acks=0`` gets no answer; ``acks=1`` and ``-1`` are
answered once the WriteBatch holding the records is written under the store's durability setting
(there is one replica, so both mean the same). Topics with ``message.timestamp.type=LogAppendTime``
get the broker's time written into the batch header, with the CRC recomputed. Internal topics
(``__consumer_offsets``) refuse records with INVALID_TOPIC_EXCEPTION, as Kafka does.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from logwright.core.catalog import TopicState
from logwright.core.errors import DomainError
from logwright.core.events import Event, RecordsAppended
from logwright.core.internal_topics import refuse_append
from logwright.core.partition_log import append_batch
from logwright.core.producers import Duplicate, ProducerState, check_sequence, producer_key
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.keys import time_index_key

from .broker import Broker
from .errors import ErrorCode, error_code_for
from .record_batch import (
    BatchHeader,
    CorruptBatch,
    UnsupportedMessageFormat,
    iter_batches,
    parse_header,
    verify_crc,
    with_base_offset,
    with_log_append_time,
)
from .registry import RequestContext, handler, make, response_module


@dataclass(frozen=True, slots=True)
class PartitionResult:
    error_code: ErrorCode
    base_offset: int = -1
    log_start_offset: int = -1
    log_append_time: int = -1
    error_message: str | None = None


@handler(0, "Produce", 3, 12)
async def handle(context: RequestContext, request: Any) -> Any:
    broker = context.broker
    acks = int(request.acks)
    results: list[tuple[str, list[tuple[int, PartitionResult]]]] = []
    appended = False
    for topic_data in request.topic_data:
        topic = broker.topic(topic_data.name)
        partition_results = []
        for partition_data in topic_data.partition_data:
            if acks not in (0, 1, -1):
                message = f"acks={acks} is not 0, 1 or -1"
                result = PartitionResult(ErrorCode.INVALID_REQUIRED_ACKS, error_message=message)
            else:
                result = produce_partition(broker, topic, int(partition_data.index), partition_data.records)
                appended = appended or result.error_code == ErrorCode.NONE
            partition_results.append((int(partition_data.index), result))
        results.append((topic_data.name, partition_results))
    if acks == 0:
        return None
    if appended:
        await broker.durable()
    module = response_module("produce", context.api_version)
    return make(
        module.ProduceResponse,
        responses=tuple(
            make(module.TopicProduceResponse, name=name, partition_responses=tuple(
                _partition_response(module, index, result) for index, result in partitions
            ))
            for name, partitions in results
        ),
        throttle_time=datetime.timedelta(0),
    )


def _partition_response(module: Any, index: int, result: PartitionResult) -> Any:
    append_time = (
        datetime.datetime.fromtimestamp(result.log_append_time / 1000, tz=datetime.UTC)
        if result.log_append_time >= 0 else None
    )
    return make(module.PartitionProduceResponse, index=index, error_code=result.error_code,
                base_offset=result.base_offset, log_append_time=append_time,
                log_start_offset=result.log_start_offset, record_errors=(), error_message=result.error_message)


def produce_partition(broker: Broker, topic: TopicState | None, index: int, records: bytes | None) -> PartitionResult:
    """Validate and stage one partition's batches; the caller awaits durability before answering."""
    if topic is None or not 0 <= index < len(topic.partition_ids):
        return PartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown topic or partition")
    if not records:
        return PartitionResult(ErrorCode.INVALID_RECORD, error_message="the produce request carries no records")
    try:
        refuse_append(topic.name)
    except DomainError as error:
        return PartitionResult(error_code_for(error), error_message=str(error))
    partition_id = topic.partition_ids[index]
    max_message_bytes = int(broker.topic_config(topic, "max.message.bytes") or 1048588)
    log_append_time = broker.topic_config(topic, "message.timestamp.type") == "LogAppendTime"
    try:
        batches = [(batch, parse_header(batch)) for batch in iter_batches(records)]
    except UnsupportedMessageFormat as error:
        return PartitionResult(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, error_message=str(error))
    except CorruptBatch as error:
        return PartitionResult(ErrorCode.CORRUPT_MESSAGE, error_message=str(error))
    for data, header in batches:
        problem = _validate(data, header, max_message_bytes)
        if problem is not None:
            return problem
    now = broker.clock.now_ms() if log_append_time else -1
    first_offset: int | None = None
    try:
        for data, header in batches:
            outcome = _stage_batch(broker, partition_id, data, header, now)
            if first_offset is None:
                first_offset = outcome
    except DomainError as error:
        return PartitionResult(error_code_for(error), error_message=str(error))
    state = broker.partition(partition_id)
    return PartitionResult(ErrorCode.NONE, first_offset if first_offset is not None else -1,
                           state.log_start_offset, now)


def _validate(data: memoryview, header: BatchHeader, max_message_bytes: int) -> PartitionResult | None:
    if len(data) > max_message_bytes:
        return PartitionResult(ErrorCode.MESSAGE_TOO_LARGE,
                               error_message=f"a {len(data)}-byte batch is over max.message.bytes={max_message_bytes}")
    if not verify_crc(data):
        return PartitionResult(ErrorCode.CORRUPT_MESSAGE, error_message="the batch's CRC32C does not match its bytes")
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        return PartitionResult(ErrorCode.INVALID_RECORD,
                               error_message=f"record count {header.record_count} does not match the last "
                                             f"offset delta {header.last_offset_delta}")
    if header.is_control:
        return PartitionResult(ErrorCode.INVALID_RECORD, error_message="clients may not produce control batches")
    return None


def _stage_batch(
    broker: Broker, partition_id: int, data: memoryview | bytes, header: BatchHeader, append_time: int
) -> int:
    """Stage one batch; returns its base offset (the original one for a duplicate retry).

    ``data`` is a view into the request: the one copy made is the stored batch, with its offset patched.
    """
    if header.producer_id >= 0 and header.base_sequence >= 0:
        producer_state = broker.store.state("producers", producer_key(partition_id, header.producer_id))
        verdict = check_sequence(
            producer_state if isinstance(producer_state, ProducerState) else None,
            header.producer_epoch, header.base_sequence, header.record_count,
        )
        if isinstance(verdict, Duplicate):
            return verdict.base_offset
    state = broker.partition(partition_id)
    max_timestamp = append_time if append_time >= 0 else header.max_timestamp
    event: RecordsAppended = append_batch(
        state, header.record_count, len(data), max_timestamp, header.producer_id, header.producer_epoch,
        header.base_sequence, header.is_transactional,
    )
    if append_time >= 0:
        data = with_log_append_time(data, append_time)
    stored = StoredBatch(partition_id, event.base_offset, with_base_offset(data, event.base_offset))
    index_entries: list[tuple[bytes, bytes]] = []
    if max_timestamp > state.max_timestamp:
        index_entries.append((time_index_key(partition_id, max_timestamp), broker.encode_offset(event.base_offset)))
    events: list[Event] = [event]
    broker.stage(events, (stored,), index_entries)
    return event.base_offset
