"""ShareGroupDescribe (key 77), version 1: a share group's epoch, state and members with their assignments.

An unknown (or deleted) group, or one of another kind, answers GROUP_ID_NOT_FOUND with the fields Kafka 4.4
leaves at their defaults: state "", epochs 0, no assignor. An empty group id answers INVALID_GROUP_ID, ahead of
the others as Kafka 4.4 lists them (the rest in request order: Kafka's follow its coordinator partitions). A
live group is Stable with members, Empty without. Its authorized operations are reported when asked, not for an
error (`authorized_operations`).
"""

from __future__ import annotations

import datetime
import uuid
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat import authorized_operations
from logwright.compat.authorization import allowed
from logwright.compat.authorization import operations as permitted
from logwright.compat.coordinators.share_coordinator import ShareCoordinator, share_coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.consumer_group_describe import topics_hidden
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import answered_once_in_turns
from logwright.core.acls.bindings import AclOperation, ResourceType

if TYPE_CHECKING:
    from kio.schema.share_group_describe import v1

    ShareGroupDescribeRequest: TypeAlias = v1.ShareGroupDescribeRequest
    """Every version served: mypy checks each field read against all of them."""

ASSIGNOR = "simple"


@handler(77, "ShareGroupDescribe", 1, 1)
async def handle(context: RequestContext, request: ShareGroupDescribeRequest) -> Any:
    module = response_module("share_group_describe", context.api_version)
    coordinator = share_coordinator(context.broker)
    named = tuple(group_id for group_id in request.group_ids if group_id)
    empty = tuple(_refused(module, "", ErrorCode.INVALID_GROUP_ID, "the group id is empty")
                  for group_id in request.group_ids if not group_id)
    asked = request.include_authorized_operations
    described = tuple(group_id for group_id in named
                      if allowed(context, AclOperation.DESCRIBE, ResourceType.GROUP, group_id))
    refused = tuple(_refused(module, group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.")
                    for group_id in named if context.broker.authorizer is not None
                    and not allowed(context, AclOperation.DESCRIBE, ResourceType.GROUP, group_id))
    def hides_topics(group_id: str) -> bool:
        """Kafka replaces a group whose members are assigned a topic the principal may not DESCRIBE."""
        state = coordinator.group(group_id)
        return context.broker.authorizer is not None and state is not None and not all(
            allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
            for member in state.members for name, _, _ in member.assignment)

    groups = await answered_once_in_turns(described, lambda group_id: topics_hidden(module, group_id)
                                          if hides_topics(group_id) else _describe(
        module, coordinator, group_id, authorized_operations.reported(asked, permitted(
            context, ResourceType.GROUP, group_id, authorized_operations.GROUP))))
    return make(module.ShareGroupDescribeResponse, throttle_time=datetime.timedelta(0),
                groups=(*empty, *groups, *refused))


def _refused(module: Any, group_id: str, code: ErrorCode, message: str) -> Any:
    return make(module.DescribedGroup, error_code=code, error_message=message, group_id=group_id,
                group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                members=(), authorized_operations=authorized_operations.UNKNOWN)


def _describe(module: Any, coordinator: ShareCoordinator, group_id: str, operations: int) -> Any:
    state = coordinator.group(group_id)
    if state is None:
        return _refused(module, group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"share group {group_id!r} does not exist")
    members = tuple(
        make(module.Member, member_id=member.member_id, rack_id=member.rack_id, member_epoch=member.member_epoch,
             client_id=member.client_id, client_host=member.client_host,
             subscribed_topic_names=member.subscribed_topics,
             assignment=make(module.Assignment, topic_partitions=tuple(
                 make(module.TopicPartitions, topic_id=uuid.UUID(bytes=topic_id), topic_name=name,
                      partitions=partitions)
                 for name, topic_id, partitions in member.assignment)))
        for member in state.members
    )
    return make(module.DescribedGroup, error_code=ErrorCode.NONE, error_message=None, group_id=group_id,
                group_state=state.phase, group_epoch=state.group_epoch,
                assignment_epoch=state.group_epoch, assignor_name=ASSIGNOR, members=members,
                authorized_operations=operations)
