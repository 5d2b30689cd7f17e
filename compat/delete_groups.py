"""DeleteGroups (key 42), versions 0-2: remove groups without members, offsets included (`GroupDeleted`).

A group with members is refused with NON_EMPTY_GROUP, an unknown one with GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

import datetime
from typing import Any

from logwright.core.errors import DomainError
from logwright.core.group_admin import decide_delete_group
from logwright.core.group_offsets import GroupOffsets

from .errors import ErrorCode, error_code_for
from .group_coordinator import coordinator, group_state
from .registry import RequestContext, handler, make, response_module


@handler(42, "DeleteGroups", 0, 2)
async def handle(context: RequestContext, request: Any) -> Any:
    broker = context.broker
    module = response_module("delete_groups", context.api_version)
    results = []
    deleted = False
    for group_id in request.groups_names:
        offsets = broker.store.state("group_offsets", group_id)
        try:
            event = decide_delete_group(group_id, group_state(broker, group_id),
                                        offsets if isinstance(offsets, GroupOffsets) else None)
        except DomainError as error:
            code = error_code_for(error)
        else:
            broker.stage([event])
            coordinator(broker).sessions.forget(group_id)
            deleted, code = True, ErrorCode.NONE
        results.append(make(module.DeletableGroupResult, group_id=group_id, error_code=code))
    if deleted:
        await broker.durable()
    return make(module.DeleteGroupsResponse, throttle_time=datetime.timedelta(0), results=tuple(results))
