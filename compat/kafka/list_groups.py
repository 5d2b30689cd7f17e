"""ListGroups (key 16), versions 0-5: every classic group with members or committed offsets, and every share group.

v4+ filter by state (case-insensitive, as Kafka) and report it; v5 filters by group type and reports
it. Share groups are listed as Kafka 4.4 lists them: protocol type ``share``, state ``Stable`` or
``Empty``, type ``share`` (a deleted one is gone); KIP-848 consumer groups with protocol type and type
``consumer`` and their states (Empty, Assigning, Reconciling, Stable); the type filter takes ``classic``,
``consumer`` and ``share``.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed, allowed_on_cluster
from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator
from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.groups.group_admin import GroupListing, list_groups
from logwright.core.groups.groups import GroupState

if TYPE_CHECKING:
    from kio.schema.list_groups import v0, v1, v2, v3, v4, v5
    from typing_extensions import TypeIs

    ListGroupsRequest: TypeAlias = (
        v0.ListGroupsRequest | v1.ListGroupsRequest | v2.ListGroupsRequest | v3.ListGroupsRequest
        | v4.ListGroupsRequest | v5.ListGroupsRequest
    )
    """Every version served: mypy checks each field read against all of them."""

GROUP_TYPE = "classic"
SHARE_TYPE = "share"
CONSUMER_TYPE = "consumer"


@handler(16, "ListGroups", 0, 5)
async def handle(context: RequestContext, request: ListGroupsRequest) -> Any:
    module = response_module("list_groups", context.api_version)
    store = context.broker.store
    coordinator(context.broker)
    states = [state for state in store.entities("groups").values() if isinstance(state, GroupState)]
    consumers = consumer_coordinator(context.broker).groups()
    consumer_ids = {group.group_id for group in consumers}
    with_offsets = coordinator(context.broker).groups_with_offsets()
    offsets_only = (group_id for group_id in with_offsets if group_id not in consumer_ids)
    listed = [(entry, GROUP_TYPE) for entry in list_groups(states, offsets_only)]
    listed.extend((GroupListing(group.group_id, CONSUMER_TYPE, group.phase), CONSUMER_TYPE) for group in consumers)
    listed.extend((GroupListing(group.group_id, SHARE_TYPE, group.phase), SHARE_TYPE)
                  for group in share_coordinator(context.broker).groups())
    wanted_states = {state.lower() for state in (request.states_filter if _filters_states(request) else ())}
    wanted_types = {kind.lower() for kind in (request.types_filter if _filters_types(request) else ())}
    if not allowed_on_cluster(context, AclOperation.DESCRIBE):  # then only the groups it may DESCRIBE, as Kafka
        listed = [(entry, kind) for entry, kind in listed
                  if allowed(context, AclOperation.DESCRIBE, ResourceType.GROUP, entry.group_id)]
    groups = tuple(
        make(module.ListedGroup, group_id=entry.group_id, protocol_type=entry.protocol_type,
             group_state=str(entry.phase), group_type=kind)
        for entry, kind in sorted(listed, key=lambda item: item[0].group_id)
        if (not wanted_states or str(entry.phase).lower() in wanted_states)
        and (not wanted_types or kind in wanted_types)
    )
    return make(module.ListGroupsResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                groups=groups)


def _filters_states(request: ListGroupsRequest) -> TypeIs[v4.ListGroupsRequest | v5.ListGroupsRequest]:
    """v4+ may filter by group state."""
    return has_field(request, "states_filter")


def _filters_types(request: ListGroupsRequest) -> TypeIs[v5.ListGroupsRequest]:
    """v5 may filter by group type."""
    return has_field(request, "types_filter")
