"""OffsetForLeaderEpoch (key 23), versions 2-4: where a leader epoch's records end, for a consumer's truncation check.

A consumer that resumes from a position carrying a leader epoch (a committed offset, or one it fetched) asks where
that epoch ends; an end below its position means the log was truncated under it (KIP-320). The Java consumer skips
this validation against a broker that does not list the key, and franz-go validates committed offsets with it.
One broker leads every partition at epoch 0 and never truncates what it acknowledged, so the answer is the log end
for epoch 0 (`leader_epochs.epoch_end`).

Answered as Kafka 4.4 answers (tests/integration/test_offset_for_leader_epoch.py runs on both): the current leader
epoch checked as ListOffsets checks it (only -1 is none), an unknown topic, partition or invalid name
UNKNOWN_TOPIC_OR_PARTITION, a partition named twice answered twice, ``replica_id`` not read. Under an authorizer
CLUSTER_ACTION on the cluster allows every topic (the followers' right), else DESCRIBE on each; a refused topic is
TOPIC_AUTHORIZATION_FAILED and comes after the allowed ones, as Kafka merges them. Versions 0-1 are gone from Kafka
4.x (KIP-896).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed, allowed_on_cluster
from logwright.compat.errors import ErrorCode
from logwright.compat.leader_epochs import NO_EPOCH, UNDEFINED_EPOCH_OFFSET, epoch_end, leader_epoch_error
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import Slices, answered_once_in_turns
from logwright.core.acls.bindings import AclOperation, ResourceType

if TYPE_CHECKING:
    from kio.schema.offset_for_leader_epoch import v2, v3, v4

    OffsetForLeaderEpochRequest: TypeAlias = (
        v2.OffsetForLeaderEpochRequest | v3.OffsetForLeaderEpochRequest | v4.OffsetForLeaderEpochRequest)
    """Every version served: mypy checks each field read against all of them."""

Asked: TypeAlias = tuple[str, int, int, int]
"""Topic, partition, current leader epoch, leader epoch asked."""


@handler(23, "OffsetForLeaderEpoch", 2, 4, at_once=True)
async def handle(context: RequestContext, request: OffsetForLeaderEpochRequest) -> Any:
    broker = context.broker
    module = response_module("offset_for_leader_epoch", context.api_version)
    every_topic = allowed_on_cluster(context, AclOperation.CLUSTER_ACTION)
    readable: dict[str, bool] = {}
    slices = Slices()  # a request may name topics by the hundred thousand: others run between slices
    for topic in request.topics:
        if topic.topic not in readable:
            readable[topic.topic] = every_topic or allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                                           topic.topic)
        await slices.done()

    def answer(asked: Asked) -> Any:
        name, index, current_leader_epoch, leader_epoch = asked
        if not readable[name]:
            return _refused(module, index, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        partition_id = broker.partition_id(name, index)
        if partition_id is None:
            return _refused(module, index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if (code := leader_epoch_error(current_leader_epoch)) is not None:
            return _refused(module, index, code)
        epoch, end_offset = epoch_end(leader_epoch, broker.partition(partition_id).log_start_offset,
                                      broker.high_watermark(partition_id))
        return make(module.EpochEndOffset, error_code=ErrorCode.NONE, partition=index, leader_epoch=epoch,
                    end_offset=end_offset)

    # topics the principal may not DESCRIBE come last, as Kafka merges them
    ordered = [topic for topic in request.topics if readable[topic.topic]]
    ordered += [topic for topic in request.topics if not readable[topic.topic]]
    answers = iter(await answered_once_in_turns(
        ((topic.topic, int(partition.partition), int(partition.current_leader_epoch), int(partition.leader_epoch))
         for topic in ordered for partition in topic.partitions), answer))
    return make(module.OffsetForLeaderEpochResponse, throttle_time=datetime.timedelta(0), topics=tuple(
        make(module.OffsetForLeaderTopicResult, topic=topic.topic,
             partitions=tuple(next(answers) for _ in topic.partitions))
        for topic in ordered))


def _refused(module: Any, index: int, code: ErrorCode) -> Any:
    return make(module.EpochEndOffset, error_code=code, partition=index, leader_epoch=NO_EPOCH,
                end_offset=UNDEFINED_EPOCH_OFFSET)
