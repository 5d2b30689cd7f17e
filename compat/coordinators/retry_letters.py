"""Retry letter topics (Pulsar's ``reconsumeLater``): a held record moved to the retry topic in one WriteBatch.

A consumer that cannot handle a record now asks the broker to move it: the copy is appended to the
subscription's retry topic (``logwright.retry.letter.topic``, default ``<topic>-<subscription>-RETRY``)
with Pulsar's properties and a ``logwright.deliver.after.ms`` header, so the delayed-delivery index holds
it back for the delay; the original is acknowledged; a `MovedToRetry` event says where the copy went.
All of it is staged in one call, so one loop turn and one WriteBatch: a crash leaves the copy and the
ack, or neither. The subscription consumes its retry topic too, so the copy comes back to it.

Past ``logwright.retry.max.reconsume.times`` the record is rejected instead and the dead-letter
mechanism (`dead_letters`) copies it where ``logwright_decide_archive`` says, told the reconsume count:
the built-in ``retry_letter`` plugin answers Pulsar's dead-letter topic; another plugin may redirect it.
A missing default retry topic is created in the move's WriteBatch with the source topic's partition
count when the broker's ``auto.create.topics.enable`` is true (Kafka's rule); a named one must exist.
A dead-letter copy that cannot be written refuses the move, with nothing changed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from logwright.compat.appends import PartitionResult, prepare_partition, stage_partition
from logwright.compat.broker import Broker
from logwright.compat.coordinators.dead_letters import DeadLetterRefused
from logwright.compat.coordinators.share_coordinator import ShareCoordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.wire.batch_slices import BatchSlicer
from logwright.compat.wire.record_batch import build_batch, decode_records
from logwright.compat.wire.records import Record
from logwright.core.errors import InvalidRecordState, UnknownTopic
from logwright.core.events import Event
from logwright.core.events.cursors import DeadLettered, MovedToRetry, RecordsRejected
from logwright.core.log.delayed_delivery import HEADER_PREFIX
from logwright.core.share_groups.share_acks import AckBatch, AckLimits, decide

RETRY_TOPIC_KEY = "logwright.retry.letter.topic"
MAX_RECONSUME_TIMES_KEY = "logwright.retry.max.reconsume.times"
DEFAULT_MAX_RECONSUME_TIMES = 16
"""Pulsar's default maxRedeliverCount for retry letter topics."""
MAX_RECONSUME_REASON = "max reconsume times reached"

RECONSUMETIMES = "RECONSUMETIMES"
DELAY_TIME = "DELAY_TIME"
REAL_TOPIC = "REAL_TOPIC"
ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
DELIVER_AFTER = "logwright.deliver.after.ms"

ACCEPT, REJECT = 1, 3


class RetryTopicUnavailable(UnknownTopic):
    """The retry (or dead-letter) topic does not exist or refused the copy; nothing changed."""


@dataclass(frozen=True, slots=True)
class Moved:
    """Where a reconsumed record went: the retry topic, or the dead-letter topic past the limit."""

    topic: str
    reconsume_times: int
    dead_lettered: bool


