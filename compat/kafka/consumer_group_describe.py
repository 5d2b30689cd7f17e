"""ConsumerGroupDescribe (key 69), versions 0-1: KIP-848 consumer groups, their members and assignments.

Each member is reported with its subscription, its current assignment and its target assignment; the
group with its epoch, the epoch of its target assignment and the assignor that computed it. v1 adds
the member type (1: a consumer-protocol member; classic members cannot join these groups here). An
unknown group is GROUP_ID_NOT_FOUND, as is a classic or share group ("... is not a consumer group"), its other fields
left at their defaults (no state, epochs 0) as Kafka 4.4 leaves them.
Authorized operations are reported when asked, not for an error (`authorized_operations`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat import authorized_operations
from logwright.compat.authorization import allowed
from logwright.compat.authorization import operations as permitted
from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator, consumer_group
from logwright.compat.coordinators.group_coordinator import group_state
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.consumer_group_heartbeat import wire_assignment
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import answered_once_in_turns
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState

if TYPE_CHECKING:
    from kio.schema.consumer_group_describe import v0, v1

    ConsumerGroupDescribeRequest: TypeAlias = v0.ConsumerGroupDescribeRequest | v1.ConsumerGroupDescribeRequest
    """Every version served: mypy checks each field read against all of them."""

CONSUMER_MEMBER_TYPE = 1
CLASSIC_MEMBER_TYPE = 0
"""v1's ``MemberType`` (KIP-1099): a member that joined with JoinGroup is classic."""


@handler(69, "ConsumerGroupDescribe", 0, 1)
async def handle(context: RequestContext, request: ConsumerGroupDescribeRequest) -> Any:
    module = response_module("consumer_group_describe", context.api_version)
    consumer_coordinator(context.broker)
    asked = request.include_authorized_operations
    described = [group_id for group_id in request.group_ids
                 if allowed(context, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)]
    refused = [group_id for group_id in request.group_ids
               if context.broker.authorizer is not None
               and not allowed(context, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)]
    groups = await answered_once_in_turns(described, lambda group_id: _describe(
        context, module, group_id, authorized_operations.reported(asked, permitted(
            context, ResourceType.GROUP, group_id, authorized_operations.GROUP))))
    return make(module.ConsumerGroupDescribeResponse, throttle_time=datetime.timedelta(0), groups=(*groups, *(
        make(module.DescribedGroup, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED,
             error_message="Group authorization failed.", group_id=group_id, group_state="", group_epoch=0,
             assignment_epoch=0, assignor_name="", members=(), authorized_operations=authorized_operations.UNKNOWN)
        for group_id in refused)))  # after the others, as Kafka answers the groups the principal may not DESCRIBE


def _describe(context: RequestContext, module: Any, group_id: str, operations: int) -> Any:
    broker = context.broker
    state = consumer_group(broker, group_id)
    if state is None:
        other = (group_state(broker, group_id) is not None
                 or share_coordinator(broker).group(group_id) is not None)
        message = (f"group {group_id!r} is not a consumer group" if other
                   else f"group {group_id!r} does not exist")
        return make(module.DescribedGroup, error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=message,
                    group_id=group_id, group_state="", group_epoch=0, assignment_epoch=0, assignor_name="",
                    members=(), authorized_operations=authorized_operations.UNKNOWN)
    members = _members(context, module, state)
    if context.broker.authorizer is not None and not all(
            allowed(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name) for name in {
                part.topic_name for member in members
                for assignment in (member.assignment, member.target_assignment)
                for part in assignment.topic_partitions}):
        return topics_hidden(module, group_id)
    return make(module.DescribedGroup, error_code=ErrorCode.NONE, error_message=None, group_id=group_id,
                group_state=state.phase, group_epoch=state.group_epoch, assignment_epoch=state.assignment_epoch,
                assignor_name=state.assignor, members=members, authorized_operations=operations)


TOPICS_HIDDEN = "The group has described topic(s) that the client is not authorized to describe."


def topics_hidden(module: Any, group_id: str) -> Any:
    """A group whose members' assignments name a topic the principal may not DESCRIBE: told nothing but that, as
    Kafka answers it (TOPIC_AUTHORIZATION_FAILED in place of the whole group)."""
    return make(module.DescribedGroup, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=TOPICS_HIDDEN,
                group_id=group_id, group_state="", group_epoch=0, assignment_epoch=0, assignor_name="", members=(),
                authorized_operations=authorized_operations.UNKNOWN)


def _members(context: RequestContext, module: Any, state: ConsumerGroupState) -> tuple[Any, ...]:
    broker = context.broker
    return tuple(
        make(module.Member, member_id=member.member_id, instance_id=member.instance_id, rack_id=member.rack_id,
             member_epoch=member.member_epoch, client_id=member.client_id, client_host=member.client_host,
             subscribed_topic_names=member.subscribed_topic_names,
             subscribed_topic_regex=member.subscribed_topic_regex or "",  # Kafka 4.4 answers "" for none
             assignment=wire_assignment(broker, module, member.assigned),
             target_assignment=wire_assignment(broker, module, state.target(member.member_id)),
             member_type=CLASSIC_MEMBER_TYPE if member.uses_classic_protocol else CONSUMER_MEMBER_TYPE)
        for member in state.members
    )
