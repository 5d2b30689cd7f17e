"""LogwrightNegativeAcknowledge (extension key 32003): release held records to come back after a delay.

ShareFetch's RELEASE makes a record available at once; Pulsar's negative ack redelivers it after a
delay. The client computes the delay from the record's persisted delivery count (a fixed delay or a
multiplier backoff), so the backoff keeps growing across reconnects and broker restarts. At the
group's delivery-count limit the records are archived instead (`cursor_commands.release`); a plugin's
``logwright_decide_release`` may choose another delay or archive them.

Request (msgpack map): ``group_id, member_id, topic: str, partition: int, ranges: [[first, last], ...],
delay_ms: int >= 0``. Response: ``error_code, error_message`` (INVALID_RECORD_STATE with the offsets
when the member does not hold them; nothing changes then).
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.compat.broker import Broker
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.extensions.access import group_and_topic
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, MemberPartition, extension, integer, member_of, ranges
from logwright.core.cursors import cursor_commands

API_KEY = 32003


@dataclass(frozen=True, slots=True)
class NegativeAcknowledgeRequest:
    """The request map, checked field by field (topic and partition looked up) in the order errors are reported."""

    target: MemberPartition
    offsets: tuple[tuple[int, int], ...]
    delay_ms: int

    @classmethod
    def parse(cls, body: Body, broker: Broker) -> NegativeAcknowledgeRequest:
        return cls(MemberPartition.parse(body, broker), ranges(body.get("ranges")), integer(body, "delay_ms"))


@extension(API_KEY, "LogwrightNegativeAcknowledge", group_and_topic())
async def handle(context: RequestContext, body: Body) -> Body:
    broker = context.broker
    coordinator = share_coordinator(broker)
    request = NegativeAcknowledgeRequest.parse(body, broker)
    target = request.target
    group_id, member_id, topic, partition_id = target.group_id, target.member_id, target.topic, target.partition_id
    member_of(coordinator, group_id, member_id)
    state = coordinator.cursor(group_id, topic.name, partition_id)
    events = cursor_commands.release(state, member_id, request.offsets, broker.clock.now_ms(),
                                     request.delay_ms, coordinator.delivery_count_limit(group_id),
                                     coordinator.release_context(group_id, topic.name, partition_id))
    coordinator.apply(group_id, partition_id, events)
    await broker.durable()
    return {}
