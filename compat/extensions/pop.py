"""LogwrightPop (extension key 32009): pop up to 32 records of a topic, each with a receipt handle (RocketMQ 5).

Any consumer pops from any partition, with no rebalance: revived records that are due first (oldest deadline
first), then new records partition by partition from a start that rotates with each pop. Each record stays
invisible to other pops for ``invisible_time_ms`` unless acknowledged (32010), its invisible time changed
(32011) or nacked (32012); then it is revived with its reconsume count one higher. With ``long_poll_ms`` the
request waits (up to 20 s) for the first record appended or revived.

Request (msgpack map): ``group_id: str, topic: str, max_messages: 1..32 (default 32), invisible_time_ms:
10000..43200000 (default 60000), long_poll_ms: 0..20000 (default 0), orderly: bool (default false),
consumer: str (default: the client id), ack_handles: [str, ...] (optional, 1 to 1024: acknowledged before
the pop, as LogwrightPopAck's ``handles``: one round trip per batch instead of two)``.
Response: ``messages: [{partition, offset, timestamp, key, value, headers: [[name, value], ...], handle,
reconsume_times, invisible_until_ms}]``, and ``ack_results`` (as LogwrightPopAck's ``results``) when
``ack_handles`` was given. INVALID_REQUEST for a parameter out of range, UNKNOWN_TOPIC_OR_PARTITION
for a missing topic, UNSUPPORTED_VERSION (35) when the plugin ``pop`` is disabled.

Version 1 (the compact form; the bundled client uses it when ApiVersions advertises it): the same request,
``max_messages`` up to 1024 (`MAX_MESSAGES_COMPACT`), and ``acks: [{topic_id: bin 16, partition, epoch,
ranges: [[first, last], ...]}, ...]`` (as LogwrightPopAck v1) instead of ``ack_handles``. Response:
``topic_id`` (bin 16) and ``partitions: [{partition, epoch, ranges: [[first, last], ...], invisible_until_ms,
reconsumed: [[offset, reconsume_times], ...], batches: [bin, ...]}]``: the stored record batches holding the
records, each uncompressed one without gaps cut to its records from the first to the last handed out
(`logwright.compat.wire.batch_slices`: a valid batch, base offset and record bytes as stored; records outside
``ranges`` are still not handed out: skip them), the offsets in ``ranges``
popped under handle ``epoch``, each with reconsume times 0 unless listed in ``reconsumed``. A record's
receipt handle is the v0 text ``"1 <epoch> <partition> <offset> <topic id hex> <group>"``; ``ack_results``
(as LogwrightPopAck v1's ``results``) when ``acks`` was given. Optional in the request: ``held: {topic_id: bin
16, batches: [[partition, base offset, CRC], ...]}`` (at most 64), the stored batches the client keeps from
earlier answers; a whole batch it holds is answered as ``[base offset, CRC]`` in the partition's ``held``
instead of its bytes in ``batches`` (a compressed batch of thousands of records, which is never cut, is
otherwise sent again with every pop of 1024 or fewer from it).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from logwright.compat.broker import Broker
from logwright.compat.coordinators.pop_coordinator import PoppedPartition, PoppedRecord, pop_coordinator
from logwright.compat.coordinators.pop_results import AckRanges
from logwright.compat.errors import error_code_for
from logwright.compat.extensions.access import Access, checked_by_handler, popping
from logwright.compat.registry import HandlerEntry, RequestContext, register_extension
from logwright.compat.wire.batch_slices import BatchSlicer
from logwright.compat.wire.extension_body import Body, ExtensionHandler, answer, integer, text, wrapped
from logwright.core.errors import DomainError, InvalidRequest, UnknownTopic
from logwright.core.log.catalog import TopicState
from logwright.core.pop.pop_commands import (
    DEFAULT_INVISIBLE_TIME_MS,
    MAX_HANDLES,
    MAX_MESSAGES,
    MAX_MESSAGES_COMPACT,
    PopLimits,
)

API_KEY = 32009
MAX_NAME_LENGTH = 255
"""Longest group id or consumer name a pop request may carry (it travels in every receipt handle)."""


def name(body: Body, field: str, default: str | None = None) -> str:
    """A non-empty string field of at most `MAX_NAME_LENGTH` characters."""
    value = text(body, field) if default is None or field in body else default
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidRequest(f"field {field!r} is {len(value)} characters long; the limit is {MAX_NAME_LENGTH}")
    return value


def flag(body: Body, field: str) -> bool:
    value = body.get(field, False)
    if not isinstance(value, bool):
        raise InvalidRequest(f"field {field!r} must be true or false, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class PopRequest:
    """The request map, checked field by field in the order errors are reported."""

    group_id: str
    topic: TopicState
    consumer: str
    limits: PopLimits

    @classmethod
    def parse(cls, body: Body, broker: Broker, client_id: str | None, bound: int = MAX_MESSAGES) -> PopRequest:
        group_id = name(body, "group_id")
        topic_name = text(body, "topic")
        limits = PopLimits(integer(body, "max_messages", 1, MAX_MESSAGES),
                           integer(body, "invisible_time_ms", 0, DEFAULT_INVISIBLE_TIME_MS),
                           integer(body, "long_poll_ms", 0, 0), flag(body, "orderly"), bound)
        consumer = name(body, "consumer", (client_id or "-")[:MAX_NAME_LENGTH])
        topic = broker.topic(topic_name)
        if topic is None:
            raise UnknownTopic(f"topic {topic_name!r} does not exist")
        return cls(group_id, topic, consumer, limits)


def refused(error: DomainError) -> Body:
    """The answer to a refused receipt handle: its Kafka code and message, and ``handle_error`` (``invalid``,
    ``foreign``, ``unknown`` or ``stale``) so a client tells a stale handle from an unknown one."""
    return {"error_code": int(error_code_for(error)), "error_message": str(error),
            "handle_error": getattr(error, "KIND", "")}


def handle_list(body: Body, field: str) -> list[object]:
    """A list of 1 to `MAX_HANDLES` receipt handles (each checked when it is resolved)."""
    handles = body.get(field)
    if not isinstance(handles, list) or not 1 <= len(handles) <= MAX_HANDLES:
        raise InvalidRequest(f"field {field!r} must be a list of 1 to {MAX_HANDLES} receipt handles")
    return handles


def ack_results(results: list[DomainError | None]) -> list[Body]:
    """Each handle's outcome in request order: error code 0 for settled, else its refusal."""
    return [refused(error) if error is not None else {"error_code": 0, "error_message": None, "handle_error": None}
            for error in results]


