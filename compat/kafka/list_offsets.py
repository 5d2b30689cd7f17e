"""ListOffsets (key 2), versions 1-11: earliest (-2), latest (-1), max timestamp (-3), by time.

v9 and v11 add the tiered-storage queries latest tiered (-5) and earliest pending upload (-6); with no
tiered storage they find nothing (offset -1), as Kafka answers for a topic without remote storage.
v10 adds a timeout for remote lookups, which never wait here. With READ_COMMITTED (isolation level 1,
v2+) latest is the last stable offset, below every open transaction, as Kafka answers.

Refused as Kafka 4.4 refuses (tests/integration/test_list_offsets_checks.py runs on both): a partition named twice
(INVALID_REQUEST, answered once), a leader epoch other than the partition's (`leader_epochs`), a negative timestamp
the version does not have (UNSUPPORTED_VERSION); an isolation level other than 0 and 1 fails every partition with
UNKNOWN_SERVER_ERROR. An offset found carries the leader epoch; nothing found (offset -1) carries -1.

A time lookup seeks the time index (keyed by the running maximum timestamp, so the first entry at or
after the target is the first batch that can hold it) and then decodes that batch to find the first
record at or after the target, the only place records are decoded on this path; on a compacted topic the
record may have gone, and the search goes on through the next batches (skipping by their headers), as
Kafka's does through its segments. MAX_TIMESTAMP (-3) on a compacted partition answers the largest timestamp
that remains, from what the cleaner keeps (Kafka's per-segment ``maxTimestampSoFar``): the last pass's kept
maximum and each modelled segment's since, so no scan; elsewhere the partition's folded maximum is searched.
"""

from __future__ import annotations

import datetime
from collections import Counter
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.fetch import last_stable_offset
from logwright.compat.leader_epochs import PARTITION_LEADER_EPOCH, leader_epoch_error
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.turns import give_way
from logwright.compat.wire.record_batch import decode_records, parse_header
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.compaction.state import CleanerCheckpoint, checkpoint_key
from logwright.core.log.catalog import TopicState
from logwright.eventstore.keys import time_index_key

if TYPE_CHECKING:
    from kio.schema.list_offsets import v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11
    from typing_extensions import TypeIs

    ListOffsetsRequest: TypeAlias = (
        v1.ListOffsetsRequest | v2.ListOffsetsRequest | v3.ListOffsetsRequest | v4.ListOffsetsRequest
        | v5.ListOffsetsRequest | v6.ListOffsetsRequest | v7.ListOffsetsRequest | v8.ListOffsetsRequest
        | v9.ListOffsetsRequest | v10.ListOffsetsRequest | v11.ListOffsetsRequest
    )
    """Every version served: mypy checks each field read against all of them."""

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
MAX_VERSION = 11
SENTINEL_SINCE_VERSION = {LATEST: 0, EARLIEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                          EARLIEST_PENDING_UPLOAD: 11}
"""The negative timestamps ListOffsets takes and the version each came with; any other negative timestamp, or one
asked in an older version, is UNSUPPORTED_VERSION, as Kafka 4.4 answers."""
_SCAN_BYTES = 1 << 20
"""Stored bytes read at a time when the batch the time index names no longer holds the answer (compaction)."""
SEARCHES_PER_TURN = 16
"""Searches by time (each seeks the time index and decodes a batch: up to ~0.5 ms) before the handler lets other
connections' requests run. A partition named again in one request is not searched again (INVALID_REQUEST, answered
once): 10,000 copies of one search held every other client over 4 s (hostile-values fuzzing, seed 203)."""


