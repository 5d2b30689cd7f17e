"""Pop's dead-letter topic: records past the group's max reconsume times copied in the WriteBatch that settles them.

RocketMQ forwards such a message to ``%DLQ%{group}`` (one queue). ``%`` is not legal in a Kafka topic name,
so the default here is ``DLQ.{group}`` (characters a topic may not hold become ``_``), created on first use
with one partition when ``auto.create.topics.enable`` is true; ``logwright.pop.dead.letter.topic`` names
another. The copy keeps key, value, timestamp and headers and adds RocketMQ's properties (``REAL_TOPIC``,
``RETRY_TOPIC``, ``ORIGIN_MESSAGE_ID``, ``RECONSUME_TIMES``). The copies are staged before the
`PopDeadLettered` that settles the originals, in one call and so in one WriteBatch; they are cut into record
batches within the target's ``max.message.bytes`` (`copy_batches`, as share groups' copies are), one append.
When no copy can be written the records are not settled (nothing is lost): the caller keeps them invisible and
tries again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from logwright.compat.broker import Broker
from logwright.compat.coordinators.dead_letters import copy_batches
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.produce import PartitionResult, prepare_partition, stage_partition
from logwright.compat.wire.records import Record
from logwright.core.errors import DomainError
from logwright.core.pop.inflight import PopEntry, PopPartition
from logwright.core.pop.pop_commands import DEAD_LETTER_TOPIC_KEY, default_dead_letter_topic, retry_topic_label

log = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class Copied:
    """Where the copies went: the topic, its partition id and the first copy's offset."""

    topic: str
    partition_id: int
    base_offset: int


def stage_dead_letters(broker: Broker, state: PopPartition, entries: Sequence[PopEntry],
                       originals: Mapping[int, Record], settings: Mapping[str, str]) -> Copied | None:
    """Stage one batch of copies of ``entries`` (``originals`` by offset); ``None`` (logged) when refused."""
    name = settings.get(DEAD_LETTER_TOPIC_KEY) or default_dead_letter_topic(state.group)
    target = broker.topic(name)
    if target is None and broker.auto_create_enabled():
        try:
            broker.create_topic(name, 1)
        except DomainError as error:
            log.warning("pop group %s: dead-letter topic %r could not be created: %s", state.group, name, error)
        target = broker.topic(name)
    if target is None or not target.partition_ids or target.name == state.topic:
        log.warning("pop group %s: dead-letter topic %r is missing (or is the source topic); offsets %s of %s "
                    "stay in flight and are tried again", state.group, name, [e.offset for e in entries], state.topic)
        return None
    source = broker.topic(state.topic)
    index = source.partition_ids.index(state.partition_id) if source is not None else 0
    now = broker.clock.now_ms()
    records = [_copy(originals.get(entry.offset), now, {
        "REAL_TOPIC": state.topic, "RETRY_TOPIC": retry_topic_label(state.group, state.topic),
        "ORIGIN_MESSAGE_ID": f"{state.topic}-{index}@{entry.offset}", "RECONSUME_TIMES": str(entry.deliveries),
        "logwright.pop.group": state.group}) for entry in entries]
    max_bytes = int(target.config("max.message.bytes") or broker.broker_config("message.max.bytes"))
    prepared = prepare_partition(broker, target, 0, b"".join(copy_batches(records, max_bytes)))
    result = prepared if isinstance(prepared, PartitionResult) else stage_partition(broker, prepared)
    if result.error_code != ErrorCode.NONE:
        log.warning("pop group %s: dead-letter append to %s refused (%s: %s); the records stay in flight",
                    state.group, name, ErrorCode(result.error_code).name, result.error_message)
        return None
    return Copied(name, target.partition_ids[0], result.base_offset)


def _copy(original: Record | None, now: int, properties: Mapping[str, str]) -> Record:
    added = tuple((key, value.encode()) for key, value in properties.items())
    if original is None:
        return Record(0, now, None, None, added)
    kept = tuple(header for header in original.headers if header[0] not in properties)
    return Record(0, original.timestamp, original.key, original.value, (*kept, *added))
