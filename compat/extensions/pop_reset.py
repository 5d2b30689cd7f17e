"""LogwrightPopReset (extension key 32014): an admin reset of a pop group's position (F41).

RocketMQ resets a pop group's consumer offset from its admin tools, and a pending reset takes precedence over
what the pops reached. Here a reset moves the position of the group's pops of new records on each partition
named (all by default) to the log start (``earliest``), the log end (``latest``), an ``offset`` (clamped to
the log) or the first record at or after a ``timestamp`` (ms; the log end if none is that late), writing
`PopPositionMoved`; what the group had in flight there is dropped (`PopEntriesDropped`): records below the new
position are skipped, those at or above it are popped afresh, and the old handles answer ``unknown``. A partition
the group never popped starts at the reset position, whatever ``logwright.pop.init.mode`` says. A share group in
``pop`` mode keeps its position in its share-group cursor: Kafka's AlterShareGroupOffsets resets it.

Request (msgpack map): ``group_id: str, topic: str, to: "earliest" | "latest" | "offset" | "timestamp",
value: int >= 0`` (with ``offset`` and ``timestamp``), ``partitions: [int, ...]`` (optional, distinct indexes of
the topic). Response: ``partitions: [{partition, offset}]``, the new positions. A request that names an unknown
topic or partition, a repeated partition or a missing value is refused whole, nothing reset.
"""

from __future__ import annotations

from logwright.compat.coordinators.pop_coordinator import pop_coordinator
from logwright.compat.extensions.access import group_and_topic
from logwright.compat.extensions.pop import name
from logwright.compat.registry import RequestContext
from logwright.compat.wire.extension_body import Body, extension, integer, text
from logwright.core.errors import InvalidRequest, UnknownTopic

API_KEY = 32014
TARGETS = ("earliest", "latest", "offset", "timestamp")


@extension(API_KEY, "LogwrightPopReset", group_and_topic())
async def handle(context: RequestContext, body: Body) -> Body:
    group_id, topic_name, to = name(body, "group_id"), text(body, "topic"), text(body, "to")
    if to not in TARGETS:
        raise InvalidRequest(f"field 'to' must be one of {', '.join(TARGETS)}, got {to!r}")
    value = integer(body, "value") if to in ("offset", "timestamp") else 0
    topic = context.broker.topic(topic_name)
    if topic is None:
        raise UnknownTopic(f"topic {topic_name!r} does not exist")
    count = len(topic.partition_ids)
    named = body.get("partitions")
    if named is None:
        partitions = list(range(count))
    elif (not isinstance(named, list) or not named or len(named) > count
          or not all(isinstance(index, int) and not isinstance(index, bool) and 0 <= index < count for index in named)
          or len(set(named)) != len(named)):
        raise InvalidRequest(f"field 'partitions' must list distinct partition indexes of {topic_name!r} "
                             f"(0 to {count - 1}), got {named!r}")
    else:
        partitions = list(named)
    moved = pop_coordinator(context.broker).reset(group_id, topic, partitions, to, value)
    await context.broker.durable()
    return {"partitions": [{"partition": index, "offset": offset} for index, offset in moved]}
