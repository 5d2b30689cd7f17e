"""The path every append of records takes, whoever writes them: a partition's batches validated as Kafka's
LogValidator and the producer state check them (`prepare_partition`), the admission plugins asked (`admit`), then
staged with their events (`stage_partition`, `stage_batch`); the caller awaits the commit.

The Produce handler (`kafka.produce`) takes it for every partition of a request; so do the dead-letter and retry-letter
copies of share groups and pop, the plugins' facade and the transaction markers. Apart from the handler because
they are not Produce requests and must not depend on its answer.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import NamedTuple

from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.key_dedup import plan_deduplication, remember, window_index
from logwright.compat.leader_epochs import PARTITION_LEADER_EPOCH
from logwright.compat.registry import RequestContext
from logwright.compat.wire import record_check
from logwright.compat.wire.compression import Compression, inflate
from logwright.compat.wire.record_batch import (
    BatchHeader,
    CorruptBatch,
    UnsupportedMessageFormat,
    batch_magic,
    iter_batches,
    numbered,
    parse_header,
    produced_batches,
    recompressed,
    verify_crc,
    with_base_offset,
    with_log_append_time,
)
from logwright.compat.wire.record_check import (
    CORRUPT,
    INVALID_RECORD,
    INVALID_TIMESTAMP,
    MOST_RECORD_BODY,
    RecordError,
    RecordsRefused,
    TimestampBounds,
    check_records,
    keyless_message,
    record_errors,
)
from logwright.core.compaction.settings import is_compacted
from logwright.core.cursors.plugin_decisions import AppendRequest, PartitionAppend
from logwright.core.errors import (
    DomainError,
    InvalidProducerEpoch,
    InvalidTxnState,
    NotInTransaction,
    ProducerFenced,
)
from logwright.core.events import RecordsAppended
from logwright.core.keys.dedup import DEDUP_WINDOW, Deduplication
from logwright.core.log.catalog import TopicState
from logwright.core.log.internal_topics import refuse_append
from logwright.core.log.partition_log import append_batch, partition_key
from logwright.core.log.producers import Duplicate, ProducerState, check_sequence, producer_key
from logwright.core.log.record_keys import UnreadableRecords, record_keys
from logwright.core.transactions.partition_transactions import check_idempotent_append
from logwright.core.transactions.transactions import add_partitions, check_transactional_append
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.keys import time_index_key

log = logging.getLogger(__name__)


class PartitionResult(NamedTuple):
    """One partition's answer (a named tuple: one is built per partition of every request)."""

    error_code: ErrorCode
    base_offset: int = -1
    log_start_offset: int = -1
    log_append_time: int = -1
    error_message: str | None = None
    abortable: bool = False
    """Refused as `NotInTransaction`: TRANSACTION_ABORTABLE in Produce v11+ (KIP-890), INVALID_TXN_STATE before."""
    record_errors: tuple[tuple[int, str], ...] = ()
    """The records Kafka's LogValidator names in a refusal (their index in the batch, why)."""


def _refuse_while_ending(broker: Broker, header: BatchHeader) -> None:
    """A transactional batch of a producer whose transaction is being ended over turns may not join it between its
    markers: INVALID_PRODUCER_EPOCH when the end bumps the epoch (a timeout or a new instance fenced the producer, as
    the end staged at once answered), INVALID_TXN_STATE for the producer's own EndTxn under way."""
    for producer_id, marker_epoch in broker.ending_transactions.values():
        if producer_id != header.producer_id:
            continue
        if header.producer_epoch < marker_epoch:
            raise InvalidProducerEpoch(f"producer id {producer_id} was fenced: its transaction is being aborted at "
                                       f"epoch {marker_epoch}")
        raise InvalidTxnState(f"the transaction of producer id {producer_id} is being ended: a batch may not join it "
                              "between its markers")


