"""LogwrightInspectCursor (extension key 32006): a subscription's cursor on each partition of a topic.

Read-only (a partition without a cursor is reported with ``exists: false``, none is created): what
`logwright check` and the tests compare, and what an operator asks when records seem stuck.

Request (msgpack map): ``group_id: str, topic: str``. Response: ``error_code, error_message, now_ms,
partitions: [{partition, exists, log_start_offset, log_end_offset, mark_delete_position, settled:
[[first, last], ...], in_flight: [{first, last, consumer, lock_deadline_ms, delivery_count}, ...],
redeliveries: [{first, last, delivery_count, available_at_ms, previous_consumer}, ...], backlog, delayed:
[{offset, deliver_at_ms}, ...], delayed_total, dead_lettered: [{first, last, delivery_count, reason, consumer,
time_ms, dead_letter_topic, dead_letter_partition, dead_letter_offset}, ...]}, ...]``. ``delayed`` lists the
partition's records whose delivery delay has not run out (for every subscription alike; Exclusive and
Failover ignore it), present with or without a cursor: the first `MAX_DELAYED_LISTED` (10,000) in offset order,
``delayed_total`` counting them all. ``dead_lettered`` lists the subscription's spans
of records archived with a dead-letter copy, oldest first, only the last 100
(`dead_letter_history.MAX_SPANS`), each with where its first copy went (``dead_letter_partition`` is -1
once that topic is gone). ``dead_letter_deferred`` lists the records kept, not archived, because their
dead-letter copy could not be written (`DeadLetterDeferred`), in offset order: ``[{first, last,
delivery_count, reason, consumer, time_ms, dead_letter_topic, error, available_at_ms}, ...]`` (when they are
offered again, and archiving them retries the copy), until a copy succeeds; offsets the cursor settled
since (acknowledged on redelivery) are left out. ``backlog_quota`` is the partition's quota state, the same
for every subscription: ``{quota: {bytes, records, age_ms, policy}, subscriptions: [{subscription, kind,
records, bytes, age_ms, over, evicted}], slowest}`` (`backlog_report`): every group and cursor with a
position on the partition, its exact backlog, the limit it is past, and what eviction took from it.

A topic of many partitions is answered in slices of `PARTITIONS_PER_TURN`, other clients served between them.
The partitions are those the topic had when the request arrived, and a topic deleted meanwhile is answered
``UNKNOWN_TOPIC_OR_PARTITION``. The quota reports share one tracker (`report_tracker`), which locates the
subscriptions of the whole topic once: each partition's positions are read when it is reported, and a
subscription that starts while a later slice waits is left out, as if it had started after the answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from logwright.compat.backlog_report import backlog_report, report_tracker
from logwright.compat.broker import Broker
from logwright.compat.extensions.access import DESCRIBE, group_and_topic
from logwright.compat.registry import RequestContext
from logwright.compat.turns import give_way
from logwright.compat.wire.extension_body import Body, extension, text
from logwright.core.cursors import cursor_commands
from logwright.core.cursors.cursor import CursorState, cursor_key
from logwright.core.cursors.dead_letter_history import (
    DEAD_LETTER_HISTORY,
    DeadLetterHistory,
    dead_letter_history,
)
from logwright.core.errors import UnknownTopic, quoted
from logwright.core.log.catalog import TopicState

API_KEY = 32006

MAX_DELAYED_LISTED = 10_000
"""Delayed offsets listed per partition (the earliest; ``delayed_total`` counts them all): 500,000 waiting in one
partition were 500,000 entries built in one stretch, each inspection."""
PARTITIONS_PER_TURN = 256
"""Partitions reported between two turns given way to other clients: a topic has up to 10,000."""


@dataclass(frozen=True, slots=True)
class InspectCursorRequest:
    """The request map, checked (its topic looked up) in the order errors are reported."""

    group_id: str
    topic: TopicState

    @classmethod
    def parse(cls, body: Body, broker: Broker) -> InspectCursorRequest:
        group_id, topic_name = text(body, "group_id"), text(body, "topic")
        topic = broker.topic(topic_name)
        if topic is None:
            raise UnknownTopic(f"topic {topic_name!r} does not exist")
        return cls(group_id, topic)


def _delayed(broker: Broker, partition_id: int, log_start: int, log_end: int) -> tuple[list[dict[str, int]], int]:
    """What the plugins hold back (``logwright_hold_back``: delayed delivery), offset by offset, the first
    `MAX_DELAYED_LISTED` of them, and how many there are."""
    now_ms = broker.clock.now_ms()
    offsets = broker.held_back(partition_id, log_start, log_end - 1, now_ms=now_ms).offsets
    total = len(offsets)
    if not total:
        return [], 0
    last, counted = log_end - 1, 0
    for first, end in offsets.ranges:  # where the first MAX_DELAYED_LISTED end: only those are asked in detail
        if counted + end - first + 1 >= MAX_DELAYED_LISTED:
            last = first + MAX_DELAYED_LISTED - counted - 1
            break
        counted += end - first + 1
    held = broker.held_back(partition_id, log_start, last, now_ms=now_ms, detailed=True)
    listed = [{"offset": offset, "deliver_at_ms": span.until_ms}
              for span in held.spans for offset in range(span.first, span.last + 1)]
    return listed[:MAX_DELAYED_LISTED], total


def _dead_lettered(history: DeadLetterHistory | None, broker: Broker) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = []
    for span in history.spans if history else ():
        target = broker.topic(span.dead_letter_topic)
        ids = target.partition_ids if target is not None else ()
        partition = ids.index(span.dead_letter_partition_id) if span.dead_letter_partition_id in ids else -1
        listed.append({"first": span.first, "last": span.last, "delivery_count": span.delivery_count,
                       "reason": span.reason, "consumer": span.consumer, "time_ms": span.time_ms,
                       "dead_letter_topic": span.dead_letter_topic,
                       "dead_letter_partition": partition, "dead_letter_offset": span.dead_letter_offset})
    return listed


def _deferred(history: DeadLetterHistory | None, cursor: CursorState | None) -> list[dict[str, Any]]:
    """The deferred spans, without the offsets ``cursor`` has settled since (acknowledged on redelivery)."""
    listed: list[dict[str, Any]] = []
    for span in history.deferred if history else ():
        unsettled = [(span.first, span.last)]
        if cursor is not None:
            first = max(span.first, cursor.mark_delete_position + 1)
            unsettled = list(cursor.settled.missing(first, span.last).ranges) if first <= span.last else []
        listed.extend({"first": first, "last": last, "delivery_count": span.delivery_count, "reason": span.reason,
                       "consumer": span.consumer, "time_ms": span.time_ms,
                       "dead_letter_topic": span.dead_letter_topic, "error": span.error,
                       "available_at_ms": span.available_at_ms} for first, last in unsettled)
    return listed


@extension(API_KEY, "LogwrightInspectCursor", group_and_topic(DESCRIBE))
async def handle(context: RequestContext, body: Body) -> Body:
    broker = context.broker
    request = InspectCursorRequest.parse(body, broker)
    group_id, topic = request.group_id, request.topic
    partitions: list[dict[str, Any]] = []
    tracker = report_tracker(broker)
    for index, partition_id in enumerate(topic.partition_ids):
        if index and index % PARTITIONS_PER_TURN == 0:
            await give_way()
            current = broker.topic(topic.name)
            if current is None or current.topic_id != topic.topic_id:
                raise UnknownTopic(f"topic {quoted(topic.name)} was deleted while it was inspected")
        log_start = broker.partition(partition_id).log_start_offset
        log_end = broker.high_watermark(partition_id)
        state = broker.store.state("cursors", cursor_key(group_id, partition_id))
        history = dead_letter_history(broker.store.state(DEAD_LETTER_HISTORY.name, cursor_key(group_id, partition_id)))
        delayed, delayed_total = _delayed(broker, partition_id, log_start, log_end)
        entry: dict[str, Any] = {"partition": index, "exists": isinstance(state, CursorState),
                                 "log_start_offset": log_start, "log_end_offset": log_end,
                                 "delayed": delayed, "delayed_total": delayed_total,
                                 "dead_lettered": _dead_lettered(history, broker),
                                 "dead_letter_deferred": _deferred(history, state if isinstance(state, CursorState)
                                                                   else None),
                                 "backlog_quota": backlog_report(broker, topic, index, partition_id, tracker)}
        if isinstance(state, CursorState):
            entry.update(
                mark_delete_position=state.mark_delete_position,
                settled=[list(pair) for pair in state.settled.ranges],
                in_flight=[{"first": d.first, "last": d.last, "consumer": d.consumer,
                            "lock_deadline_ms": d.lock_deadline_ms, "delivery_count": d.delivery_count}
                           for d in state.in_flight],
                redeliveries=[{"first": r.first, "last": r.last, "delivery_count": r.delivery_count,
                               "available_at_ms": r.available_at_ms, "previous_consumer": r.previous_consumer}
                              for r in state.redeliveries],
                backlog=cursor_commands.backlog(state, log_start, log_end),
            )
        partitions.append(entry)
    return {"now_ms": broker.clock.now_ms(), "partitions": partitions}
