"""LogwrightConsumerOptions (extension key 32002): what Failover and Key_Shared need to know of a consumer.

Kafka's ShareGroupHeartbeat carries no consumer name, priority or key-hash ranges, so the bundled
client picks its own member id and declares them here *before* it joins (KIP-932 lets a client choose
its member id). The options are kept in memory and read by the join heartbeat of that member id; from
then on they are part of the mode's `Membership`, which is persisted, so a restart keeps them. The
client sends them again before every rejoin.

Request (msgpack map): ``group_id: str, member_id: str, name: str = "", priority: int >= 0 = 0,
hash_ranges: [[start, end], ...] within 0..65535 = [] (Key_Shared STICKY), max_in_flight: int >= 0 = 0,
ack_timeout_ms: int = 0``. ``ack_timeout_ms`` is the consumer's own acquisition lock (Pulsar's ack
timeout is per consumer): 0 keeps the group's ``share.record.lock.duration.ms``, anything else must be a
value that config accepts (INVALID_CONFIG otherwise); it is recorded with the member when it joins.
Response: ``error_code, error_message``.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.compat.broker import Broker
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.extensions.access import group_only
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, extension, integer, ranges, text
from logwright.core.config.group_bounds import group_problem
from logwright.core.cursors.key_hash_ranges import HashRange
from logwright.core.errors import InvalidConfig, InvalidRequest
from logwright.core.share_groups.share_groups import ConsumerOptions

API_KEY = 32002
LOCK_DURATION_KEY = "share.record.lock.duration.ms"
MAX_HASH = 65535
MAX_PENDING = 100_000
"""Declared options not yet used by a join; beyond this a declaration is refused (memory bound)."""


@dataclass(frozen=True, slots=True)
class ConsumerOptionsRequest:
    """The request map, checked field by field in the order errors are reported (``ack_timeout_ms`` against the
    group config it overrides)."""

    group_id: str
    member_id: str
    options: ConsumerOptions

    @classmethod
    def parse(cls, body: Body, broker: Broker) -> ConsumerOptionsRequest:
        group_id, member_id = text(body, "group_id"), text(body, "member_id")
        name = body.get("name", "")
        if not isinstance(name, str):
            raise InvalidRequest(f"field 'name' must be a string, got {name!r}")
        declared = ranges(body["hash_ranges"], "hash_ranges") if body.get("hash_ranges") else ()
        if any(last > MAX_HASH for _, last in declared):
            raise InvalidRequest(f"key-hash ranges must lie within 0..{MAX_HASH}, got {list(declared)}")
        ack_timeout_ms = integer(body, "ack_timeout_ms", default=0)
        if ack_timeout_ms:
            broker.configs.validate("group", [(LOCK_DURATION_KEY, str(ack_timeout_ms))])
            problem = group_problem(LOCK_DURATION_KEY, str(ack_timeout_ms), broker.broker_config)
            if problem is not None:  # within the broker's bounds, as the group config it overrides
                raise InvalidConfig(problem)
        options = ConsumerOptions(name, integer(body, "priority", default=0),
                                  tuple(HashRange(first, last) for first, last in declared),
                                  integer(body, "max_in_flight", default=0), ack_timeout_ms)
        return cls(group_id, member_id, options)


@extension(API_KEY, "LogwrightConsumerOptions", group_only())
async def handle(context: RequestContext, body: Body) -> Body:
    request = ConsumerOptionsRequest.parse(body, context.broker)
    group_id, member_id = request.group_id, request.member_id
    coordinator = share_coordinator(context.broker)
    if len(coordinator.consumer_options) >= MAX_PENDING and (group_id, member_id) not in coordinator.consumer_options:
        raise InvalidRequest(f"too many consumer option declarations waiting for a join ({MAX_PENDING})")
    coordinator.consumer_options[(group_id, member_id)] = request.options
    return {}