def _check_transactional(broker: Broker, header: BatchHeader, partition_id: int, joining: str | None) -> None:
    if broker.ending_transactions:
        _refuse_while_ending(broker, header)
    if joining is not None:
        join_transaction(broker, joining, header, partition_id)
    check_transactional_append(broker.transaction_of_producer(header.producer_id), header.producer_id,
                               header.producer_epoch, partition_id)


def join_transaction(broker: Broker, transactional_id: str, header: BatchHeader, partition_id: int) -> None:
    """Add the partition of a transactional batch to the transaction of ``transactional_id`` (Produce v12+, transaction
    version 2), staged before the batch so both are in one WriteBatch; nothing when it is in already. Kafka's leader
    asks the coordinator the same (AddPartitionsToTxn), and answers a fenced epoch INVALID_PRODUCER_EPOCH."""
    try:
        event = add_partitions(broker.transaction(transactional_id), header.producer_id, header.producer_epoch,
                               (partition_id,), broker.clock.now_ms())
    except ProducerFenced as error:
        raise InvalidProducerEpoch(str(error)) from error
    if event is not None:
        broker.stage([event])


def admit(broker: Broker, context: RequestContext, prepared: list[Prepared]
          ) -> tuple[dict[int, PartitionResult], dict[int, Deduplication]]:
    """The partitions the plugins' ``logwright_admit_append`` refuses and those it deduplicates, once per request;
    nothing is asked (and no request built) when no plugin but the built-in default implements the hook, or when
    no partition's topic is in the scope the plugins declare (`Broker.admission_applies`): the chain sees only
    the partitions it acts on."""
    admit = broker.admission
    if admit is None:
        return {}, {}
    concerned = [item for item in prepared if broker.admission_applies(item.topic)]
    if not concerned:
        return {}, {}
    request = AppendRequest(tuple(item.append(broker.topic_configs(item.topic)) for item in concerned),
                            context.client_id, broker.clock.now_ms())
    try:
        admission = admit(request)
    except Exception as error:  # a broken plugin refuses the request rather than letting it bypass a quota
        log.exception("the admission plugins failed on a produce request of %s", context.client_id)
        message = f"the broker's admission plugins failed: {type(error).__name__}: {error}"
        return {item.partition_id: PartitionResult(ErrorCode.UNKNOWN_SERVER_ERROR, error_message=message)
                for item in concerned}, {}
    refused: dict[int, PartitionResult] = {}
    for partition_id, refusal in admission.refused:
        refused.setdefault(partition_id, PartitionResult(error_code_for(refusal), error_message=str(refusal)))
    return refused, dict(admission.deduplicated)


class Prepared(NamedTuple):
    """One partition's batches, validated and ready to append (a named tuple: one per partition of a request)."""

    topic: TopicState
    partition_index: int
    partition_id: int
    batches: tuple[tuple[memoryview, BatchHeader], ...]
    log_append_time: bool
    keys: tuple[list[bytes | None], ...] = ()
    """Each batch's record keys when the checks read them (a compacted topic), else empty."""
    in_place: bool = False
    """The batches lie in a client's request frame, theirs alone: their offsets may be patched there (`numbered`)."""

    def append(self, topic_configs: Mapping[str, str]) -> PartitionAppend:
        """What admission plugins see of it: counts and sizes, never the records."""
        return PartitionAppend(self.topic.name, self.partition_index, self.partition_id,
                               sum(header.record_count for _, header in self.batches),
                               sum(len(data) for data, _ in self.batches), self.batches[0][1].producer_id,
                               topic_configs)


ONE_BATCH_MESSAGE = "Produce requests with version 3 and above are only allowed to contain exactly one record batch"
"""What Kafka's ProduceRequest.validateRecords says (its version number left out)."""


def produce_partition(broker: Broker, topic: TopicState | None, index: int, records: bytes | None) -> PartitionResult:
    """Validate and stage one partition's batches (no admission plugins asked); the caller awaits durability."""
    prepared = prepare_partition(broker, topic, index, records)
    return stage_partition(broker, prepared) if isinstance(prepared, Prepared) else prepared


