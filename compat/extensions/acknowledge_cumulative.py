"""LogwrightAcknowledgeCumulative (extension key 32005): settle everything of a partition up to an offset.

Only the subscription modes with one active consumer per partition allow it (Exclusive, Failover:
`SubscriptionMode.allows_cumulative_ack`); in Shared and Key_Shared consumers hold interleaved records,
so the request is refused with INVALID_REQUEST and a message saying so, and nothing changes. With
Failover only the partition's active consumer may ask.

Request (msgpack map): ``group_id, member_id, topic: str, partition: int, offset: int``. Response:
``error_code, error_message, mark_delete_position``.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.compat.broker import Broker
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.extensions.access import group_and_topic
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, MemberPartition, extension, integer, member_of
from logwright.core.cursors import cursor_commands
from logwright.core.cursors.cursor import CursorState, cursor_key
from logwright.core.cursors.subscription_mode import require_cumulative_ack
from logwright.core.errors import InvalidRequest

API_KEY = 32005


@dataclass(frozen=True, slots=True)
class AcknowledgeCumulativeRequest:
    """The request map, checked field by field (topic and partition looked up) in the order errors are reported."""

    target: MemberPartition
    offset: int

    @classmethod
    def parse(cls, body: Body, broker: Broker) -> AcknowledgeCumulativeRequest:
        return cls(MemberPartition.parse(body, broker), integer(body, "offset"))


@extension(API_KEY, "LogwrightAcknowledgeCumulative", group_and_topic())
async def handle(context: RequestContext, body: Body) -> Body:
    broker = context.broker
    coordinator = share_coordinator(broker)
    request = AcknowledgeCumulativeRequest.parse(body, broker)
    target = request.target
    group_id, member_id, topic, partition_id = target.group_id, target.member_id, target.topic, target.partition_id
    group = member_of(coordinator, group_id, member_id)
    mode = coordinator.mode(group_id)
    require_cumulative_ack(mode, group_id)
    index = topic.partition_ids.index(partition_id)
    if index not in mode.assigned_partitions(group.mode_membership(), member_id, len(topic.partition_ids)):
        raise InvalidRequest(f"member {member_id!r} is not the active consumer of {topic.name}-{index} in "
                             f"subscription {group_id!r}; it cannot acknowledge it cumulatively")
    state = coordinator.cursor(group_id, topic.name, partition_id)
    event = cursor_commands.acknowledge_cumulative(state, member_id, request.offset,
                                                   broker.high_watermark(partition_id))
    coordinator.apply(group_id, partition_id, [event] if event is not None else [])
    await broker.durable()
    after = broker.store.state("cursors", cursor_key(group_id, partition_id))
    return {"mark_delete_position": after.mark_delete_position if isinstance(after, CursorState) else -1}