@handler(2, "ListOffsets", 1, MAX_VERSION, at_once=True)
async def handle(context: RequestContext, request: ListOffsetsRequest) -> Any:
    broker = context.broker
    module = response_module("list_offsets", context.api_version)
    isolation_level = int(request.isolation_level) if _names_isolation_level(request) else 0
    refused = None if isolation_level in (0, 1) else ErrorCode.UNKNOWN_SERVER_ERROR  # Kafka fails its IsolationLevel
    asked_once = _asked_once(request)
    topics = []
    answered: set[tuple[str, int]] = set()
    searches = 0
    denied = []
    for topic in request.topics:
        if not allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name):
            denied.append(make(module.ListOffsetsTopicResponse, name=topic.name, partitions=tuple(
                make(module.ListOffsetsPartitionResponse, partition_index=int(partition.partition_index),
                     error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, timestamp=-1, offset=-1)
                for partition in topic.partitions)))
            continue
        state = broker.topic(topic.name)
        partitions = []
        for partition in topic.partitions:
            index, target = int(partition.partition_index), int(partition.timestamp)
            if (topic.name, index) in answered:
                continue  # a partition named twice is answered once, as Kafka collects them
            answered.add((topic.name, index))
            code = refused or _partition_error(context.api_version, state, partition, index, target,
                                               (topic.name, index) in asked_once)
            if code is not None:
                partitions.append(make(module.ListOffsetsPartitionResponse, partition_index=index, error_code=code,
                                       timestamp=-1, offset=-1))
                continue
            assert state is not None  # checked by _partition_error
            if target >= 0 or target == MAX_TIMESTAMP:  # a search of the log, not an offset the broker holds
                searches += 1
                if searches % SEARCHES_PER_TURN == 0:
                    await give_way()
                    if (state := broker.topic(topic.name)) is None:  # deleted meanwhile
                        partitions.append(make(module.ListOffsetsPartitionResponse, partition_index=index,
                                               error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, timestamp=-1,
                                               offset=-1))
                        continue
            timestamp, offset = lookup(broker, state.partition_ids[index], target, isolation_level == 1)
            partitions.append(make(module.ListOffsetsPartitionResponse, partition_index=index,
                                   error_code=ErrorCode.NONE, timestamp=timestamp, offset=offset,
                                   leader_epoch=PARTITION_LEADER_EPOCH if offset >= 0 else -1))
        topics.append(make(module.ListOffsetsTopicResponse, name=topic.name, partitions=tuple(partitions)))
    # topics the principal may not DESCRIBE come last, each partition as named, as Kafka merges them
    return make(module.ListOffsetsResponse, throttle_time=datetime.timedelta(0), topics=(*topics, *denied))


def _asked_once(request: ListOffsetsRequest) -> set[tuple[str, int]]:
    """The partitions the request names once; one named twice or more (in one topic entry or across two) is
    INVALID_REQUEST, as Kafka answers."""
    counts = Counter((topic.name, int(partition.partition_index))
                     for topic in request.topics for partition in topic.partitions)
    return {named for named, count in counts.items() if count == 1}


def _partition_error(version: int, state: TopicState | None, partition: Any, index: int, target: int,
                     named_once: bool) -> ErrorCode | None:
    """Why one partition of the request gets no offset, checked in Kafka 4.4's order: named twice, a timestamp
    sentinel its version does not have, no such partition, the leader epoch the client saw (v4+)."""
    if not named_once:
        return ErrorCode.INVALID_REQUEST
    if target < 0 and version < SENTINEL_SINCE_VERSION.get(target, MAX_VERSION + 1):
        return ErrorCode.UNSUPPORTED_VERSION
    if state is None or not 0 <= index < len(state.partition_ids):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if version >= 4 and (code := leader_epoch_error(int(partition.current_leader_epoch))) is not None:
        return code
    return None


def lookup(broker: Broker, partition_id: int, timestamp: int, read_committed: bool = False) -> tuple[int, int]:
    """``(timestamp, offset)`` for a ListOffsets query; ``(-1, -1)`` when no record is that late."""
    high_watermark = last_stable_offset(broker, partition_id) if read_committed else broker.high_watermark(partition_id)
    log_start = broker.partition(partition_id).log_start_offset
    if timestamp == LATEST:
        return -1, high_watermark
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, log_start
    if timestamp == MAX_TIMESTAMP:
        candidates = _compacted_max_candidates(broker, partition_id)
        if candidates is not None:
            return _first_of_candidates(broker, partition_id, candidates, log_start, high_watermark)
        target = broker.partition(partition_id).max_timestamp
        if target < 0:
            return -1, -1
        return _first_at_or_after(broker, partition_id, target, log_start, high_watermark, exact=True)
    if timestamp < 0:
        return -1, -1
    return _first_at_or_after(broker, partition_id, timestamp, log_start, high_watermark, exact=False)