class TopicLimits(NamedTuple):
    """What validating a topic's batches reads of its configs, read once per request rather than per partition
    (three config lookups per partition were 7% of a produce request of 1,000 one-record partitions)."""

    max_message_bytes: int
    log_append_time: bool
    compacted: bool
    timestamp_before_max_ms: int
    timestamp_after_max_ms: int
    stored_compression: tuple[Compression, int] | None = None
    """The codec and level ``compression.type`` stores batches with, ``None`` for ``producer`` (as they came)."""
    most_record_body: int = MOST_RECORD_BODY
    """``max.decompressed.message.bytes``: the longest record body a compressed batch may hold."""


_CODEC_OF_TYPE = {"uncompressed": Compression.NONE, "gzip": Compression.GZIP, "snappy": Compression.SNAPPY,
                  "lz4": Compression.LZ4, "zstd": Compression.ZSTD}


def topic_limits(broker: Broker, topic: TopicState) -> TopicLimits:
    """From the broker's memo of the topic's effective configs (`Broker.topic_configs`)."""
    configs = broker.topic_configs(topic)
    return TopicLimits(int(configs["max.message.bytes"]), configs["message.timestamp.type"] == "LogAppendTime",
                       is_compacted(configs["cleanup.policy"]), int(configs["message.timestamp.before.max.ms"]),
                       int(configs["message.timestamp.after.max.ms"]), stored_compression(configs),
                       int(configs["max.decompressed.message.bytes"]))


MOST_REBUILD_LEVELS = {Compression.LZ4: 9, Compression.ZSTD: 15}
"""The highest level a batch is rebuilt at; a higher ``compression.lz4.level`` or ``compression.zstd.level`` is
taken as this one. logwright rebuilds on its event loop, which every client waits on, where Kafka spends a handler
thread. Per MiB of JSON-like records (session 83): gzip 9 88 ms, lz4 9 16 ms but 170-190 ms at 12-17, zstd 15
87 ms but 484 ms at 17, 1,628 at 19 and 3,762 at 22. The output differs by a few percent (lz4 0.3%, zstd 4%); the
codec, what consumers see, is the one the topic names."""


def stored_compression(configs: Mapping[str, str]) -> tuple[Compression, int] | None:
    """``compression.type`` and the level its codec's ``compression.<codec>.level`` gives (KIP-390), at most
    `MOST_REBUILD_LEVELS`; ``None`` for ``producer``."""
    codec = _CODEC_OF_TYPE.get(configs["compression.type"])
    if codec is None:
        return None
    level_key = f"compression.{configs['compression.type']}.level"
    level = int(configs[level_key]) if level_key in configs else 0
    return codec, min(level, MOST_REBUILD_LEVELS.get(codec, level))


_REFUSED_RECORDS = {CORRUPT: ErrorCode.CORRUPT_MESSAGE, INVALID_RECORD: ErrorCode.INVALID_RECORD,
                    INVALID_TIMESTAMP: ErrorCode.INVALID_TIMESTAMP}


