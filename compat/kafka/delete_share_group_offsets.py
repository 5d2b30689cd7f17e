"""DeleteShareGroupOffsets (key 92), version 0: remove a share group's state on whole topics.

Every partition of a named topic that has a cursor loses it (`SubscriptionDeleted`); the next member
to fetch starts at ``share.auto.offset.reset`` again. Refusals of the whole request: INVALID_GROUP_ID,
GROUP_ID_NOT_FOUND (no such share group, or a classic or consumer group), NON_EMPTY_GROUP; of a topic:
UNKNOWN_TOPIC_OR_PARTITION when it does not exist or the group has no state on it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.errors import ErrorCode, KafkaError, error_code_for
from logwright.compat.kafka.share_offsets import admin_group, answer, cursors_of
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError
from logwright.core.events import Event
from logwright.core.share_groups import share_group_offsets

if TYPE_CHECKING:
    from kio.schema.delete_share_group_offsets import v0

    DeleteShareGroupOffsetsRequest: TypeAlias = v0.DeleteShareGroupOffsetsRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(92, "DeleteShareGroupOffsets", 0, 0)
async def handle(context: RequestContext, request: DeleteShareGroupOffsetsRequest) -> Any:
    broker = context.broker
    module = response_module("delete_share_group_offsets", context.api_version)
    group_id = request.group_id
    try:
        admin_group(broker, group_id, must_exist=True)
    except DomainError as error:
        return answer(module.DeleteShareGroupOffsetsResponse, error_code_for(error), str(error))
    cursor_of = cursors_of(broker, group_id)
    events: list[Event] = []
    topics = []
    # a topic named again gets its first answer and its deletions are staged once (each naming went over the
    # topic's partitions and staged their deletions again)
    decided: dict[str, Any] = {}
    for entry in request.topics:
        answered = decided.get(entry.topic_name)
        if answered is None:
            topic = broker.topic(entry.topic_name)
            code, message, topic_id = ErrorCode.NONE, None, None
            try:
                if not allowed(context, AclOperation.READ, ResourceType.TOPIC, entry.topic_name):
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
                events.extend(share_group_offsets.delete(group_id, entry.topic_name, topic, cursor_of))
                topic_id = uuid.UUID(bytes=topic.topic_id) if topic is not None else None
            except KafkaError as error:
                code, message = error.code, error.message
            except DomainError as error:
                code, message = error_code_for(error), str(error)
            answered = decided[entry.topic_name] = make(
                module.DeleteShareGroupOffsetsResponseTopic, topic_name=entry.topic_name, topic_id=topic_id,
                error_code=code, error_message=message)
        topics.append(answered)
    if events:
        broker.stage(events)
        await broker.durable()
    return answer(module.DeleteShareGroupOffsetsResponse, ErrorCode.NONE, None, tuple(topics))