def reconsume_later(broker: Broker, coordinator: ShareCoordinator, group_id: str, member_id: str, topic: str,
                    partition_id: int, offset: int, delay_ms: int) -> Moved:
    """Move the record ``member_id`` holds at ``offset``; raises `InvalidRecordState` (not held) or
    `RetryTopicUnavailable`, with nothing staged. Synchronous: the caller awaits durability after it."""
    state = coordinator.cursor(group_id, topic, partition_id)
    now = broker.clock.now_ms()
    original = _record(broker, partition_id, offset)
    if original is None:
        raise InvalidRecordState(f"offset {offset} of {topic} is not a stored record")
    headers = dict(original.headers)
    times = _int(headers.get(RECONSUMETIMES)) + 1
    real_topic = _text(headers.get(REAL_TOPIC)) or topic
    source = broker.topic(topic)
    index = source.partition_ids.index(partition_id) if source is not None else 0
    settings = coordinator.group_settings(group_id)
    limit = int(settings.get(MAX_RECONSUME_TIMES_KEY, str(DEFAULT_MAX_RECONSUME_TIMES)) or 0)
    limits = AckLimits(coordinator.delivery_count_limit(group_id), coordinator.lock_duration_ms(group_id, member_id),
                       False, None)
    if times > limit:
        events = decide(state, member_id, [AckBatch(offset, offset, (REJECT,))], now, limits)
        rejected = [_limit_reached(event) for event in events]
        try:
            staged = coordinator.apply(group_id, partition_id, rejected, reconsume_times=times, real_topic=real_topic)
        except DeadLetterRefused as error:
            raise RetryTopicUnavailable(str(error)) from None
        copied = [event.dead_letter_topic for event in staged if isinstance(event, DeadLettered)]
        return Moved(copied[0] if copied else "", times, dead_lettered=True)
    events = decide(state, member_id, [AckBatch(offset, offset, (ACCEPT,))], now, limits)
    named = settings.get(RETRY_TOPIC_KEY, "")
    legacy = f"{group_id}-RETRY"  # Pulsar's name before the topic-qualified one, taken when it exists
    retry_topic = named or (legacy if broker.topic(legacy) is not None else f"{real_topic}-{group_id}-RETRY")
    target = broker.topic(retry_topic)
    if target is None and not named and source is not None and broker.auto_create_enabled():
        broker.create_topic(retry_topic, len(source.partition_ids))  # staged: committed with the copy
        target = broker.topic(retry_topic)
    if target is None or not target.partition_ids:
        raise RetryTopicUnavailable(f"retry letter topic {retry_topic!r} does not exist")
    partition = index % len(target.partition_ids)
    copy = _copy(original, now, times, delay_ms, real_topic, f"{topic}-{index}@{offset}")
    prepared = prepare_partition(broker, target, partition, build_batch([copy]))
    result = prepared if isinstance(prepared, PartitionResult) else stage_partition(broker, prepared)
    if result.error_code != ErrorCode.NONE:
        raise RetryTopicUnavailable(f"retry letter topic {retry_topic!r} refused the copy: "
                                    f"{ErrorCode(result.error_code).name} {result.error_message or ''}".strip())
    moved = MovedToRetry(group_id, partition_id, member_id, offset, times, delay_ms, now, retry_topic,
                         target.partition_ids[partition], result.base_offset)
    coordinator.apply(group_id, partition_id, [*events, moved])
    return Moved(retry_topic, times, dead_lettered=False)


def _limit_reached(event: Event) -> Event:
    """The REJECT event named for what it is: the reconsume limit reached."""
    return replace(event, reason=MAX_RECONSUME_REASON) if isinstance(event, RecordsRejected) else event


def _copy(original: Record, now: int, times: int, delay_ms: int, real_topic: str, origin_id: str) -> Record:
    """The retry copy: key, value and headers of the original (its delivery-delay headers dropped), Pulsar's
    properties (``REAL_TOPIC`` and ``ORIGIN_MESSAGE_ID`` kept where already set: the first origin wins)."""
    replaced = {RECONSUMETIMES, DELAY_TIME}
    kept = [(name, value) for name, value in original.headers
            if name not in replaced and not name.startswith(HEADER_PREFIX.decode())]
    present = {name for name, _ in kept}
    added: list[tuple[str, bytes | None]] = [(RECONSUMETIMES, str(times).encode()),
                                             (DELAY_TIME, str(delay_ms).encode())]
    if REAL_TOPIC not in present:
        added.append((REAL_TOPIC, real_topic.encode()))
    if ORIGIN_MESSAGE_ID not in present:
        added.append((ORIGIN_MESSAGE_ID, origin_id.encode()))
    added.append((DELIVER_AFTER, str(delay_ms).encode()))
    return Record(0, now, original.key, original.value, (*kept, *added))


_SLICER = BatchSlicer()
"""Cuts a stored batch to the one record a retry copies (its walk kept for the next record of the batch)."""


def _record(broker: Broker, partition_id: int, offset: int) -> Record | None:
    """The stored record at ``offset``, its batch cut to it before decoding: each LogwrightReconsumeLater decoded
    the whole batch holding its record (7 ms for 4,000 records; a 1 MB batch of tiny records, about 100 ms)."""
    for batch in broker.store.read_batches(partition_id, offset, 2**31 - 1, end_offset=offset):
        for record in decode_records(_SLICER.cut(partition_id, batch, offset, offset)):
            if record.offset == offset:
                return record
    return None


def _int(value: bytes | None) -> int:
    text = _text(value)
    return int(text) if text.isdecimal() else 0


def _text(value: bytes | None) -> str:
    try:
        return value.decode() if value is not None else ""
    except UnicodeDecodeError:
        return ""
