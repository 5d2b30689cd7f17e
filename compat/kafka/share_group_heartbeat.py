"""ShareGroupHeartbeat (key 76), version 1: join (epoch 0), stay alive, learn the assignment, leave (epoch -1).

librdkafka 2.16 sends only v1, generates its own member id, names its subscription on the first
heartbeat (and again only when it changes) and acks a new assignment simply by heartbeating with the
new epoch. The assignment is sent on every join, to a heartbeat naming its topics, and when its partitions
changed, never otherwise (null means "unchanged"), as Kafka 4.4 sends it: a member catching up with the group's
epoch is told the epoch alone. Refusals are Kafka 4.4's (tests/integration/test_share_group_heartbeat_errors.py
runs on both):
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (the client rejoins with epoch 0); GROUP_ID_NOT_FOUND for a heartbeat
other than a join to a group that does not exist, and for a join under the id of a classic or consumer group
(one namespace); INVALID_REQUEST for an empty group, member or rack id, a member id longer than 36 characters, an
epoch below -1, a join without topics.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.kafka.heartbeat_answer import heartbeat_answer, refusal
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError
from logwright.core.share_groups.share_groups import ShareHeartbeat

if TYPE_CHECKING:
    from kio.schema.share_group_heartbeat import v1

    ShareGroupHeartbeatRequest: TypeAlias = v1.ShareGroupHeartbeatRequest
    """Every version served: mypy checks each field read against all of them."""


@handler(76, "ShareGroupHeartbeat", 1, 1)
async def handle(context: RequestContext, request: ShareGroupHeartbeatRequest) -> Any:
    module = response_module("share_group_heartbeat", context.api_version)
    coordinator = share_coordinator(context.broker)
    topics = request.subscribed_topic_names
    command = ShareHeartbeat(
        group_id=request.group_id or "",
        member_id=request.member_id or "",
        member_epoch=int(request.member_epoch),
        rack_id=request.rack_id,
        subscribed_topics=tuple(topics) if topics is not None else None,
        client_id=context.client_id or "",
        client_host=f"/{context.client_host}",
    )

    answer = heartbeat_answer(module.ShareGroupHeartbeatResponse, coordinator, command.group_id)

    if topics and context.broker.authorizer is not None and not all(
            allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name) for name in topics):
        # a subscription naming a topic the principal may not DESCRIBE: refused alone, nothing else told (Kafka)
        return answer(ErrorCode.TOPIC_AUTHORIZATION_FAILED, None, None, 0, None)
    before = coordinator.group(command.group_id)
    was = before.member(command.member_id) if before is not None else None
    try:
        member_id, state = await coordinator.heartbeat(command)
    except DomainError as error:
        return refusal(answer, error_code_for(error), str(error))
    member = state.member(member_id)
    if member is None:
        return answer(ErrorCode.NONE, None, member_id, -1, None)
    assignment = None
    if command.member_epoch == 0 or topics is not None or was is None or was.assignment != member.assignment:
        assignment = make(module.Assignment, topic_partitions=tuple(
            make(module.TopicPartitions, topic_id=uuid.UUID(bytes=topic_id), partitions=partitions)
            for _, topic_id, partitions in member.assignment
        ))
    return answer(ErrorCode.NONE, None, member_id, member.member_epoch, assignment)
