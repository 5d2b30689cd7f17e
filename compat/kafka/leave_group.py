"""LeaveGroup (key 13), versions 0-5: members leave at once instead of waiting out their session.

v0-v2 name one member and answer with one error; v3+ batch members (by member id and/or
``group.instance.id``) and answer per member (v5 adds a reason, which is not recorded). A KIP-848 consumer group's
members, classic or not, leave through its coordinator (`core.consumer_groups.classic_members`), as in Kafka 4.4.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator, consumer_group
from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.errors import DomainError

if TYPE_CHECKING:
    from kio.schema.leave_group import v0, v1, v2, v3, v4, v5
    from typing_extensions import TypeIs

    LeaveGroupRequest: TypeAlias = (
        v0.LeaveGroupRequest | v1.LeaveGroupRequest | v2.LeaveGroupRequest | v3.LeaveGroupRequest
        | v4.LeaveGroupRequest | v5.LeaveGroupRequest
    )
    """Every version served: mypy checks each field read against all of them."""


@handler(13, "LeaveGroup", 0, 5)
async def handle(context: RequestContext, request: LeaveGroupRequest) -> Any:
    module = response_module("leave_group", context.api_version)
    batched = context.api_version >= 3
    leaving: list[tuple[str, str | None]] = (
        [(member.member_id, member.group_instance_id) for member in request.members]
        if _batched(request)
        else [(request.member_id, None)]
    )
    consumer = consumer_group(context.broker, request.group_id) if request.group_id else None
    try:
        if consumer is not None:  # its members leave through its coordinator (`classic_members`)
            outcomes = await consumer_coordinator(context.broker).classic_leave(consumer, leaving)
        else:
            outcomes = await coordinator(context.broker).leave(request.group_id, leaving)
    except DomainError as error:
        return make(module.LeaveGroupResponse, throttle_time=datetime.timedelta(0),
                    error_code=error_code_for(error), members=())
    codes = [error_code_for(outcome) if outcome is not None else ErrorCode.NONE for outcome in outcomes]
    members = tuple(
        make(module.MemberResponse, member_id=member_id, group_instance_id=instance_id, error_code=code)
        for (member_id, instance_id), code in zip(leaving, codes, strict=True)
    ) if batched else ()
    top_level = ErrorCode.NONE if batched else codes[0]
    return make(module.LeaveGroupResponse, throttle_time=datetime.timedelta(0), error_code=top_level,
                members=members)


def _batched(request: LeaveGroupRequest) -> TypeIs[v3.LeaveGroupRequest | v4.LeaveGroupRequest | v5.LeaveGroupRequest]:
    """v3+ let several members leave at once."""
    return has_field(request, "members")
