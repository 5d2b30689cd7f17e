"""Pop's dead letters: records past the group's max reconsume times copied in the WriteBatch that settles them.

Where a copy goes is the plugins' decision, through the hook share groups use (``logwright_decide_archive``,
called once per dead-lettering with `ArchivedRecords`: the group, the topic, ``(offset, offset, deliveries)``
spans, the reason, the consumer whose nack made it, ``""`` after a timeout, and the group's configs with
``logwright.subscription.mode`` set to ``pop``), so a third-party plugin can send them elsewhere. The built-in
``pop`` plugin answers RocketMQ's ``%DLQ%{group}``: ``%`` is not legal in a Kafka topic name, so the default
is ``DLQ.{group}`` (characters a topic may not hold become ``_``), created on first use with the source
topic's partition count when ``auto.create.topics.enable`` is true (the `DeadLetter` contract), unless
``logwright.pop.dead.letter.topic`` names another; KIP-1191's ``errors.deadletterqueue.topic.name`` is the
``dead_letter`` plugin's to answer. A copy goes to the source partition's index modulo the target's
partitions, with the decision's headers (the ``pop`` plugin's: RocketMQ's ``REAL_TOPIC``, ``RETRY_TOPIC``,
``ORIGIN_MESSAGE_ID``, ``RECONSUME_TIMES`` and ``logwright.pop.group``).

The copies are staged before the `PopDeadLettered` that settles the originals, in one call and so in one
WriteBatch, cut into record batches within the target's ``max.message.bytes`` (`copy_batches`, as share
groups' copies are), one append. When no copy can be written the records are not settled (nothing is lost):
the caller keeps them invisible and tries again. When no plugin decides, the records are settled without a
copy, as a share group's archive without a decision is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from logwright.compat.appends import PartitionResult, prepare_partition, stage_partition
from logwright.compat.broker import Broker
from logwright.compat.coordinators.dead_letters import (
    copy_batches,
    create_target,
    dead_letter_copy,
    existing_or_named,
    may_create,
)
from logwright.compat.errors import ErrorCode
from logwright.compat.wire.records import Record
from logwright.core.cursors.plugin_decisions import ArchiveDecider, ArchivedRecords, DeadLetter
from logwright.core.cursors.subscription_mode import SUBSCRIPTION_MODE_KEY
from logwright.core.errors import DomainError
from logwright.core.log.catalog import TopicState
from logwright.core.pop.inflight import PopEntry, PopPartition

log = logging.getLogger(__name__)

POP_MODE = "pop"


@dataclass(frozen=True, slots=True)
class Copied:
    """Where the copies went: the topic, its partition id and the first copy's offset (no copy: ``""``, -1, -1,
    when no plugin decided one)."""

    topic: str
    partition_id: int
    base_offset: int


NOT_COPIED = Copied("", -1, -1)


def archived_records(state: PopPartition, entries: Sequence[PopEntry], reason: str, consumer: str, now_ms: int,
                     settings: Mapping[str, str], partition_index: int) -> ArchivedRecords:
    """What the plugins are asked: ``entries`` as ``(first, last, deliveries)`` spans (adjacent offsets of the
    same count merged), the group's configs marked as a pop group's."""
    spans: list[tuple[int, int, int]] = []
    for entry in sorted(entries):
        if spans and spans[-1][1] + 1 == entry.offset and spans[-1][2] == entry.deliveries:
            spans[-1] = (spans[-1][0], entry.offset, entry.deliveries)
        else:
            spans.append((entry.offset, entry.offset, entry.deliveries))
    return ArchivedRecords(state.group, state.topic, partition_index, tuple(spans), reason, consumer, now_ms,
                           {**settings, SUBSCRIPTION_MODE_KEY: POP_MODE})


def stage_dead_letters(broker: Broker, decide: ArchiveDecider | None, state: PopPartition,
                       entries: Sequence[PopEntry], originals: Mapping[int, Record], settings: Mapping[str, str],
                       reason: str, consumer: str = "") -> Copied | None:
    """Ask the plugins where ``entries`` go and stage one append of their copies (``originals`` by offset);
    `NOT_COPIED` when no plugin decided, ``None`` (logged) when the copy cannot be written."""
    source = broker.topic(state.topic)
    index = source.partition_ids.index(state.partition_id) if source is not None else 0
    archived = archived_records(state, entries, reason, consumer, broker.clock.now_ms(), settings, index)
    decision = existing_or_named(broker, decide(archived)) if decide is not None else None
    if decision is None:
        return NOT_COPIED
    target = _target(broker, state, decision, source)
    if isinstance(target, str):
        log.warning("pop group %s: %s; offsets %s of %s stay in flight and are tried again", state.group, target,
                    [entry.offset for entry in entries], state.topic)
        return None
    now = broker.clock.now_ms()
    records = [dead_letter_copy(originals.get(offset) if decision.copy_record else None, now, {
        "topic": state.topic, "partition": str(index), "offset": str(offset), "group": state.group,
        "delivery_count": str(count), "reason": reason}, decision)
        for first, last, count in archived.deliveries for offset in range(first, last + 1)]
    partition = index % len(target.partition_ids)
    max_bytes = int(target.config("max.message.bytes") or broker.broker_config("message.max.bytes"))
    prepared = prepare_partition(broker, target, partition, b"".join(copy_batches(records, max_bytes)))
    result = prepared if isinstance(prepared, PartitionResult) else stage_partition(broker, prepared)
    if result.error_code != ErrorCode.NONE:
        log.warning("pop group %s: dead-letter append to %s-%d refused (%s: %s); the records stay in flight",
                    state.group, target.name, partition, ErrorCode(result.error_code).name, result.error_message)
        return None
    return Copied(target.name, target.partition_ids[partition], result.base_offset)


def _target(broker: Broker, state: PopPartition, decision: DeadLetter, source: TopicState | None
            ) -> TopicState | str:
    """The decided topic (created as the decision says when it and the broker key it names allow it), or why not."""
    target = broker.topic(decision.topic)
    if target is None and decision.auto_create and may_create(broker, decision):
        try:
            target = create_target(broker, decision, len(source.partition_ids) if source is not None else 1)
        except DomainError as error:
            return f"dead-letter topic {decision.topic!r} could not be created: {error}"
    if target is None or not target.partition_ids:
        return f"dead-letter topic {decision.topic!r} is missing"
    if target.name == state.topic:
        return f"the dead-letter topic {target.name!r} is the source topic"
    if decision.enabled_by is not None and broker.topic_config(target, decision.enabled_by) != "true":
        return f"the dead-letter topic {target.name!r} does not have {decision.enabled_by}=true"
    return target
