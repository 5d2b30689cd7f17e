"""ListGroups (key 16), versions 0-5: every classic group with members or committed offsets.

v4+ filter by state (case-insensitive, as Kafka) and report it; v5 filters by group type and reports
it — every group here is ``classic``.
"""

from __future__ import annotations

import datetime
from typing import Any

from logwright.core.group_admin import list_groups
from logwright.core.groups import GroupState

from .errors import ErrorCode
from .group_coordinator import coordinator
from .registry import RequestContext, handler, make, response_module

GROUP_TYPE = "classic"


@handler(16, "ListGroups", 0, 5)
async def handle(context: RequestContext, request: Any) -> Any:
    module = response_module("list_groups", context.api_version)
    store = context.broker.store
    coordinator(context.broker)
    states = [state for state in store.entities("groups").values() if isinstance(state, GroupState)]
    listed = list_groups(states, store.entities("group_offsets").keys())
    wanted_states = {state.lower() for state in getattr(request, "states_filter", ())}
    wanted_types = {kind.lower() for kind in getattr(request, "types_filter", ())}
    if wanted_types and GROUP_TYPE not in wanted_types:
        listed = []
    groups = tuple(
        make(module.ListedGroup, group_id=entry.group_id, protocol_type=entry.protocol_type,
             group_state=str(entry.phase), group_type=GROUP_TYPE)
        for entry in listed
        if not wanted_states or str(entry.phase).lower() in wanted_states
    )
    return make(module.ListGroupsResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                groups=groups)
