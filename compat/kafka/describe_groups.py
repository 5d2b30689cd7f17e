"""DescribeGroups (key 15), versions 0-6: state, protocol and members of classic groups.

As in Kafka, member metadata and assignments (and the protocol name) are reported only for a Stable
group; a group that only has committed offsets is Empty. An unknown group is Dead with no error in
v0-v5 and GROUP_ID_NOT_FOUND in v6 (KIP-1043). A share group is not a classic group: Dead with no error
in v0-v5 and GROUP_ID_NOT_FOUND ("... is not a classic group") in v6, as Kafka 4.4 answers; it is
described by ShareGroupDescribe. A KIP-848 consumer group is answered the same way (ConsumerGroupDescribe
describes it). v4+ add members' ``group.instance.id``; v3+ report a group's authorized operations when asked
(`authorized_operations`), not for an error. A group named more than once is answered each time, as in Kafka,
from one encoded description (`answered_once`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat import authorized_operations
from logwright.compat.authorization import allowed
from logwright.compat.authorization import operations as permitted
from logwright.compat.coordinators.consumer_coordinator import consumer_group
from logwright.compat.coordinators.group_coordinator import committed_offsets, coordinator, group_state
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import answered_once_in_turns
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.groups.groups import GroupPhase

if TYPE_CHECKING:
    from kio.schema.describe_groups import v0, v1, v2, v3, v4, v5, v6

    DescribeGroupsRequest: TypeAlias = (
        v0.DescribeGroupsRequest | v1.DescribeGroupsRequest | v2.DescribeGroupsRequest | v3.DescribeGroupsRequest
        | v4.DescribeGroupsRequest | v5.DescribeGroupsRequest | v6.DescribeGroupsRequest
    )
    """Every version served: mypy checks each field read against all of them."""



@handler(15, "DescribeGroups", 0, 6)
async def handle(context: RequestContext, request: DescribeGroupsRequest) -> Any:
    module = response_module("describe_groups", context.api_version)
    coordinator(context.broker)
    asked = bool(getattr(request, "include_authorized_operations", False))  # v3+
    operations = authorized_operations.reported(asked, authorized_operations.GROUP)
    if context.broker.authorizer is None:
        groups = await answered_once_in_turns(request.groups, lambda group_id: _describe(context, module, group_id,
                                                                                         operations))
        return make(module.DescribeGroupsResponse, throttle_time=datetime.timedelta(0), groups=groups)
    # with an authorizer: the groups the principal may DESCRIBE, then the others refused, as Kafka answers
    described = [group_id for group_id in request.groups
                 if allowed(context, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)]
    refused = [group_id for group_id in request.groups
               if not allowed(context, AclOperation.DESCRIBE, ResourceType.GROUP, group_id)]
    groups = await answered_once_in_turns(described, lambda group_id: _describe(
        context, module, group_id, authorized_operations.reported(asked, permitted(
            context, ResourceType.GROUP, group_id, authorized_operations.GROUP))))
    return make(module.DescribeGroupsResponse, throttle_time=datetime.timedelta(0), groups=(*groups, *(
        make(module.DescribedGroup, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None,
             group_id=group_id, group_state="", protocol_type="", protocol_data="", members=(),
             authorized_operations=authorized_operations.UNKNOWN) for group_id in refused)))


def _describe(context: RequestContext, module: Any, group_id: str, operations: int) -> Any:
    """One group's description; ``operations``: the authorized operations to report unless it is an error."""
    broker = context.broker
    state = group_state(broker, group_id)
    code, message = ErrorCode.NONE, None
    if state is None:
        has_offsets = committed_offsets(broker, group_id) is not None
        has_offsets = has_offsets and consumer_group(broker, group_id) is None
        phase = GroupPhase.EMPTY if has_offsets else GroupPhase.DEAD
        if phase == GroupPhase.DEAD and context.api_version >= 6:
            code, message = ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist"
            if share_coordinator(broker).group(group_id) is not None:
                message = f"group {group_id!r} is not a classic group: it is a share group (see ShareGroupDescribe)"
            elif consumer_group(broker, group_id) is not None:
                message = (f"group {group_id!r} is not a classic group: it is a consumer group (see "
                           "ConsumerGroupDescribe)")
        return make(module.DescribedGroup, error_code=code, error_message=message, group_id=group_id,
                    group_state=str(phase), protocol_type="", protocol_data="", members=(),
                    authorized_operations=operations if code == ErrorCode.NONE else authorized_operations.UNKNOWN)
    stable = state.phase == GroupPhase.STABLE
    members = tuple(
        make(module.DescribedGroupMember, member_id=member.member_id, group_instance_id=member.group_instance_id,
             client_id=member.client_id, client_host=member.client_host,
             member_metadata=member.metadata(state.protocol_name) if stable else b"",
             member_assignment=member.assignment if stable else b"")
        for member in state.members
    )
    return make(module.DescribedGroup, error_code=code, error_message=message, group_id=group_id,
                group_state=str(state.phase), protocol_type=state.protocol_type or "",
                protocol_data=(state.protocol_name or "") if stable else "", members=members,
                authorized_operations=operations)
