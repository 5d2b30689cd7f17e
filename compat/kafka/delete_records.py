"""DeleteRecords (key 21), versions 0-2: move partitions' log start up (Kafka's low watermark).

Offset -1 means the high watermark (everything written so far). Whole stored batches below the new
start are deleted with a `LogTruncated` event; a batch straddling it stays, its lower records
unreachable. An offset beyond the end is OFFSET_OUT_OF_RANGE. A partition named more than once is answered
once, for the last offset named (Kafka takes the request as a map). A compact-only topic's records are refused
(POLICY_VIOLATION, as Kafka: they go only when compaction replaces them). The store's ``truncate`` first commits
what is staged, so the high watermark it measures is the committed one Fetch also sees; the answer (the
new low watermark) waits until the truncation is durable. Every `PARTITIONS_PER_TURN` partitions the handler
lets the other connections' requests run (a request naming 9,000 partitions held the event loop 436 ms at once),
and commits the truncations so far: the store truncates without scheduling a commit, so all 5,000 of a request
were written by one commit at its end, which held the loop 36 ms (their state rows, the tail cache, the listeners).
Kafka, too, truncates each partition on its own.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.config_resources import failure
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import give_way
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.compaction.settings import refuse_delete_records
from logwright.core.errors import DomainError
from logwright.core.log.internal_topics import refuse_append

if TYPE_CHECKING:
    from kio.schema.delete_records import v0, v1, v2

    DeleteRecordsRequest: TypeAlias = v0.DeleteRecordsRequest | v1.DeleteRecordsRequest | v2.DeleteRecordsRequest
    """Every version served: mypy checks each field read against all of them."""

PARTITIONS_PER_TURN = 50
"""Partitions truncated before the handler yields to the event loop (6-14 ms of work on this machine; 200 held it
23-55 ms at a time, and a client waiting behind that meets several such stretches)."""
COMMITTED_EVERY = 250
"""Partitions truncated before the handler commits them (one commit of 5,000 held the loop 36 ms, one of 1,000 13-17
ms; one every 50, 100 commits, made the request 60% longer)."""


@handler(21, "DeleteRecords", 0, 2)
async def handle(context: RequestContext, request: DeleteRecordsRequest) -> Any:
    broker = context.broker
    module = response_module("delete_records", context.api_version)
    truncated = False
    topics = []
    done = 0
    offsets = {(topic.name, int(partition.partition_index)): int(partition.offset)
               for topic in request.topics for partition in topic.partitions}  # the last one named, as Kafka's map
    for topic in request.topics:
        partitions = []
        deletable = allowed(context, AclOperation.DELETE, ResourceType.TOPIC, topic.name)
        for partition in topic.partitions:
            index = int(partition.partition_index)
            offset = offsets.pop((topic.name, index), None)
            if offset is None:
                continue  # named again: answered once, where it was first named
            done += 1
            if done % PARTITIONS_PER_TURN == 0:
                await (broker.durable() if truncated and done % COMMITTED_EVERY == 0 else give_way())
            if broker.commits_held:  # a truncation may commit: never between a staging's parts
                await broker.commits_free()
            partition_id = broker.partition_id(topic.name, index)
            code, low_watermark = ErrorCode.NONE, -1
            if not deletable:  # before whether it exists, as Kafka
                code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif partition_id is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                try:
                    refuse_append(topic.name)
                    if (state := broker.topic(topic.name)) is not None:
                        refuse_delete_records(broker.topic_config(state, "cleanup.policy"))
                    truncated = broker.store.truncate(partition_id, offset) is not None or truncated
                    low_watermark = broker.partition(partition_id).log_start_offset
                except DomainError as error:
                    code, _ = failure(error)
            partitions.append(make(module.DeleteRecordsPartitionResult, partition_index=index,
                                   low_watermark=low_watermark, error_code=code))
        if partitions or not topic.partitions:
            topics.append(make(module.DeleteRecordsTopicResult, name=topic.name, partitions=tuple(partitions)))
    if truncated:
        await broker.durable()
    return make(module.DeleteRecordsResponse, throttle_time=datetime.timedelta(0), topics=tuple(topics))
