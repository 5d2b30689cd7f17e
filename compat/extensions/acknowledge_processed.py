"""LogwrightAcknowledgeProcessed (extension key 32020): acknowledge records with the processed key of each (F36).

The subscription remembers each key for ``logwright.processed.keys.ttl.ms``; a record it would deliver later
whose key (read as ``logwright.processed.key`` says) is one of them is acknowledged by the broker instead
(`coordinators.processed_keys`). The acknowledgement and the keys are one WriteBatch: a key is never recorded
for a record that stays unacknowledged, nor the other way round.

Request (msgpack map): ``group_id, member_id, topic: str, partition: int, records: [[offset, key: bytes], ...]``
(1 to 10,000 records, keys 1 to 16,384 bytes). Response: ``error_code, error_message``. INVALID_RECORD_STATE
when the member does not hold one of the records (nothing changes), INVALID_REQUEST when the subscription has
no ``logwright.processed.key`` (the broker could not recognise the keys in records) or a record is malformed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from logwright.compat.broker import Broker
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.extensions.access import group_and_topic
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, MemberPartition, extension, member_of
from logwright.core.errors import InvalidRequest
from logwright.core.keys.processed import DEFAULT_TTL_MS, PROCESSED_KEY, PROCESSED_KEYS_TTL_MS, recorded
from logwright.core.share_groups.share_acks import AckBatch

API_KEY = 32020
ACCEPT = 1
MAX_RECORDS: Final = 10_000


@dataclass(frozen=True, slots=True)
class AcknowledgeProcessedRequest:
    """The request map, checked field by field in the order errors are reported."""

    target: MemberPartition
    records: tuple[tuple[int, bytes], ...]

    @classmethod
    def parse(cls, body: Body, broker: Broker) -> AcknowledgeProcessedRequest:
        target = MemberPartition.parse(body, broker)
        records = body.get("records")
        if not isinstance(records, list) or not 1 <= len(records) <= MAX_RECORDS:
            raise InvalidRequest(f"field 'records' must be a list of 1 to {MAX_RECORDS} [offset, key] pairs")
        parsed = []
        for record in records:
            if (not isinstance(record, list) or len(record) != 2 or not isinstance(record[0], int)
                    or isinstance(record[0], bool) or record[0] < 0 or not isinstance(record[1], bytes)):
                raise InvalidRequest("every entry of 'records' must be [offset >= 0, key bytes]")
            parsed.append((record[0], record[1]))
        parsed.sort()
        if len({offset for offset, _ in parsed}) != len(parsed):
            raise InvalidRequest("an offset appears twice in 'records'")
        return cls(target, tuple(parsed))


@extension(API_KEY, "LogwrightAcknowledgeProcessed", group_and_topic())
async def handle(context: RequestContext, body: Body) -> Body:
    broker = context.broker
    coordinator = share_coordinator(broker)
    request = AcknowledgeProcessedRequest.parse(body, broker)
    target = request.target
    member_of(coordinator, target.group_id, target.member_id)
    settings = coordinator.group_settings(target.group_id)
    if not settings.get(PROCESSED_KEY):
        raise InvalidRequest(f"subscription {target.group_id!r} has no {PROCESSED_KEY}: set it to 'record-key' or "
                             "'header:<name>' so the broker can recognise processed keys in records")
    ttl_ms = int(settings.get(PROCESSED_KEYS_TTL_MS) or DEFAULT_TTL_MS)
    try:
        event = recorded(target.group_id, target.topic.name, target.partition_id,
                         [(key, offset) for offset, key in request.records], broker.clock.now_ms(), ttl_ms)
    except ValueError as error:
        raise InvalidRequest(str(error)) from None
    coordinator.acknowledge(target.group_id, target.member_id, target.topic.name, target.partition_id,
                            [AckBatch(offset, offset, (ACCEPT,)) for offset, _ in request.records],
                            renew_allowed=False)
    broker.stage([event])
    await broker.durable()
    return {}
