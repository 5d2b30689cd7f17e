"""SyncGroup (key 14), versions 0-5: the leader hands out assignments, followers wait for theirs.

v3+ carry ``group.instance.id``; v5 names the protocol type and name in request and answer, and the
coordinator refuses a mismatch with INCONSISTENT_GROUP_PROTOCOL.
"""

from __future__ import annotations

import datetime
from typing import Any

from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.errors import DomainError
from logwright.core.groups.group_membership import SyncGroup


@handler(14, "SyncGroup", 0, 5)
async def handle(context: RequestContext, request: Any) -> Any:
    module = response_module("sync_group", context.api_version)
    command = SyncGroup(
        group_id=request.group_id,
        generation=int(request.generation_id),
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        protocol_type=getattr(request, "protocol_type", None),
        protocol_name=getattr(request, "protocol_name", None),
        assignments=tuple((entry.member_id, bytes(entry.assignment)) for entry in request.assignments),
    )
    try:
        reply = await coordinator(context.broker).sync(command)
    except DomainError as error:
        code, protocol_type, protocol_name, assignment = error_code_for(error), None, None, b""
    else:
        code = error_code_for(reply.error) if reply.error is not None else ErrorCode.NONE
        protocol_type, protocol_name, assignment = reply.protocol_type, reply.protocol_name, reply.assignment
    return make(module.SyncGroupResponse, throttle_time=datetime.timedelta(0), error_code=code,
                protocol_type=protocol_type, protocol_name=protocol_name, assignment=assignment)
