"""JoinGroup (key 11), versions 0-9: the classic rebalance's join phase.

v0 has no rebalance timeout (the session timeout serves as both); v4+ first answer a member without
an id with MEMBER_ID_REQUIRED and a generated id (KIP-394); v5+ carry ``group.instance.id`` (static
membership, KIP-345); v7+ name the protocol type in the answer; v9 tells a static leader rejoining a
Stable group to skip the assignment (KIP-814), which older versions express by an empty member list.
The request blocks until the join phase completes (`group_coordinator`). Group ids are one namespace: a KIP-848
consumer group with members takes the member as a classic member of it, answered at once by its coordinator
(`core.consumer_groups.classic_members`; INCONSISTENT_GROUP_PROTOCOL when ``group.consumer.migration.policy`` is
disabled), and a share group, with or without members, refuses it with INCONSISTENT_GROUP_PROTOCOL; as in Kafka 4.4,
that refusal names no member id. An empty consumer group becomes an Empty classic group at the first JoinGroup of a new
member (no member id), its committed offsets kept (`EmptyGroupConverted`), as Kafka converts it.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.coordinators.consumer_coordinator import consumer_coordinator, consumer_group
from logwright.compat.coordinators.group_coordinator import coordinator
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.wire.consumer_protocol import read_subscription
from logwright.core.consumer_groups.classic_members import PROTOCOL_TYPE, ClassicJoin, protocol_name
from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState, ConsumerMember
from logwright.core.errors import DomainError, MemberIdRequired
from logwright.core.events import EmptyGroupConverted
from logwright.core.events.groups import CLASSIC
from logwright.core.groups.group_membership import JoinGroup, check_join

if TYPE_CHECKING:
    from kio.schema.join_group import v0, v1, v2, v3, v4, v5, v6, v7, v8, v9
    from typing_extensions import TypeIs

    JoinGroupRequest: TypeAlias = (
        v0.JoinGroupRequest | v1.JoinGroupRequest | v2.JoinGroupRequest | v3.JoinGroupRequest | v4.JoinGroupRequest
        | v5.JoinGroupRequest | v6.JoinGroupRequest | v7.JoinGroupRequest | v8.JoinGroupRequest | v9.JoinGroupRequest
    )
    """Every version served: mypy checks each field read against all of them."""


def milliseconds(value: datetime.timedelta | int) -> int:
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    return int(value)


@handler(11, "JoinGroup", 0, 9)
async def handle(context: RequestContext, request: JoinGroupRequest) -> Any:
    version = context.api_version
    module = response_module("join_group", version)
    session_ms = milliseconds(request.session_timeout)
    rebalance = request.rebalance_timeout if _names_rebalance_timeout(request) else None
    rebalance_ms = milliseconds(rebalance) if rebalance is not None else -1
    command = JoinGroup(
        group_id=request.group_id,
        member_id=request.member_id,
        group_instance_id=request.group_instance_id if _names_instance(request) else None,
        client_id=context.client_id or "",
        client_host=f"/{context.client_host}",
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms if rebalance_ms >= 0 else session_ms,
        protocol_type=request.protocol_type,
        protocols=tuple((protocol.name, bytes(protocol.metadata)) for protocol in request.protocols),
        require_known_member_id=version >= 4,
    )

    def refusal(code: ErrorCode, member_id: str) -> Any:
        return make(module.JoinGroupResponse, throttle_time=datetime.timedelta(0), error_code=code,
                    generation_id=-1, protocol_type=None, protocol_name=None if version >= 7 else "",
                    leader="", skip_assignment=False, member_id=member_id, members=())

    if share_coordinator(context.broker).group(command.group_id) is not None:
        return refusal(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "")
    consumer = consumer_group(context.broker, command.group_id)
    if consumer is not None and consumer.members:
        try:
            member = await _join_consumer_group(context, consumer, command)
        except MemberIdRequired as required:
            return refusal(ErrorCode.MEMBER_ID_REQUIRED, required.member_id)
        except DomainError as error:
            return refusal(error_code_for(error), request.member_id)
        return make(module.JoinGroupResponse, throttle_time=datetime.timedelta(0), error_code=ErrorCode.NONE,
                    generation_id=member.member_epoch, protocol_type=PROTOCOL_TYPE,
                    protocol_name=protocol_name(member), leader="", skip_assignment=False,
                    member_id=member.member_id, members=())
    # an empty one: a new member's join (no member id: one naming an id the group cannot know changes nothing, as in
    # Kafka) makes it an Empty classic group, staged with the join's events
    converted = consumer is not None and not command.member_id
    if converted:  # staged in the join's own turn: no consumer member can join the old group in between
        context.broker.stage([EmptyGroupConverted(command.group_id, CLASSIC, context.broker.clock.now_ms())])
    try:
        reply = await coordinator(context.broker).join(command)
    except DomainError as error:
        if converted:  # the conversion stands, as Kafka's: answered once it is written
            await context.broker.durable()
        if isinstance(error, MemberIdRequired):
            return refusal(ErrorCode.MEMBER_ID_REQUIRED, error.member_id)
        return refusal(error_code_for(error), request.member_id)
    if reply.error is not None:
        return refusal(error_code_for(reply.error), reply.member_id)
    members = () if reply.skip_assignment and version < 9 else reply.members
    return make(
        module.JoinGroupResponse,
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.NONE,
        generation_id=reply.generation,
        protocol_type=reply.protocol_type,
        protocol_name=reply.protocol_name if reply.protocol_name is not None or version >= 7 else "",
        leader=reply.leader,
        skip_assignment=reply.skip_assignment,
        member_id=reply.member_id,
        members=tuple(make(module.JoinGroupResponseMember, member_id=member_id, group_instance_id=instance_id,
                           metadata=metadata) for member_id, instance_id, metadata in members),
    )


async def _join_consumer_group(context: RequestContext, state: ConsumerGroupState, command: JoinGroup
                               ) -> ConsumerMember:
    """A classic member joining a consumer group with members (`classic_members`): checked as every JoinGroup is,
    then decided by the consumer group's coordinator and answered at once."""
    check_join(command, coordinator(context.broker).limits())
    joined = ClassicJoin(
        group_id=command.group_id, member_id=command.member_id, instance_id=command.group_instance_id,
        session_timeout_ms=command.session_timeout_ms, rebalance_timeout_ms=command.rebalance_timeout_ms,
        protocol_type=command.protocol_type, protocols=command.protocols,
        subscription=read_subscription(command.protocols[0][1]) if command.protocols else None,
        client_id=command.client_id, client_host=command.client_host,
        require_known_member_id=command.require_known_member_id)
    member, _ = await consumer_coordinator(context.broker).classic_join(state, joined)
    return member


def _names_rebalance_timeout(request: JoinGroupRequest) -> TypeIs[
    v1.JoinGroupRequest | v2.JoinGroupRequest | v3.JoinGroupRequest | v4.JoinGroupRequest | v5.JoinGroupRequest
    | v6.JoinGroupRequest | v7.JoinGroupRequest | v8.JoinGroupRequest | v9.JoinGroupRequest
]:
    """v1+ carry a rebalance timeout apart from the session timeout."""
    return has_field(request, "rebalance_timeout")


def _names_instance(request: JoinGroupRequest) -> TypeIs[
    v5.JoinGroupRequest | v6.JoinGroupRequest | v7.JoinGroupRequest | v8.JoinGroupRequest | v9.JoinGroupRequest
]:
    """v5+ carry the static member's ``group.instance.id``."""
    return has_field(request, "group_instance_id")