def prepare_partition(broker: Broker, topic: TopicState | None, index: int, records: bytes | None,
                      limits: TopicLimits | None = None, one_batch: bool = False, produce_version: int | None = None
                      ) -> Prepared | PartitionResult:
    """Parse and validate one partition's batches without writing anything; an error answer if they are refused.
    ``limits``: the topic's `topic_limits`, when the caller read them already. ``one_batch``: a client's Produce,
    which Kafka refuses (v3+, every version served) unless each partition carries exactly one batch, INVALID_RECORD:
    60 compressed batches of 60 MiB of zeros each (121 KB on the wire) were checked in one stretch, 2.3 s. The
    broker's own appends (dead-letter copies) may carry several. ``produce_version``: that Produce's version, which
    refuses ZStandard below v7 as Kafka does. Batches are stored in the codec ``compression.type`` names, rebuilt when
    the producer's differs (`_recompressed`)."""
    if topic is None or not 0 <= index < len(topic.partition_ids):
        return PartitionResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message="unknown topic or partition")
    if not records:
        return PartitionResult(ErrorCode.INVALID_RECORD, error_message="the produce request carries no records")
    try:
        refuse_append(topic.name)
    except DomainError as error:
        return PartitionResult(error_code_for(error), error_message=str(error))
    partition_id = topic.partition_ids[index]
    max_message_bytes, log_append_time, compacted, before_max_ms, after_max_ms, stored_as, most_record_body = (
        limits or topic_limits(broker, topic))
    try:
        batches = _client_batches(records, produce_version) if one_batch else tuple(
            (batch, parse_header(batch)) for batch in iter_batches(records))
    except UnsupportedMessageFormat as error:
        return PartitionResult(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, error_message=str(error))
    except CorruptBatch as error:
        return PartitionResult(ErrorCode.CORRUPT_MESSAGE, error_message=str(error))
    if isinstance(batches, PartitionResult):
        return batches
    bounds = None if log_append_time else TimestampBounds(broker.clock.now_ms(), before_max_ms, after_max_ms)
    to_rebuild: dict[int, bytes | bytearray | memoryview] = {}  # by position, the records (inflated once, by the
    # check) of each batch the topic's codec rebuilds
    for position, (data, header) in enumerate(batches):
        problem = _unreadable(data, header, max_message_bytes)
        if problem is not None:
            return problem
        refusal = _refused_batch(header, one_batch)
        if refusal is not None:
            return _validator_refusal(broker, partition_id, *refusal)
        try:
            records_walked = check_records(data, header, bounds, most_record_body)
        except RecordsRefused as error:
            if error.kind == INVALID_TIMESTAMP:
                where = f"{topic.name}-{index}" if compacted else None
                return _records_refused(broker, partition_id, data, header, bounds, where,
                                        RecordError(error.position, str(error), INVALID_TIMESTAMP))
            return _validator_refusal(broker, partition_id, _REFUSED_RECORDS[error.kind], str(error))
        if stored_as is not None and header.compression != stored_as[0]:
            to_rebuild[position] = records_walked
    keys: tuple[list[bytes | None], ...] = ()
    if compacted:
        refused = _record_keys(batches)
        if isinstance(refused, PartitionResult):
            return refused
        if isinstance(refused, Keyless):
            where = f"{topic.name}-{index}"
            return _records_refused(broker, partition_id, refused.data, parse_header(refused.data), bounds, where,
                                    RecordError(refused.keys.index(None), keyless_message(where), INVALID_RECORD),
                                    refused.keys.count(None))
        keys = refused
    if to_rebuild:
        assert stored_as is not None  # only a topic that names a codec rebuilds batches
        recompressed_batches = _recompressed(batches, stored_as, max_message_bytes, to_rebuild)
        if isinstance(recompressed_batches, PartitionResult):
            return recompressed_batches
        batches = recompressed_batches
    return Prepared(topic, index, partition_id, batches, log_append_time, keys, in_place=one_batch)


def _recompressed(batches: tuple[tuple[memoryview, BatchHeader], ...], stored_as: tuple[Compression, int],
                  max_message_bytes: int, to_rebuild: dict[int, bytes | bytearray | memoryview]
                  ) -> tuple[tuple[memoryview, BatchHeader], ...] | PartitionResult:
    """The batches in the topic's codec, as Kafka's LogValidator rebuilds them when ``compression.type`` names one
    other than the producer's; a rebuilt batch over ``max.message.bytes`` is refused after all (MESSAGE_TOO_LARGE,
    as Kafka checks sizes again once recompression may have changed them). ``to_rebuild``: by position, the records
    of each batch in another codec, as the record check inflated them."""
    codec, level = stored_as
    rebuilt: list[tuple[memoryview, BatchHeader]] = []
    for position, (data, header) in enumerate(batches):
        if header.compression != codec:
            again, records_bytes = recompressed(data, header, codec, level, max_message_bytes, to_rebuild[position])
            record_check.inflated_bytes += REBUILD_COST * records_bytes  # Produce gives way by it
            if again is None:
                return PartitionResult(ErrorCode.MESSAGE_TOO_LARGE, error_message=(
                    f"the batch is over max.message.bytes={max_message_bytes} once compressed as "
                    f"compression.type={codec.name.lower()} says"))
            data, header = again, parse_header(again)
        rebuilt.append((data, header))
    return tuple(rebuilt)


