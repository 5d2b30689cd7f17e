"""Dead-lettering: archived records copied to another topic in the WriteBatch that archives them.

The share coordinator hands every batch of cursor events it is about to stage to `with_dead_letters`.
For each `RecordsRejected` the plugins' ``logwright_decide_archive`` may answer `DeadLetter`; the copies
are then staged as an ordinary append to the dead-letter topic (the producer's validation and staging,
no admission: the group's own config chose the topic) *before* the cursor events, in the same call and so
in the same loop turn and WriteBatch. A crash leaves both the copies and the archive, or neither: never a
duplicate on the DLQ, never a record archived and lost (Kafka 4.4 archives first and copies later).

The delivery counts are read from the cursor before the events fold, so the `DeadLettered` event and
the ``__dlq.errors.delivery.count`` header carry the count the record was archived at.

Every archived record gets its copy: the copies of one archive are cut into `DeadLettered` events of at
most `MAX_COPIES_PER_EVENT` records each (so no event grows without bound) and into record batches that
fit the target's ``max.message.bytes``, all staged as one append (contiguous offsets) in the same
WriteBatch as the archive. What one archive holds is bounded by what the group had in flight on the
partition.

A copy the broker cannot write (the topic deleted, missing and not creatable, refused, a copy larger than
the target's ``max.message.bytes``, or the append refused) never costs the record: the `RecordsRejected`
is replaced by a `DeadLetterDeferred` that keeps the records (with their delivery counts) and offers them
again after the group's ``logwright.dead.letter.deferred.retry.ms`` (`DEFERRED_RETRY_MS` by default);
archiving them then tries the copy again. A retry move past its limit (``reconsume_times``) is a client's
request and is refused instead (`DeadLetterRefused`, nothing staged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from logwright.compat.appends import PartitionResult, prepare_partition, stage_partition
from logwright.compat.broker import Broker
from logwright.compat.errors import ErrorCode
from logwright.compat.wire.record_batch import build_batch, decode_records, parse_header
from logwright.compat.wire.records import Record
from logwright.core.cursors import cursor_commands
from logwright.core.cursors.cursor import CursorState, cursor_key
from logwright.core.cursors.plugin_decisions import (
    DEAD_LETTER_DEFERRED_RETRY_KEY,
    DEFAULT_DEAD_LETTER_DEFERRED_RETRY_MS,
    ArchiveDecider,
    ArchivedRecords,
    DeadLetter,
)
from logwright.core.errors import DomainError, UnknownTopic
from logwright.core.events import Event
from logwright.core.events.cursors import DeadLetterDeferred, DeadLettered, RecordsRejected
from logwright.core.log.catalog import TopicState
from logwright.core.log.delayed_delivery import HEADER_PREFIX
from logwright.core.share_groups import share_group_offsets

log = logging.getLogger(__name__)

MAX_COPIES_PER_EVENT = 100_000
"""Records one `DeadLettered` event describes (and one copy batch holds, at most): an archive of more is
described by several events, all in the same WriteBatch, so every archived record still gets its copy."""

DEFERRED_RETRY_MS = DEFAULT_DEAD_LETTER_DEFERRED_RETRY_MS
"""How long records whose dead-letter copy failed wait before they are offered again (and, archived
again, retry the copy) when the group's ``logwright.dead.letter.deferred.retry.ms`` is not registered (the
dead_letter plugin disabled): long enough not to spin on a broken topic, short enough to notice a repaired one."""


class DeadLetterRefused(UnknownTopic):
    """The dead-letter copy of a retry move past its limit cannot be written; nothing was staged."""


def with_dead_letters(broker: Broker, decide: ArchiveDecider | None, state: CursorState,
                      settings: Callable[[], Mapping[str, str]], events: Sequence[Event],
                      reconsume_times: int = 0, real_topic: str = "") -> list[Event]:
    """``events`` with a `DeadLettered` after each `RecordsRejected` the plugins dead-letter (or a
    `DeadLetterDeferred` in its place when the copy fails); the copies are staged on ``broker`` now, so the
    caller must stage the returned events in this same turn. ``reconsume_times`` above 0 marks a retry move
    past its limit (of a record first produced to ``real_topic``): the plugins are told, and a failed copy
    raises `DeadLetterRefused` instead."""
    if decide is None or not any(isinstance(event, RecordsRejected) for event in events):
        return list(events)
    out: list[Event] = []
    group_settings: Mapping[str, str] | None = None
    feature_levels = dict(broker.finalized_features().levels)  # once a call: every event of it sees the same
    for event in events:
        if not isinstance(event, RecordsRejected) or event.subscription != state.subscription:
            out.append(event)
            continue
        if group_settings is None:
            group_settings = settings()
        deliveries = _deliveries(state, event)
        topic = broker.topic(state.topic)
        index = topic.partition_ids.index(state.partition_id) if topic is not None else 0
        now = broker.clock.now_ms()
        archived = ArchivedRecords(state.subscription, state.topic, index, deliveries, event.reason,
                                   event.consumer, now, group_settings, reconsume_times, real_topic, feature_levels)
        decision = existing_or_named(broker, decide(archived))
        if decision is None:
            out.append(event)
            continue
        copied = _stage_copies(broker, state, archived, decision)
        if not isinstance(copied, str):
            out.extend((event, *copied))
            continue
        if reconsume_times:
            raise DeadLetterRefused(copied)
        wait_ms = deferred_retry_ms(group_settings)
        log.warning("group %s: %s; %s-%d %s kept (not archived), offered again in %d ms", archived.subscription,
                    copied, state.topic, index, _summary(deliveries), wait_ms)
        out.append(DeadLetterDeferred(state.subscription, state.partition_id, event.consumer, deliveries,
                                      event.reason, now, decision.topic, copied, now + wait_ms))
    return out


def deferred_retry_ms(settings: Mapping[str, str]) -> int:
    """The group's ``logwright.dead.letter.deferred.retry.ms`` (validated when set), else `DEFERRED_RETRY_MS`."""
    value = settings.get(DEAD_LETTER_DEFERRED_RETRY_KEY, "")
    return int(value) if value.lstrip("-").isdigit() else DEFERRED_RETRY_MS


