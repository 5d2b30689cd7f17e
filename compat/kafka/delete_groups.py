"""DeleteGroups (key 42), versions 0-2: remove groups without members, offsets included (`GroupDeleted`).

A group with members is refused with NON_EMPTY_GROUP, an unknown one with GROUP_ID_NOT_FOUND. A share
group is deleted the same way, as Kafka 4.4 does: only while empty, with its cursors (its delivery
state); its config overrides stay. Then ShareGroupDescribe says GROUP_ID_NOT_FOUND, DescribeGroups
Dead, ListGroups leaves it out, and a member joining under the name starts a new group from
``share.auto.offset.reset``. A KIP-848 consumer group is deleted with its offsets once it has no members. A group
named more than once is deleted and answered once (Kafka's results are keyed by group id).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator, consumer_group
from logwright.compat.coordinators.group_coordinator import committed_offsets, coordinator, group_state
from logwright.compat.coordinators.share_coordinator import DeletionIndex, share_coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.compat.turns import give_way
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError, NonEmptyGroup, quoted
from logwright.core.groups.group_admin import decide_delete_group
from logwright.core.groups.group_offsets import deletion

if TYPE_CHECKING:
    from kio.schema.delete_groups import v0, v1, v2

    DeleteGroupsRequest: TypeAlias = v0.DeleteGroupsRequest | v1.DeleteGroupsRequest | v2.DeleteGroupsRequest
    """Every version served: mypy checks each field read against all of them."""


ROWS_PER_TURN = 5_000
"""Rows (committed offsets, share cursors) deleted before the request gives way: each group's deletion is its own,
and 40 groups of 10,000 committed partitions each held every client 450 ms in one stretch."""


@handler(42, "DeleteGroups", 0, 2)
async def handle(context: RequestContext, request: DeleteGroupsRequest) -> Any:
    broker = context.broker
    module = response_module("delete_groups", context.api_version)
    results = []
    deleted = False
    shares = share_coordinator(broker)
    index: DeletionIndex | None = None  # read once, when a share group is first named (again after giving way)
    rows = 0
    named = dict.fromkeys(request.groups_names)  # a group named again is answered once, as in Kafka
    refused = [group_id for group_id in named if not allowed(context, AclOperation.DELETE, ResourceType.GROUP,
                                                             group_id)]
    skipped = set(refused)
    for group_id in named:
        if group_id in skipped:
            continue  # answered after the others, as Kafka answers the groups the principal may not DELETE
        if rows >= ROWS_PER_TURN:
            rows, index = 0, None
            await give_way()
        try:
            if shares.group(group_id) is not None:
                index = shares.deletion_index() if index is None else index
                rows += len(index.cursors.get(group_id, ())) + 1
                shares.delete_group(group_id, index)
            elif consumer_group(broker, group_id) is not None:
                rows += _delete_consumer_group(broker, group_id)
            else:
                rows += _delete_classic(broker, group_id)
        except DomainError as error:
            code = error_code_for(error)
        else:
            deleted, code = True, ErrorCode.NONE
        results.append(make(module.DeletableGroupResult, group_id=group_id, error_code=code))
    results.extend(make(module.DeletableGroupResult, group_id=group_id,
                        error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED) for group_id in refused)
    if deleted:
        await broker.durable()
    return make(module.DeleteGroupsResponse, throttle_time=datetime.timedelta(0), results=tuple(results))


def _delete_consumer_group(broker: Broker, group_id: str) -> int:
    """A KIP-848 consumer group goes with its offsets (`GroupDeleted`) once it has no members; the rows it
    deletes."""
    state = consumer_group(broker, group_id)
    if state is not None and state.members:
        raise NonEmptyGroup(f"consumer group {quoted(group_id)} still has {len(state.members)} members")
    event = deletion(group_id, committed_offsets(broker, group_id))
    broker.stage([event])
    consumer_coordinator(broker).forget_group(group_id)
    return len(event.partitions) + 1


def _delete_classic(broker: Broker, group_id: str) -> int:
    """Stage the classic group's deletion with its offsets; the rows it deletes."""
    event = decide_delete_group(group_id, group_state(broker, group_id), committed_offsets(broker, group_id))
    broker.stage([event])
    coordinator(broker).sessions.forget(group_id)
    return len(event.partitions) + 1