REBUILD_COST = 8
"""What rebuilding a batch's records costs against inflating them once, counted in the bytes Produce gives way by
(`record_check.inflated_bytes`, `produce.INFLATED_PER_TURN`): 64 MiB inflated from zstd took 40 ms, compressed again
14-1,000 ms (lz4 9 and zstd 3 the least, gzip 6 440 ms, zstd 22 a second: session 83). So a request of many such
partitions rebuilds about 8 MiB of records a turn; one batch is rebuilt whole in its turn, at most the 64 MiB its
records may inflate to, given up once its output passes max.message.bytes."""


NO_BATCH_MESSAGE = "Produce requests must have at least one record batch per partition"
MAGIC_MESSAGE = "Produce requests are only allowed to contain record batches with magic version 2"
"""What Kafka's ProduceRequest.validateRecords says (its version number left out), as `ONE_BATCH_MESSAGE`."""


ZSTD_FROM_VERSION = 7
"""Produce versions below this may not carry ZStandard batches (KIP-110)."""
_CODEC_BYTE_AT = 22
"""The attributes' low byte, which holds the codec (bits 0-2)."""


def _client_batches(records: bytes, version: int | None
                    ) -> tuple[tuple[memoryview, BatchHeader], ...] | PartitionResult:
    """The one batch of a client's partition, read as Kafka reads it (`produced_batches`: bytes after the last whole
    batch are dropped), or Kafka's refusal, in the order of its ProduceRequest.validateRecords: no whole batch or a
    first one not RecordBatch v2 (INVALID_RECORD), ZStandard in a request older than v7 (UNSUPPORTED_COMPRESSION_TYPE),
    more than one batch (INVALID_RECORD)."""
    found = produced_batches(records, 2)
    if not found:
        return PartitionResult(ErrorCode.INVALID_RECORD, error_message=NO_BATCH_MESSAGE)
    if batch_magic(found[0]) != 2:
        return PartitionResult(ErrorCode.INVALID_RECORD, error_message=MAGIC_MESSAGE)
    if (version is not None and version < ZSTD_FROM_VERSION and len(found[0]) > _CODEC_BYTE_AT
            and found[0][_CODEC_BYTE_AT] & 0x07 == Compression.ZSTD):
        return PartitionResult(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, error_message=(
            f"Produce requests with version {version} are not allowed to use ZStandard compression"))
    if len(found) > 1:
        return PartitionResult(ErrorCode.INVALID_RECORD, error_message=ONE_BATCH_MESSAGE)
    return ((found[0], parse_header(found[0])),)


def _validator_refusal(broker: Broker, partition_id: int, code: ErrorCode, message: str | None,
                       errors: tuple[tuple[int, str], ...] = ()) -> PartitionResult:
    """A refusal of Kafka's LogValidator, which its answer carries with the partition's log start offset."""
    return PartitionResult(code, log_start_offset=broker.partition(partition_id).log_start_offset,
                           error_message=message, record_errors=errors)


LISTED_RECORDS_MAX = 10_000
"""Records of a refused batch read one by one to name each refused record, as Kafka does; a larger batch names only
the first (found by the check that refused it): reading makes an object per record, and a forged batch inflating to
the 64 MiB bound may hold millions (300,000 tiny records took 34 MiB and seconds of the event loop)."""


class Keyless(NamedTuple):
    """A batch of a compacted topic holding a record without a key, and its records' keys."""

    data: memoryview
    keys: list[bytes | None]


