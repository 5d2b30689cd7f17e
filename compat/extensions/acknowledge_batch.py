"""LogwrightAcknowledgeBatch (extension key 32004): individual acknowledgements of many ranges at once.

ACCEPT for ranges over several partitions without a share session (Pulsar's ``acknowledge(list)``):
the bundled client acknowledges without waiting for its next ShareFetch. Each partition is all or
nothing, as in ShareAcknowledge; the answer is durable when it arrives.

Request (msgpack map): ``group_id, member_id, acks: [{topic: str, partition: int, ranges: [[first,
last], ...]}, ...]``. Response: ``error_code, error_message, results: [{topic, partition, error_code,
error_message}, ...]`` in request order (INVALID_RECORD_STATE for a partition whose ranges the member
does not hold, UNKNOWN_TOPIC_OR_PARTITION for one that does not exist). Other requests run every
`ACKS_PER_TURN` entries; each entry is decided in its own turn against the group as it is then.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode, KafkaError, error_code_for
from logwright.compat.extensions.access import group_only, require_topic
from logwright.compat.registry import RequestContext
from logwright.compat.turns import give_way
from logwright.compat.wire.extension_body import MAX_RANGES, Body, extension, member_of, partition_of, ranges, text
from logwright.core.errors import DomainError, InvalidRequest
from logwright.core.share_groups.share_acks import AckBatch

API_KEY = 32004
ACCEPT = 1
ACKS_PER_TURN = 200
"""Partition entries acknowledged before the handler lets other requests run: each is a whole acknowledgement (its
checks, decision and staging, tens of microseconds), and a request may carry up to `MAX_RANGES` of them, seconds of
event loop in one stretch."""


@dataclass(frozen=True, slots=True)
class AcknowledgeBatchRequest:
    """The request map, checked in the order errors are reported. Each entry of ``acks`` stays a map, checked
    when its partition is acknowledged: a bad entry fails its own partition, not the request."""

    group_id: str
    member_id: str
    acks: tuple[Body, ...]

    @classmethod
    def parse(cls, body: Body) -> AcknowledgeBatchRequest:
        group_id, member_id = text(body, "group_id"), text(body, "member_id")
        acks = body.get("acks")
        if not isinstance(acks, list) or not acks or len(acks) > MAX_RANGES:
            raise InvalidRequest(f"field 'acks' must be a list of 1 to {MAX_RANGES} partition entries")
        if not all(isinstance(entry, dict) for entry in acks):
            raise InvalidRequest("every entry of 'acks' must be a map with topic, partition and ranges")
        return cls(group_id, member_id, tuple(acks))


@extension(API_KEY, "LogwrightAcknowledgeBatch", group_only())
async def handle(context: RequestContext, body: Body) -> Body:
    broker = context.broker
    coordinator = share_coordinator(broker)
    request = AcknowledgeBatchRequest.parse(body)
    group_id, member_id = request.group_id, request.member_id
    member_of(coordinator, group_id, member_id)
    results = []
    for position, entry in enumerate(request.acks):
        if position and position % ACKS_PER_TURN == 0:
            await give_way()
        result = {"topic": entry.get("topic"), "partition": entry.get("partition"),
                  "error_code": int(ErrorCode.NONE), "error_message": None}
        try:
            require_topic(context, text(entry, "topic"))  # per entry, as ShareAcknowledge refuses a partition
            topic, partition_id = partition_of(broker, text(entry, "topic"), entry.get("partition"))
            batches = [AckBatch(first, last, (ACCEPT,)) for first, last in ranges(entry.get("ranges"))]
            coordinator.acknowledge(group_id, member_id, topic.name, partition_id, batches, renew_allowed=False)
        except DomainError as error:
            result.update(error_code=int(error_code_for(error)), error_message=str(error))
        except KafkaError as error:
            result.update(error_code=int(error.code), error_message=error.message)
        results.append(result)
    await broker.durable()
    return {"results": results}
