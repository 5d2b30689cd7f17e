"""AlterShareGroupOffsets (key 91), version 0: start share-partitions afresh at given offsets.

Each partition's cursor is replaced by a new one starting at the offset (a `SubscriptionCreated`):
settled holes, redeliveries and delivery counts are gone, as Kafka's InitializeShareGroupState resets
them. A group that does not exist is created empty (`ShareGroupCreated`), as Kafka 4.4 does. Refusals
of the whole request: INVALID_GROUP_ID (empty id), GROUP_ID_NOT_FOUND (a classic or consumer group has the id),
NON_EMPTY_GROUP (members); of a partition: UNKNOWN_TOPIC_OR_PARTITION. A partition named again is answered with
the first answer's bytes and started once, at the last offset named (100,000 entries on one partition were as many
cursors staged and folded, 525 ms in one stretch); the request gives way every `turns.ANSWERS_PER_TURN` entries.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.kafka.share_offsets import admin_group, answer
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import Slices
from logwright.compat.wire.encoder import OnceAnswered
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError
from logwright.core.log.catalog import TopicState
from logwright.core.share_groups import share_group_offsets

if TYPE_CHECKING:
    from kio.schema.alter_share_group_offsets import v0

    AlterShareGroupOffsetsRequest: TypeAlias = v0.AlterShareGroupOffsetsRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(91, "AlterShareGroupOffsets", 0, 0)
async def handle(context: RequestContext, request: AlterShareGroupOffsetsRequest) -> Any:
    broker = context.broker
    module = response_module("alter_share_group_offsets", context.api_version)
    try:
        group = admin_group(broker, request.group_id, must_exist=False)
    except DomainError as error:
        return answer(module.AlterShareGroupOffsetsResponse, error_code_for(error), str(error))
    starts: dict[int, tuple[str, int, int]] = {}  # per partition, the last start named (each was staged and folded)
    slices = Slices()
    topics = []
    for entry in request.topics:
        topic = broker.topic(entry.topic_name)

        readable = allowed(context, AclOperation.READ, ResourceType.TOPIC, entry.topic_name)

        def result(index: int, topic: TopicState | None = topic, name: str = entry.topic_name,
                   readable: bool = readable) -> Any:
            code, message = ErrorCode.NONE, None
            if not readable:  # before whether it exists, as Kafka
                return make(module.AlterShareGroupOffsetsResponsePartition, partition_index=index,
                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                            error_message="Topic authorization failed.")
            try:
                share_group_offsets.partition_id_of(name, topic, index)
            except DomainError as error:
                code, message = error_code_for(error), str(error)
            return make(module.AlterShareGroupOffsetsResponsePartition, partition_index=index, error_code=code,
                        error_message=message)

        answered = OnceAnswered(result)  # a partition named again: the first answer's bytes
        partitions = []
        for partition in entry.partitions:
            index = int(partition.partition_index)
            if readable and topic is not None and 0 <= index < len(topic.partition_ids):
                partition_id = topic.partition_ids[index]
                starts[partition_id] = (entry.topic_name, partition_id, int(partition.start_offset))
            partitions.append(answered(index))
            await slices.done()
        topics.append(make(module.AlterShareGroupOffsetsResponseTopic, topic_name=entry.topic_name,
                           topic_id=uuid.UUID(bytes=topic.topic_id) if topic is not None else None,
                           partitions=tuple(partitions)))
    try:  # checked again: a member may have joined while the request gave way
        group = admin_group(broker, request.group_id, must_exist=False)
    except DomainError as error:
        return answer(module.AlterShareGroupOffsetsResponse, error_code_for(error), str(error))
    still = [start for start in starts.values() if _exists(broker, start[0], start[1])]  # a topic deleted meanwhile
    events = share_group_offsets.alter(request.group_id, group, still)
    if events:
        broker.stage(events)
        await broker.durable()
    return answer(module.AlterShareGroupOffsetsResponse, ErrorCode.NONE, None, tuple(topics))


def _exists(broker: Any, topic_name: str, partition_id: int) -> bool:
    """Whether the partition is still there (partition ids are never reused: a start on a deleted one would stay)."""
    topic = broker.topic(topic_name)
    return topic is not None and partition_id in topic.partition_ids
