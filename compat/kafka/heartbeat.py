"""Heartbeat (key 12), versions 0-4: keeps a member's session alive and tells it about rebalances.

v3+ carry ``group.instance.id``. A heartbeat during PreparingRebalance still counts as a sign of life
and is answered REBALANCE_IN_PROGRESS, which is how members learn to rejoin. A KIP-848 consumer group's classic
members heartbeat to its coordinator (`core.consumer_groups.classic_members`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator, consumer_group
from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.core.errors import DomainError
from logwright.core.groups.group_membership import Heartbeat

if TYPE_CHECKING:
    from kio.schema.heartbeat import v0, v1, v2, v3, v4
    from typing_extensions import TypeIs

    HeartbeatRequest: TypeAlias = (
        v0.HeartbeatRequest | v1.HeartbeatRequest | v2.HeartbeatRequest | v3.HeartbeatRequest | v4.HeartbeatRequest
    )
    """Every version served: mypy checks each field read against all of them."""


@handler(12, "Heartbeat", 0, 4, at_once=True)
async def handle(context: RequestContext, request: HeartbeatRequest) -> Any:
    module = response_module("heartbeat", context.api_version)
    command = Heartbeat(request.group_id, int(request.generation_id), request.member_id,
                        request.group_instance_id if _names_instance(request) else None)
    consumer = consumer_group(context.broker, command.group_id) if command.group_id else None
    try:
        if consumer is not None:  # a classic member of a consumer group (`classic_members`)
            rejoin = consumer_coordinator(context.broker).classic_heartbeat(
                consumer, command.member_id, command.group_instance_id, command.generation)
            code = ErrorCode.REBALANCE_IN_PROGRESS if rejoin else ErrorCode.NONE
        else:
            coordinator(context.broker).heartbeat(command)
            code = ErrorCode.NONE
    except DomainError as error:
        code = error_code_for(error)
    return make(module.HeartbeatResponse, throttle_time=datetime.timedelta(0), error_code=code)


def _names_instance(request: HeartbeatRequest) -> TypeIs[v3.HeartbeatRequest | v4.HeartbeatRequest]:
    """v3+ carry the static member's ``group.instance.id``."""
    return has_field(request, "group_instance_id")