def _summary(deliveries: tuple[tuple[int, int, int], ...]) -> str:
    """The kept spans for a log line, the first few and how many more (an archive may hold thousands)."""
    shown = ", ".join(f"{first}..{last} (count {count})" for first, last, count in deliveries[:3])
    return shown if len(deliveries) <= 3 else f"{shown} and {len(deliveries) - 3} more spans"


def _deliveries(state: CursorState, event: RecordsRejected) -> tuple[tuple[int, int, int], ...]:
    """``(first, last, delivery_count)`` for the rejected ranges, split where the count changes."""
    spans: list[tuple[int, int, int]] = []
    delivery_count = cursor_commands.delivery_counter(state)
    for first, last in event.ranges:
        offset = first
        while offset <= last:
            count = delivery_count(offset)
            end = offset
            while end < last and delivery_count(end + 1) == count:
                end += 1
            spans.append((offset, end, count))
            offset = end + 1
    return tuple(spans)


def _stage_copies(broker: Broker, state: CursorState, archived: ArchivedRecords,
                  decision: DeadLetter) -> tuple[DeadLettered, ...] | str:
    """Stage the copies on the dead-letter partition as one append, described by one `DeadLettered` per
    `MAX_COPIES_PER_EVENT` records; why not (nothing staged), if the broker cannot."""
    target = broker.topic(decision.topic)
    if target is None and decision.auto_create:
        target = _auto_create(broker, state, archived, decision)
    if target is None or not target.partition_ids:
        why = ""
        if target is None and decision.auto_create:
            why = (" and could not be created" if may_create(broker, decision)
                   else f" and broker {decision.auto_create_enabled_by} is false")
        return f"dead-letter topic {decision.topic!r} does not exist{why}"
    refusal = _refusal(broker, state, target, decision)
    if refusal is not None:
        return refusal
    if decision.initial_subscription:
        _start_initial_subscription(broker, decision.initial_subscription, target)
    partition = archived.partition_index % len(target.partition_ids)
    now = broker.clock.now_ms()
    originals = _originals(broker, state.partition_id, archived.deliveries) if decision.copy_record else {}
    max_bytes = int(target.config("max.message.bytes") or broker.broker_config("message.max.bytes"))
    pieces = _pieces(archived.deliveries, max(1, MAX_COPIES_PER_EVENT))
    batches: list[bytes] = []
    for piece in pieces:
        records: list[Record] = []
        for first, last, count in piece:
            for offset in range(first, last + 1):
                fields = {"topic": state.topic, "partition": str(archived.partition_index), "offset": str(offset),
                          "group": archived.subscription, "delivery_count": str(count), "reason": archived.reason}
                records.append(dead_letter_copy(originals.get(offset), now, fields, decision))
        batches.extend(copy_batches(records, max_bytes))
    prepared = prepare_partition(broker, target, partition, b"".join(batches))
    result = prepared if isinstance(prepared, PartitionResult) else stage_partition(broker, prepared)
    if result.error_code != ErrorCode.NONE:
        return (f"dead-letter append to {decision.topic}-{partition} refused "
                f"({ErrorCode(result.error_code).name}: {result.error_message})")
    events: list[DeadLettered] = []
    base_offset = result.base_offset
    for piece in pieces:
        events.append(DeadLettered(state.subscription, state.partition_id, archived.consumer, piece, archived.reason,
                                   now, decision.topic, target.partition_ids[partition], base_offset))
        base_offset += sum(last - first + 1 for first, last, _ in piece)
    return tuple(events)