def message(popped: PoppedRecord) -> Body:
    record = popped.record
    return {"partition": popped.partition, "offset": record.offset, "timestamp": record.timestamp,
            "key": record.key, "value": record.value, "headers": [[k, v] for k, v in record.headers],
            "handle": popped.handle, "reconsume_times": popped.reconsume_times,
            "invisible_until_ms": popped.invisible_until_ms}


def versioned(api_key: int, api_name: str, handlers: Sequence[ExtensionHandler], access: Access | None = None) -> None:
    """Register ``handlers[v]`` for version ``v`` of ``api_key`` (the extension registrar serves v0 only);
    failures are answered as every extension key answers them, ``access`` checked as `extension` does."""
    register_extension(HandlerEntry(api_key, api_name, 0, len(handlers) - 1, wrapped(handlers, access),
                                    error_answer=answer, authorize=None if access is None else checked_by_handler))


MAX_ACK_ENTRIES = MAX_HANDLES
"""(partition, epoch) entries one compact ack may carry."""
MAX_ACK_OFFSETS = 32_768
"""Offsets one compact ack may settle in all (32 full compact pops): bounds the work one request asks for."""


def _integer_of(value: Any, what: str, minimum: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value < 2 ** 63:
        raise InvalidRequest(f"{what} must be an integer of at least {minimum}, got {value!r}")
    return value


def ack_ranges(body: Body, field: str) -> list[AckRanges]:
    """The compact acks of ``field``: 1 to `MAX_ACK_ENTRIES` maps ``{topic_id, partition, epoch, ranges}``,
    ranges inclusive, ascending and disjoint, at most `MAX_ACK_OFFSETS` offsets in all (checked before any
    offset is looked at)."""
    entries = body.get(field)
    if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_ACK_ENTRIES:
        raise InvalidRequest(f"field {field!r} must be a list of 1 to {MAX_ACK_ENTRIES} acknowledgements")
    parsed: list[AckRanges] = []
    total = 0
    for entry in entries:
        if not isinstance(entry, dict):
            raise InvalidRequest(f"each of {field!r} must be a map {{topic_id, partition, epoch, ranges}}")
        topic_id = entry.get("topic_id")
        if not isinstance(topic_id, bytes) or len(topic_id) != 16:
            raise InvalidRequest(f"topic_id in {field!r} must be 16 bytes, got {topic_id!r}")
        pairs = entry.get("ranges")
        if not isinstance(pairs, list) or not 1 <= len(pairs) <= MAX_ACK_OFFSETS:
            raise InvalidRequest(f"ranges in {field!r} must be a list of 1 to {MAX_ACK_OFFSETS} [first, last] pairs")
        ranges: list[tuple[int, int]] = []
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2:
                raise InvalidRequest(f"{pair!r} in {field!r} is not an inclusive [first, last] offset range")
            first, last = _integer_of(pair[0], "a range's first offset"), _integer_of(pair[1], "a range's last offset")
            if last < first or (ranges and first <= ranges[-1][1]):
                raise InvalidRequest(f"{pair!r} in {field!r}: ranges must be [first, last] with first <= last, "
                                     "ascending and disjoint")
            total += last - first + 1
            if total > MAX_ACK_OFFSETS:
                raise InvalidRequest(f"field {field!r} names more than {MAX_ACK_OFFSETS} offsets")
            ranges.append((first, last))
        parsed.append(AckRanges(topic_id, _integer_of(entry.get("partition"), "partition"),
                                _integer_of(entry.get("epoch"), "epoch", 1), tuple(ranges)))
    return parsed


def ack_range_results(refusals: list[list[tuple[int, DomainError]]]) -> list[Body]:
    """Each compact ack's outcome in request order: the refused offsets (``[offset, error_code, handle_error,
    error_message]``); every other offset of its ranges was settled."""
    return [{"refused": [[offset, int(error_code_for(error)), getattr(error, "KIND", ""), str(error)]
                         for offset, error in refused]} for refused in refusals]


def _ranges(offsets: Sequence[int]) -> list[list[int]]:
    """Sorted offsets as inclusive ``[first, last]`` runs (one run, the usual pop of fresh records, without a
    look at each offset: they are distinct and ascending)."""
    if offsets and offsets[-1] - offsets[0] + 1 == len(offsets):
        return [[offsets[0], offsets[-1]]]
    runs: list[list[int]] = []
    for offset in offsets:
        if runs and runs[-1][1] == offset - 1:
            runs[-1][1] = offset
        else:
            runs.append([offset, offset])
    return runs


MAX_HELD = 64
"""Batches one pop may say its client holds."""
HeldBatches = frozenset[tuple[int, int, int]]


def held_batches(body: Body, topic: TopicState) -> HeldBatches:
    """The optional ``held`` map ``{topic_id, batches: [[partition, base offset, CRC], ...]}`` (at most
    `MAX_HELD`): batches of the popped topic the client keeps decompressed; none if it names another topic id."""
    held = body.get("held")
    if held is None:
        return frozenset()
    batches = held.get("batches") if isinstance(held, dict) else None
    if not isinstance(batches, list) or len(batches) > MAX_HELD:
        raise InvalidRequest(f"field 'held' must be a map {{topic_id, batches}} of at most {MAX_HELD} batches")
    topic_id = held.get("topic_id")
    if not isinstance(topic_id, bytes) or len(topic_id) != 16:
        raise InvalidRequest(f"topic_id in 'held' must be 16 bytes, got {topic_id!r}")
    keys: set[tuple[int, int, int]] = set()
    for entry in batches:
        if not isinstance(entry, list) or len(entry) != 3:
            raise InvalidRequest(f"{entry!r} in 'held' is not [partition, base offset, CRC]")
        keys.add((_integer_of(entry[0], "a held batch's partition"), _integer_of(entry[1], "a held base offset"),
                  _integer_of(entry[2], "a held batch's CRC")))
    return frozenset(keys) if topic_id == bytes(topic.topic_id) else frozenset()


def partition_answer(popped: PoppedPartition, held: HeldBatches = frozenset(), slicer: BatchSlicer | None = None,
                     topic_id: bytes = b"") -> Body:
    """One partition's checkpoint and its batches: ``[base offset, CRC]`` under ``held`` for those the client
    holds (read from the batch header's fixed fields, nothing decoded), the others cut by ``slicer`` to the
    records from the first to the last handed out of each (`BatchSlicer.cut`), or as stored without one."""
    sent: list[bytes] = []
    kept: list[list[int]] = []
    offsets = popped.offsets
    for batch in popped.batches:
        base, crc = int.from_bytes(batch[0:8], "big", signed=True), int.from_bytes(batch[17:21], "big")
        if (popped.partition, base, crc) in held:
            kept.append([base, crc])
            continue
        first = bisect_left(offsets, base)
        last = bisect_right(offsets, base + int.from_bytes(batch[23:27], "big", signed=True)) - 1
        if slicer is not None and first <= last:
            batch = slicer.cut((topic_id, popped.partition), batch, offsets[first], offsets[last])
        sent.append(batch)
    answer_body: Body = {"partition": popped.partition, "epoch": popped.epoch, "ranges": _ranges(popped.offsets),
                         "invisible_until_ms": popped.invisible_until_ms,
                         "reconsumed": [list(r) for r in popped.reconsumed], "batches": sent}
    if kept:
        answer_body["held"] = kept
    return answer_body


async def handle(context: RequestContext, body: Body) -> Body:
    request = PopRequest.parse(body, context.broker, context.client_id)
    coordinator = pop_coordinator(context.broker)
    acked = (coordinator.ack_many(request.group_id, request.consumer, handle_list(body, "ack_handles"))
             if "ack_handles" in body else None)
    popped = await coordinator.pop(request.group_id, request.topic, request.consumer, request.limits)
    answer: Body = {"messages": [message(record) for record in popped]}
    if acked is not None:
        answer["ack_results"] = ack_results(acked)
    return answer


async def handle_v1(context: RequestContext, body: Body) -> Body:
    """The compact form: batches by reference, a checkpoint per partition, acks as offset ranges."""
    request = PopRequest.parse(body, context.broker, context.client_id, MAX_MESSAGES_COMPACT)
    coordinator = pop_coordinator(context.broker)
    held = held_batches(body, request.topic)
    acked = (coordinator.ack_ranges(request.group_id, request.consumer, ack_ranges(body, "acks"))
             if "acks" in body else None)
    popped = await coordinator.pop_batches(request.group_id, request.topic, request.consumer, request.limits)
    topic_id = bytes(request.topic.topic_id)
    answer_body: Body = {"topic_id": topic_id,
                         "partitions": [partition_answer(partition, held, coordinator.slicer, topic_id)
                                        for partition in popped]}
    if acked is not None:
        answer_body["ack_results"] = ack_range_results(acked)
    return answer_body


versioned(API_KEY, "LogwrightPop", (handle, handle_v1), popping)