def _records_refused(broker: Broker, partition_id: int, data: memoryview, header: BatchHeader,
                     bounds: TimestampBounds | None, compacted_partition: str | None, first: RecordError,
                     keyless: int = 0) -> PartitionResult:
    """A batch with records Kafka refuses one by one (a timestamp out of bounds, no key on a compacted topic): each
    is named in ``record_errors`` (the ``first`` alone past `LISTED_RECORDS_MAX` records; ``keyless`` counts those
    without a key then); INVALID_TIMESTAMP if one is a timestamp's, else INVALID_RECORD, with Kafka's messages."""
    found = record_errors(data, bounds, compacted_partition) if header.record_count <= LISTED_RECORDS_MAX else [first]
    errors = tuple((error.position, error.message) for error in found)
    if any(error.kind == INVALID_TIMESTAMP for error in found):
        return _validator_refusal(broker, partition_id, ErrorCode.INVALID_TIMESTAMP,
                                  "One or more records have been rejected due to invalid timestamp", errors)
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{message}')" for index, message in errors[:3])
    total = len(errors) if header.record_count <= LISTED_RECORDS_MAX else keyless
    return _validator_refusal(broker, partition_id, ErrorCode.INVALID_RECORD, (
        f"One or more records have been rejected due to {total} record errors in total, and only showing the "
        f"first three errors at most: [{shown}]"), errors)


def _record_keys(batches: tuple[tuple[memoryview, BatchHeader], ...]
                 ) -> PartitionResult | tuple[list[bytes | None], ...] | Keyless:
    """Each batch's record keys on a compacted topic, read once (deduplication by record key reuses them); the first
    batch holding a record without one, which Kafka's LogValidator refuses (`_records_refused` names them)."""
    keys = []
    for data, _ in batches:
        try:
            keys.append(record_keys(data, inflate))
        except UnreadableRecords as error:
            return PartitionResult(ErrorCode.CORRUPT_MESSAGE, error_message=str(error))
        if None in keys[-1]:
            return Keyless(data, keys[-1])
    return tuple(keys)


def stage_partition(broker: Broker, prepared: Prepared, deduplication: Deduplication | None = None,
                    joining: str | None = None) -> PartitionResult:
    """Stage prepared batches (producer sequences checked batch by batch, then duplicates of business keys
    dropped when ``deduplication`` is given); the caller awaits durability. ``joining``: the transactional id of a
    transaction version 2 Produce (v12+), whose transactional batches add their partition to its transaction."""
    partition_id = prepared.partition_id
    now = broker.clock.now_ms() if prepared.log_append_time else -1
    first_offset: int | None = None
    try:
        for position, (data, header) in enumerate(prepared.batches):
            keys = prepared.keys[position] if prepared.keys else None
            outcome = stage_batch(broker, partition_id, data, header, now, deduplication, keys, prepared.in_place,
                                  joining)
            if first_offset is None:
                first_offset = outcome
    except DomainError as error:
        return PartitionResult(error_code_for(error), error_message=str(error),
                               abortable=isinstance(error, NotInTransaction))
    state = broker.partition(partition_id)
    return PartitionResult(ErrorCode.NONE, first_offset if first_offset is not None else -1,
                           state.log_start_offset, now)


def _unreadable(data: memoryview, header: BatchHeader, max_message_bytes: int) -> PartitionResult | None:
    """What Kafka refuses before its LogValidator reads the batch (no log start offset in the answer)."""
    if len(data) > max_message_bytes:
        return PartitionResult(ErrorCode.MESSAGE_TOO_LARGE,
                               error_message=f"a {len(data)}-byte batch is over max.message.bytes={max_message_bytes}")
    if not verify_crc(data):
        return PartitionResult(ErrorCode.CORRUPT_MESSAGE, error_message="the batch's CRC32C does not match its bytes")
    return None


