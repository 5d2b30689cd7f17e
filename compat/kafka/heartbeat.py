"""Heartbeat (key 12), versions 0-4: keeps a member's session alive and tells it about rebalances.

v3+ carry ``group.instance.id``. A heartbeat during PreparingRebalance still counts as a sign of life
and is answered REBALANCE_IN_PROGRESS, which is how members learn to rejoin.
"""

from __future__ import annotations

import datetime
from typing import Any

from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.errors import DomainError
from logwright.core.groups.group_membership import Heartbeat


@handler(12, "Heartbeat", 0, 4)
async def handle(context: RequestContext, request: Any) -> Any:
    module = response_module("heartbeat", context.api_version)
    command = Heartbeat(request.group_id, int(request.generation_id), request.member_id,
                        getattr(request, "group_instance_id", None))
    try:
        coordinator(context.broker).heartbeat(command)
        code = ErrorCode.NONE
    except DomainError as error:
        code = error_code_for(error)
    return make(module.HeartbeatResponse, throttle_time=datetime.timedelta(0), error_code=code)
