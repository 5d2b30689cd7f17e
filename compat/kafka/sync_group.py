"""SyncGroup (key 14), versions 0-5: the leader hands out assignments, followers wait for theirs.

v3+ carry ``group.instance.id``; v5 names the protocol type and name in request and answer, and the
coordinator refuses a mismatch with INCONSISTENT_GROUP_PROTOCOL. In v5 both are mandatory: a null one is
INCONSISTENT_GROUP_PROTOCOL before anything else is looked at, as Kafka 4.4 answers. A KIP-848 consumer group's
classic members sync with its coordinator (`core.consumer_groups.classic_members`): answered at once with their
current assignment.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator, consumer_group
from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.wire.consumer_protocol import metadata_version, write_assignment
from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState
from logwright.core.errors import DomainError
from logwright.core.groups.group_membership import SyncGroup

if TYPE_CHECKING:
    from kio.schema.sync_group import v0, v1, v2, v3, v4, v5
    from typing_extensions import TypeIs

    SyncGroupRequest: TypeAlias = (
        v0.SyncGroupRequest | v1.SyncGroupRequest | v2.SyncGroupRequest | v3.SyncGroupRequest | v4.SyncGroupRequest
        | v5.SyncGroupRequest
    )
    """Every version served: mypy checks each field read against all of them."""


@handler(14, "SyncGroup", 0, 5)
async def handle(context: RequestContext, request: SyncGroupRequest) -> Any:
    module = response_module("sync_group", context.api_version)
    if _names_protocol(request) and (request.protocol_type is None or request.protocol_name is None):
        return make(module.SyncGroupResponse, throttle_time=datetime.timedelta(0),
                    error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL, protocol_type=None, protocol_name=None,
                    assignment=b"")
    command = SyncGroup(
        group_id=request.group_id,
        generation=int(request.generation_id),
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if _names_instance(request) else None,
        protocol_type=request.protocol_type if _names_protocol(request) else None,
        protocol_name=request.protocol_name if _names_protocol(request) else None,
        assignments=tuple((entry.member_id, bytes(entry.assignment)) for entry in request.assignments),
    )
    consumer = consumer_group(context.broker, command.group_id) if command.group_id else None
    if consumer is not None:
        return _sync_consumer_group(context, module, consumer, command)
    try:
        reply = await coordinator(context.broker).sync(command)
    except DomainError as error:
        code, protocol_type, protocol_name, assignment = error_code_for(error), None, None, b""
    else:
        code = error_code_for(reply.error) if reply.error is not None else ErrorCode.NONE
        protocol_type, protocol_name, assignment = reply.protocol_type, reply.protocol_name, reply.assignment
    return make(module.SyncGroupResponse, throttle_time=datetime.timedelta(0), error_code=code,
                protocol_type=protocol_type, protocol_name=protocol_name, assignment=assignment)


def _sync_consumer_group(context: RequestContext, module: Any, state: ConsumerGroupState, command: SyncGroup) -> Any:
    """A classic member of a consumer group (`classic_members`): its current assignment, in the consumer protocol's
    format and the version of its subscription; the protocol type and name are the request's, as Kafka answers."""
    try:
        member = consumer_coordinator(context.broker).classic_sync(
            state, command.member_id, command.group_instance_id, command.generation, command.protocol_type,
            command.protocol_name)
    except DomainError as error:
        return make(module.SyncGroupResponse, throttle_time=datetime.timedelta(0), error_code=error_code_for(error),
                    protocol_type=None, protocol_name=None, assignment=b"")
    version = metadata_version(member.classic_protocols[0][1]) if member.classic_protocols else 0
    return make(module.SyncGroupResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                protocol_type=command.protocol_type, protocol_name=command.protocol_name,
                assignment=write_assignment(member.assigned, version))


def _names_instance(request: SyncGroupRequest) -> TypeIs[
    v3.SyncGroupRequest | v4.SyncGroupRequest | v5.SyncGroupRequest
]:
    """v3+ carry the static member's ``group.instance.id``."""
    return has_field(request, "group_instance_id")


def _names_protocol(request: SyncGroupRequest) -> TypeIs[v5.SyncGroupRequest]:
    """v5 names the protocol type and name, which must match the group's."""
    return has_field(request, "protocol_type")