def _start_initial_subscription(broker: Broker, group_id: str, target: TopicState) -> None:
    """Pulsar's ``initialSubscriptionName``: a cursor of ``group_id`` at the end of each partition of the dead-letter
    topic it has none on (the group created if it does not exist), staged before the copy and so in its WriteBatch.
    A group id that a classic or consumer group holds is left alone (group ids are one namespace), and logged."""
    shares = broker.coordinators.share_groups
    group = shares.group(group_id)
    if group is None and shares.held_by_other_kind(group_id):
        log.warning("the dead-letter topic %r gets no initial subscription %r: a classic or consumer group holds that "
                    "group id", target.name, group_id)
        return
    starts = [(target.name, partition_id, broker.high_watermark(partition_id)) for partition_id in target.partition_ids
              if broker.store.state("cursors", cursor_key(group_id, partition_id)) is None]
    if starts:
        broker.stage(share_group_offsets.alter(group_id, group, starts))


def _pieces(deliveries: tuple[tuple[int, int, int], ...], limit: int) -> list[tuple[tuple[int, int, int], ...]]:
    """``deliveries`` cut, in order, into pieces of at most ``limit`` records (a span may be split)."""
    pieces: list[tuple[tuple[int, int, int], ...]] = []
    piece: list[tuple[int, int, int]] = []
    size = 0
    for first, last, count in deliveries:
        while first <= last:
            take = min(last - first + 1, limit - size)
            piece.append((first, first + take - 1, count))
            size += take
            first += take
            if size == limit:
                pieces.append(tuple(piece))
                piece, size = [], 0
    if piece:
        pieces.append(tuple(piece))
    return pieces


def copy_batches(records: Sequence[Record], max_bytes: int) -> list[bytes]:
    """``records`` as record batches of at most ``max_bytes`` each: cut where their estimated sizes fill
    most of it, so each copy is encoded once; a cut the estimate got wrong is halved until it fits. A
    single copy over the limit stays one batch, which the append refuses (MESSAGE_TOO_LARGE: kept). Pop's
    dead-letter copies (`pop_dead_letters`) are cut here too."""
    batches: list[bytes] = []
    start, size = 0, _BATCH_OVERHEAD
    for end, record in enumerate(records):
        estimate = _estimated_size(record)
        if end > start and size + estimate > max_bytes * 9 // 10:
            batches.extend(_fitted(records[start:end], max_bytes))
            start, size = end, _BATCH_OVERHEAD
        size += estimate
    if start < len(records):
        batches.extend(_fitted(records[start:], max_bytes))
    return batches


_BATCH_OVERHEAD = 61
"""A RecordBatch v2 header's bytes."""


def _estimated_size(record: Record) -> int:
    """A record's encoded bytes, give or take its varints (a few bytes each)."""
    return (24 + len(record.key or b"") + len(record.value or b"")
            + sum(8 + len(name) + len(value or b"") for name, value in record.headers))


def _fitted(records: Sequence[Record], max_bytes: int) -> list[bytes]:
    batch = build_batch(records)
    if len(batch) <= max_bytes or len(records) == 1:
        return [batch]
    half = len(records) // 2
    return [*_fitted(records[:half], max_bytes), *_fitted(records[half:], max_bytes)]


