"""LogwrightPopInspect (extension key 32013): a group's pop state on every partition of a topic.

What RocketMQ spreads over its revive topic, ``%RETRY%{group}_{topic}`` and the consumer offset is one
in-flight table per partition here: the consumed offset (everything below is settled), the next offset never
popped, and the records in flight or revived with their reconsume counts, handle epochs and deadlines.

Request (msgpack map): ``group_id: str, topic: str``. Response: ``retry_topic`` (RocketMQ's
``%RETRY%<group>_<topic>``, a label: no copy is ever written there), ``dead_letter_topic`` (where the built-in
``pop`` plugin sends dead letters: ``logwright.pop.dead.letter.topic`` or ``DLQ.<group>``; a plugin answering
``logwright_decide_archive`` first may send them elsewhere), ``rocketmq_dead_letter_topic`` (RocketMQ's
``%DLQ%<group>``, a label: ``%`` is illegal in a Kafka topic name), ``partitions: [{partition, consumed_offset,
next_offset, in_flight, revived, delayed, entries: [{offset, reconsume_times, epoch, invisible_until_ms, visible,
delayed}]}]``
(the first `MAX_ENTRIES` entries of each partition; the counts cover all). ``delayed``: records a pop passed
over because their delivery time (``logwright.deliver.at``/``after``) had not come, never delivered yet
(``reconsume_times`` -1, due at ``invisible_until_ms``).
"""

from __future__ import annotations

from itertools import chain, islice

from logwright.compat.coordinators.pop_coordinator import pop_coordinator
from logwright.compat.extensions.access import DESCRIBE, group_and_topic
from logwright.compat.extensions.pop import name
from logwright.compat.registry import RequestContext
from logwright.compat.turns import give_way
from logwright.compat.wire.extension_body import Body, extension, text
from logwright.core.errors import UnknownTopic
from logwright.core.pop.inflight import PopPartition
from logwright.core.pop.pop_commands import (
    DEAD_LETTER_TOPIC_KEY,
    dead_letter_label,
    default_dead_letter_topic,
    retry_topic_label,
)

API_KEY = 32013
MAX_ENTRIES = 1_000
PARTITIONS_PER_TURN = 256
"""Partitions inspected before other requests run: each is its own table read."""


@extension(API_KEY, "LogwrightPopInspect", group_and_topic(DESCRIBE))
async def handle(context: RequestContext, body: Body) -> Body:
    group_id, topic_name = name(body, "group_id"), text(body, "topic")
    topic = context.broker.topic(topic_name)
    if topic is None:
        raise UnknownTopic(f"topic {topic_name!r} does not exist")
    coordinator = pop_coordinator(context.broker)
    partitions: list[Body] = []
    for index, partition_id in enumerate(topic.partition_ids):
        if index and index % PARTITIONS_PER_TURN == 0:
            await give_way()
        state = coordinator.table(group_id, partition_id)
        if state is None:
            continue
        partitions.append(_partition(index, state))
    dead_letter = coordinator.settings(group_id).get(DEAD_LETTER_TOPIC_KEY) or default_dead_letter_topic(group_id)
    return {"retry_topic": retry_topic_label(group_id, topic_name), "dead_letter_topic": dead_letter,
            "rocketmq_dead_letter_topic": dead_letter_label(group_id), "partitions": partitions}


def _partition(index: int, state: PopPartition) -> Body:
    """One partition's table, counted from its runs and its first `MAX_ENTRIES` entries expanded: expanding every
    record in flight (up to 20,000 a partition) built tens of thousands of objects per partition for counts."""
    held = revived = delayed = 0
    for run in state.runs:
        count = run.last - run.first + 1
        delayed += 0 if run.deliveries else count
        revived += count if run.visible else 0
        held += count if run.deliveries and not run.visible else 0
    first = islice(chain.from_iterable(run.entries() for run in state.runs), MAX_ENTRIES)
    return {"partition": index, "consumed_offset": state.consumed_offset(), "next_offset": state.next_offset,
            "in_flight": held, "revived": revived, "delayed": delayed,
            "entries": [{"offset": e.offset, "reconsume_times": e.reconsume_times, "epoch": e.epoch,
                         "invisible_until_ms": e.invisible_until_ms, "visible": e.visible, "delayed": not e.deliveries}
                        for e in first]}