def _first_at_or_after(
    broker: Broker, partition_id: int, target: int, log_start: int, high_watermark: int, exact: bool
) -> tuple[int, int]:
    """The first record in offset order whose timestamp is at (``exact``) or after ``target``, as Kafka's
    ``searchForTimestamp`` finds it: from the batch the time index names on, skipping batches whose max
    timestamp is below the target. Usually that batch holds it; after compaction it may not (its records
    at or after the target removed, the batch itself deleted, its max timestamp lowered), and the answer is
    the first record that remains, at its own offset, however far on."""
    entry = broker.store.seek_index(time_index_key(partition_id, target), time_index_key(partition_id + 1, 0))
    if entry is None:
        return -1, -1
    position = max(broker.decode_offset(entry[1]), log_start)
    while position < high_watermark:
        batches = broker.store.read_batches(partition_id, position, _SCAN_BYTES, end_offset=high_watermark - 1)
        start = position
        for batch in batches:
            header = parse_header(batch)
            position = max(position, header.last_offset + 1)
            if header.max_timestamp < target:
                continue
            for record in decode_records(batch):
                if record.offset < start or record.offset < log_start or record.offset >= high_watermark:
                    continue
                if (record.timestamp == target) if exact else (record.timestamp >= target):
                    return record.timestamp, record.offset
        if position == start:
            break
    return -1, -1


def _compacted_max_candidates(broker: Broker, partition_id: int) -> list[tuple[int, int]] | None:
    """Where a compacted partition's largest timestamp may be, as Kafka keeps it per segment: the largest the
    last pass kept below its end (its checkpoint) and each modelled segment's from there on, as ``(timestamp,
    batch base offset)``. ``None`` when that is not known (not compacted, its model still building, a checkpoint
    of an older build): the partition's folded maximum is then searched, which compaction never lowers."""
    try:
        model = broker.coordinators.log_cleaner.models.models.get(partition_id)
    except RuntimeError:
        return None
    if model is None:
        return None
    largest = (segment.largest for segment in model.segments)
    candidates = [found for found in largest if found is not None and found[0] >= 0]
    checkpoint = broker.store.state("compaction", checkpoint_key(partition_id))
    if isinstance(checkpoint, CleanerCheckpoint):
        if not checkpoint.kept_max_known:
            return None
        if checkpoint.kept_max_timestamp >= 0:
            candidates.append((checkpoint.kept_max_timestamp, checkpoint.kept_max_timestamp_offset))
    return candidates


def _first_of_candidates(broker: Broker, partition_id: int, candidates: list[tuple[int, int]], log_start: int,
                         high_watermark: int) -> tuple[int, int]:
    """The largest timestamp and the first record carrying it, as Kafka's ``fetchOffsetByTimestamp`` answers
    MAX_TIMESTAMP: the first segment with the largest ``maxTimestampSoFar``, in it the first batch with that
    max timestamp, in it the first record with it. One batch is decoded; the next candidate is tried only
    when that batch no longer holds it (a pass between its slices rewrote it). A record at or past the high
    watermark (the last stable offset for READ_COMMITTED) answers nothing, as Kafka filters the one it found."""
    for target, base_offset in sorted(candidates, key=lambda candidate: (-candidate[0], candidate[1])):
        if base_offset >= high_watermark:
            return -1, -1
        for batch in broker.store.read_batches(partition_id, base_offset, 1, end_offset=high_watermark - 1):
            if parse_header(batch).max_timestamp != target:
                continue
            for record in decode_records(batch):
                if record.offset >= log_start and record.timestamp == target:
                    return (record.timestamp, record.offset) if record.offset < high_watermark else (-1, -1)
    return -1, -1


def _names_isolation_level(request: ListOffsetsRequest) -> TypeIs[
    v2.ListOffsetsRequest | v3.ListOffsetsRequest | v4.ListOffsetsRequest | v5.ListOffsetsRequest
    | v6.ListOffsetsRequest | v7.ListOffsetsRequest | v8.ListOffsetsRequest | v9.ListOffsetsRequest
    | v10.ListOffsetsRequest | v11.ListOffsetsRequest
]:
    """v2+ carry the isolation level (READ_COMMITTED 1 stops at the last stable offset)."""
    return has_field(request, "isolation_level")