def dead_letter_copy(original: Record | None, now: int, fields: Mapping[str, str], decision: DeadLetter) -> Record:
    """One dead-letter record: the original's key, value, timestamp and headers (if copied), the decision's
    ``headers`` replacing same-named ones, its ``headers_once`` only where no header has that name (pop's
    dead letters, `pop_dead_letters`, are built here too)."""
    replaced = {name for name, _ in decision.headers}
    kept = tuple(h for h in original.headers if h[0] not in replaced and not _delays(h[0])
                 ) if original is not None else ()
    present = {name for name, _ in kept}
    once = tuple((name, value.format_map(fields).encode()) for name, value in decision.headers_once
                 if name not in present)
    added = tuple((name, value.format_map(fields).encode()) for name, value in decision.headers)
    if original is None:
        return Record(0, now, None, None, (*once, *added))
    return Record(0, original.timestamp, original.key, original.value, (*kept, *once, *added))


def _delays(name: str) -> bool:
    """A delivery-delay header: a copy keeping it would be held back again on the dead-letter topic."""
    return name.encode(errors="replace").startswith(HEADER_PREFIX)


def may_create(broker: Broker, decision: DeadLetter) -> bool:
    """Whether the broker key the decision names (by default ``auto.create.topics.enable``) allows creating its
    missing topic."""
    return broker.broker_config(decision.auto_create_enabled_by).lower() == "true"


def create_target(broker: Broker, decision: DeadLetter, source_partitions: int) -> TopicState:
    """Stage the decision's missing topic as it says (``auto_create_partitions``: ``None`` the source's
    ``source_partitions``, -1 the broker's ``num.partitions``; ``auto_create_configs``), in this turn and so in the
    copy's WriteBatch; raises `DomainError` if the broker refuses. The caller checked `may_create`."""
    partitions = decision.auto_create_partitions
    if partitions is None:
        partitions = source_partitions
    elif partitions == -1:
        partitions = int(broker.broker_config("num.partitions"))
    broker.create_topic(decision.topic, partitions, decision.auto_create_configs)
    created = broker.topic(decision.topic)
    assert created is not None  # staged just now
    return created


def _auto_create(broker: Broker, state: CursorState, archived: ArchivedRecords,
                 decision: DeadLetter) -> TopicState | None:
    """The missing dead-letter topic, created when the decision and the broker allow it (`create_target`)."""
    source = broker.topic(state.topic)
    if not may_create(broker, decision) or source is None:
        return None
    try:
        return create_target(broker, decision, len(source.partition_ids))
    except DomainError as error:
        log.warning("group %s: dead-letter topic %r could not be created: %s", archived.subscription,
                    decision.topic, error)
        return None


def _refusal(broker: Broker, state: CursorState, target: TopicState, decision: DeadLetter) -> str | None:
    if target.name == state.topic:
        return f"the dead-letter topic {target.name!r} is the source topic"
    if decision.enabled_by is not None and broker.topic_config(target, decision.enabled_by) != "true":
        return f"the dead-letter topic {target.name!r} does not have {decision.enabled_by}=true"
    return None


def _originals(broker: Broker, partition_id: int, deliveries: tuple[tuple[int, int, int], ...]) -> dict[int, Record]:
    """The stored records at the archived offsets, read batch by batch, bounded by the spans. Each batch is decoded
    once: read again for each span it holds, a 2,000-record batch rejected every other offset (1,000 spans) was
    decoded 1,000 times, 4.9 s in one stretch."""
    wanted = {offset for first, last, _ in deliveries for offset in range(first, last + 1)}
    found: dict[int, Record] = {}
    decoded_to = -1  # the last offset of the batches decoded so far
    for first, last in sorted((first, last) for first, last, _ in deliveries):
        if last <= decoded_to:
            continue
        for batch in broker.store.read_batches(partition_id, max(first, decoded_to + 1), 2**31 - 1,
                                               end_offset=last):
            for record in decode_records(batch):
                if record.offset in wanted:
                    found[record.offset] = record
            decoded_to = max(decoded_to, parse_header(batch).last_offset)
    return found


def existing_or_named(broker: Broker, decision: DeadLetter | None) -> DeadLetter | None:
    """The decision with its ``existing_topic`` as its topic when that topic exists (nothing to create then)."""
    if decision is None or not decision.existing_topic or broker.topic(decision.existing_topic) is None:
        return decision
    return replace(decision, topic=decision.existing_topic, auto_create=False)