def _refused_batch(header: BatchHeader, from_client: bool) -> tuple[ErrorCode, str] | None:
    """What Kafka's LogValidator refuses of a batch's header, in its order; ``from_client``: a client's Produce, whose
    batches start at offset 0 (the broker's own copies keep theirs)."""
    if from_client and header.base_offset != 0:
        return ErrorCode.INVALID_RECORD, f"the batch's base offset must be 0, not {header.base_offset}"
    if header.record_count < 1 or header.last_offset_delta != header.record_count - 1:
        return ErrorCode.INVALID_RECORD, (f"record count {header.record_count} does not match the last offset delta "
                                          f"{header.last_offset_delta}")
    if header.is_control:
        return ErrorCode.INVALID_RECORD, "clients may not produce control batches"
    if header.producer_id >= 0 and header.base_sequence < 0:
        return ErrorCode.INVALID_RECORD, (f"Invalid sequence number {header.base_sequence} in record batch with "
                                          f"producerId {header.producer_id}")
    return None


def stage_batch(
    broker: Broker, partition_id: int, data: memoryview | bytes, header: BatchHeader, append_time: int,
    deduplication: Deduplication | None = None, keys: list[bytes | None] | None = None, in_place: bool = False,
    joining: str | None = None,
) -> int:
    """Stage one batch; returns its base offset (the original one for a duplicate retry or business key).

    ``data`` is a view into the request: the one copy made is the stored batch, with its offset patched; with
    ``in_place`` (a client's Produce, `Prepared.in_place`), a large batch is patched in its frame instead (`numbered`).
    A transactional batch must come from the current epoch of a transaction the partition was added to; one
    ``joining`` the transaction named so (transaction version 2) adds its partition first (`join_transaction`).
    What the plugins derive from the batch (a delayed-delivery index entry) is staged with it (`Broker.stage`).
    """
    transactional = header.is_transactional and not header.is_control
    if transactional and joining is not None:  # Kafka's leader has the coordinator add it before the sequence check
        _check_transactional(broker, header, partition_id, joining)
    if header.producer_id >= 0 and header.base_sequence >= 0:
        key = producer_key(partition_id, header.producer_id)
        producer_state = broker.store.state("producers", key)
        broker.producer_activity[key] = broker.clock.now_ms()  # a retry too: the producer is alive
        verdict = check_sequence(
            producer_state if isinstance(producer_state, ProducerState) else None,
            header.producer_epoch, header.base_sequence, header.record_count,
        )
        if isinstance(verdict, Duplicate):
            return verdict.base_offset
    if header.producer_id >= 0 and not header.is_transactional:
        check_idempotent_append(broker.store.state("partition_transactions", partition_key(partition_id)),
                                header.producer_id)
    if transactional and joining is None:
        _check_transactional(broker, header, partition_id, None)
    plan = None
    if deduplication is not None and not header.is_transactional:
        window = window_index(broker.plugin_memo, lambda: broker.store.entities(DEDUP_WINDOW.name))
        plan = plan_deduplication(partition_id, data, header, deduplication, window, broker.clock.now_ms(), keys)
        if plan.stored is None:
            broker.stage(plan.events(-1))
            return plan.first_offset(-1)
        data, header = plan.stored
    state = broker.partition(partition_id)
    max_timestamp = append_time if append_time >= 0 else header.max_timestamp
    event: RecordsAppended = append_batch(
        state, header.record_count, len(data), max_timestamp, header.producer_id, header.producer_epoch,
        header.base_sequence, header.is_transactional,
    )
    if append_time >= 0:
        data = with_log_append_time(data, append_time)
    stored = StoredBatch(partition_id, event.base_offset,  # stamped with the leader's epoch, as Kafka stores a batch
                         numbered(data, event.base_offset, PARTITION_LEADER_EPOCH) if in_place
                         else with_base_offset(data, event.base_offset, PARTITION_LEADER_EPOCH))
    index_entries: list[tuple[bytes, bytes]] = []
    if max_timestamp > state.max_timestamp:
        index_entries.append((time_index_key(partition_id, max_timestamp), broker.encode_offset(event.base_offset)))
    deduplicated = plan.events(event.base_offset) if plan is not None else []
    broker.stage([event, *deduplicated], (stored,), index_entries)
    if deduplicated:
        remember(window, deduplicated)
    return plan.first_offset(event.base_offset) if plan is not None else event.base_offset
