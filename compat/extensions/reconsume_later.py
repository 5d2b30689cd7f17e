"""LogwrightReconsumeLater (extension key 32008): move a held record to the retry letter topic.

Pulsar's ``reconsumeLater``, done by the broker, atomically.
The broker appends the copy to the subscription's retry topic (delayed by ``delay_ms`` through the
delayed-delivery index), acknowledges the original and records `MovedToRetry`, in one WriteBatch; past
``logwright.retry.max.reconsume.times`` it dead-letters the record instead (`retry_letters`).

Request (msgpack map): ``group_id, member_id, topic: str, partition: int, offset: int, delay_ms: int >= 0``.
Response: ``error_code, error_message, topic`` (where the copy went), ``reconsume_times``, ``dead_lettered``.
INVALID_RECORD_STATE when the member does not hold the record, UNKNOWN_TOPIC_OR_PARTITION when the retry
(or dead-letter) topic does not exist or refuses the copy; nothing changes then.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.compat.broker import Broker
from logwright.compat.coordinators.retry_letters import reconsume_later
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.extensions.access import group_and_topic
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, MemberPartition, extension, integer, member_of

API_KEY = 32008


@dataclass(frozen=True, slots=True)
class ReconsumeLaterRequest:
    """The request map, checked field by field in the order errors are reported."""

    target: MemberPartition
    offset: int
    delay_ms: int

    @classmethod
    def parse(cls, body: Body, broker: Broker) -> ReconsumeLaterRequest:
        return cls(MemberPartition.parse(body, broker), integer(body, "offset"), integer(body, "delay_ms"))


@extension(API_KEY, "LogwrightReconsumeLater", group_and_topic())
async def handle(context: RequestContext, body: Body) -> Body:
    broker = context.broker
    coordinator = share_coordinator(broker)
    request = ReconsumeLaterRequest.parse(body, broker)
    target = request.target
    member_of(coordinator, target.group_id, target.member_id)
    moved = reconsume_later(broker, coordinator, target.group_id, target.member_id, target.topic.name,
                            target.partition_id, request.offset, request.delay_ms)
    await broker.durable()
    return {"topic": moved.topic, "reconsume_times": moved.reconsume_times, "dead_lettered": moved.dead_lettered}
