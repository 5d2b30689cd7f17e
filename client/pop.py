"""Pop consumption from the bundled client (RocketMQ 5's SimpleConsumer): pop, ack, change invisible time, nack.

    popped = await client.pop("orders", "billing", max_messages=16, invisible_time_ms=30_000, long_poll_ms=5_000)
    for message in popped:
        await client.ack(message)                       # or nack(message), change_invisible_time(message, ms)

No subscription and no rebalance: any number of clients pop the same topic, the broker hands each record to
one of them at a time and takes it back when its invisible time runs out. Every call is durable on return.
A superseded handle raises `StaleReceiptHandle` (the record is still in flight under its newer handle),
a settled or never-popped one `UnknownReceiptHandle`, one of another group `ForeignReceiptHandle`.

Against a broker that advertises version 1 of LogwrightPop and LogwrightPopAck (ApiVersions, asked once per
connection) pops and batch acks use the compact form: the answer carries the stored record batches, decoded
here with the Fetch code, and a checkpoint per partition from which the receipt handles are built here;
acknowledgements travel as (partition, epoch, offset ranges). A pop may then ask for up to 1024 messages.
Otherwise version 0: a map and a handle per record, up to 32.
"""

from __future__ import annotations

import weakref
from bisect import bisect_right, insort
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import msgpack
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from logwright.client.connection import BrokerError, ClientError, Connection
from logwright.compat.wire.compression import decompress
from logwright.compat.wire.record_batch import HEADER_SIZE, TimestampType, parse_header
from logwright.compat.wire.records import Record, parse_records
from logwright.compat.wire.varints import read_varint

POP_KEY, ACK_KEY, CHANGE_KEY, NACK_KEY, INSPECT_KEY = 32009, 32010, 32011, 32012, 32013
LONG_POLL_MARGIN_S = 10.0
"""Time the client waits beyond a long poll for the answer itself."""
MAX_MESSAGES_V0, MAX_MESSAGES_V1 = 32, 1_024
"""The most one pop may ask for in each version (RocketMQ's 32; the compact form's 1024)."""
_VERSIONS: weakref.WeakKeyDictionary[Connection, int] = weakref.WeakKeyDictionary()
"""The pop version each connection's broker serves (1: compact pops and acks, 0 otherwise)."""
KEPT_BATCHES = 16
"""Stored batches kept decompressed (for every connection of the process), with where reads stopped in them: a
stored batch often holds thousands of records, and a compact pop sends the whole batch for the 1024 or fewer
it hands out, so the next pop of any connection starts reading near its first record, not at the batch's."""
KEPT_MARKS = 256
"""Places to resume reading kept per batch."""


class ReceiptHandleError(BrokerError):
    """The broker refused a receipt handle; ``kind`` says why (``stale``, ``unknown``, ``foreign``, ``invalid``)."""

    kind = ""


class StaleReceiptHandle(ReceiptHandleError):
    kind = "stale"


class UnknownReceiptHandle(ReceiptHandleError):
    kind = "unknown"


class ForeignReceiptHandle(ReceiptHandleError):
    kind = "foreign"


class InvalidReceiptHandle(ReceiptHandleError):
    kind = "invalid"


_HANDLE_ERRORS: dict[str, type[ReceiptHandleError]] = {
    cls.kind: cls for cls in (StaleReceiptHandle, UnknownReceiptHandle, ForeignReceiptHandle, InvalidReceiptHandle)}


@dataclass(frozen=True, slots=True)
class PoppedMessage:
    """One popped record: where it is, what it holds, and the handle that settles it."""

    topic: str
    group: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    handle: str
    reconsume_times: int
    invisible_until_ms: int


async def pop_version(connection: Connection) -> int:
    """1 if the broker serves version 1 of both LogwrightPop and LogwrightPopAck (ApiVersions, asked once per
    connection), else 0."""
    version = _VERSIONS.get(connection)
    if version is None:
        response = await connection.request(ApiVersionsRequest(client_software_name="logwright-client",
                                                               client_software_version="1"))
        served = {int(key.api_key): int(key.max_version) for key in response.api_keys}
        version = 1 if served.get(POP_KEY, 0) >= 1 and served.get(ACK_KEY, 0) >= 1 else 0
        _VERSIONS[connection] = version
    return version


def pin_version(connection: Connection, version: int) -> None:
    """Use pop ``version`` (0 or 1) on ``connection`` without asking the broker (tests of version 0 against a
    broker that serves both)."""
    if version not in (0, 1):
        raise ValueError(f"pop versions are 0 and 1, not {version}")
    _VERSIONS[connection] = version


async def call(connection: Connection, api_key: int, body: dict[str, Any], what: str,
               timeout_s: float = 60.0, version: int = 0) -> dict[str, Any]:
    """One pop extension request; a refused handle raises its `ReceiptHandleError`, any other error `BrokerError`."""
    answer = msgpack.unpackb(await connection.raw(api_key, msgpack.packb(body, use_bin_type=True), timeout_s,
                                                  version), raw=False)
    if not isinstance(answer, dict):
        raise ClientError(f"{what}: the broker answered {answer!r}, not a map")
    code = int(answer.get("error_code", 0))
    if code:
        error = _HANDLE_ERRORS.get(str(answer.get("handle_error") or ""), BrokerError)
        raise error(code, answer.get("error_message"), what)
    return answer


async def pop(connection: Connection, topic: str, group: str, max_messages: int = 32,
              invisible_time_ms: int = 60_000, long_poll_ms: int = 0, orderly: bool = False) -> list[PoppedMessage]:
    return (await pop_with_acks(connection, topic, group, (), max_messages, invisible_time_ms, long_poll_ms,
                                orderly))[0]


async def pop_with_acks(connection: Connection, topic: str, group: str, acked: Sequence[PoppedMessage],
                        max_messages: int = 32, invisible_time_ms: int = 60_000, long_poll_ms: int = 0,
                        orderly: bool = False) -> tuple[list[PoppedMessage], list[ReceiptHandleError | None]]:
    """Acknowledge ``acked`` (messages of ``group``) and pop, in one request: the popped messages and each ack's
    refusal in order (``None``: settled)."""
    body: dict[str, Any] = {"group_id": group, "topic": topic, "max_messages": max_messages,
                            "invisible_time_ms": invisible_time_ms, "long_poll_ms": long_poll_ms, "orderly": orderly}
    if acked and any(message.group != group for message in acked):
        raise ValueError(f"pop_with_acks acknowledges messages of group {group!r} only")
    timeout_s = long_poll_ms / 1000 + LONG_POLL_MARGIN_S
    compact = _compact_acks(acked)
    if await pop_version(connection) >= 1 and compact is not None:
        if acked:
            body["acks"] = compact[0]
        answer = await call(connection, POP_KEY, body, "pop", timeout_s, version=1)
        return (_unpacked(topic, group, answer),
                _range_refusals(answer.get("ack_results", []), compact[1], len(acked), "ack"))
    if acked:
        body["ack_handles"] = [message.handle for message in acked]
    answer = await call(connection, POP_KEY, body, "pop", timeout_s)
    popped = [PoppedMessage(topic, group, int(m["partition"]), int(m["offset"]), int(m["timestamp"]), m["key"],
                            m["value"], tuple((str(k), v) for k, v in m["headers"]), str(m["handle"]),
                            int(m["reconsume_times"]), int(m["invisible_until_ms"])) for m in answer["messages"]]
    return popped, _refusals(answer.get("ack_results", []), "ack")


@dataclass(slots=True)
class _Batch:
    """One stored batch's records, decompressed, and places to resume reading: ``(offset, position)`` of the
    records after the reads so far (records are in offset order, so a read starts at the last mark before it)."""

    data: bytes
    base_offset: int
    last_offset: int
    base_timestamp: int
    append_time: int | None
    dense: bool
    """Offsets base, base + 1, ... with no gap: a record's offset is known without reading its fields."""
    marks: list[tuple[int, int]] = field(default_factory=list)

    def records(self, first: int, last: int) -> list[Record]:
        """The records with offsets ``first..last``, decoding none outside them."""
        if last < self.base_offset or first > self.last_offset:
            return []
        data = self.data
        at = bisect_right(self.marks, (first, len(data)))
        offset, position = self.marks[at - 1] if at else (self.base_offset, 0)
        start = end = -1
        count = 0
        while position < len(data):
            length, body = read_varint(data, position)
            if not self.dense:
                _, at = read_varint(data, body + 1)  # after the attributes: the timestamp delta, then the offset's
                offset = self.base_offset + read_varint(data, at)[0]
            if offset > last:
                break
            if offset >= first:
                if start < 0:
                    start = position
                count += 1
            position = body + length
            offset += 1
        end = position
        if position < len(data) and len(self.marks) < KEPT_MARKS:
            insort(self.marks, (offset, position))
        return [] if start < 0 else parse_records(data[start:end], self.base_offset, self.base_timestamp,
                                                  self.append_time, count)


_BATCHES: OrderedDict[tuple[str, int, int, int], _Batch] = OrderedDict()
"""(topic id, partition, base offset, CRC) → the batch: what identifies a stored batch for every connection."""


def _batch(topic_hex: str, partition: int, raw: bytes) -> _Batch | None:
    """The stored batch ``raw`` (``None`` for a control batch), from the cache if it came before."""
    header = parse_header(raw)
    if header.is_control:
        return None
    kept = _BATCHES
    key = (topic_hex, partition, header.base_offset, header.crc)
    found = kept.get(key)
    if found is None:
        if len(raw) < header.size:
            raise ClientError(f"pop: a batch announces {header.size} bytes, only {len(raw)} came")
        append_time = header.max_timestamp if header.timestamp_type is TimestampType.LOG_APPEND_TIME else None
        found = _Batch(decompress(header.compression, memoryview(raw)[HEADER_SIZE:header.size]), header.base_offset,
                       header.last_offset, header.base_timestamp, append_time,
                       header.record_count == header.last_offset_delta + 1)
        kept[key] = found
        while len(kept) > KEPT_BATCHES:
            kept.popitem(last=False)
    else:
        kept.move_to_end(key)
    return found


def _unpacked(topic: str, group: str, answer: dict[str, Any]) -> list[PoppedMessage]:
    """The messages of a compact (v1) pop answer: the records of each partition's checkpoint read from its
    batches, each with the receipt handle its (partition, offset, epoch) names."""
    topic_hex = bytes(answer["topic_id"]).hex()
    popped: list[PoppedMessage] = []
    for part in answer["partitions"]:
        partition, epoch, until = int(part["partition"]), int(part["epoch"]), int(part["invisible_until_ms"])
        reconsumed = {int(offset): int(times) for offset, times in part["reconsumed"]}
        ranges = [(int(first), int(last)) for first, last in part["ranges"]]
        records: dict[int, Record] = {}
        for raw in part["batches"]:
            batch = _batch(topic_hex, partition, raw)
            if batch is not None:
                for first, last in ranges:
                    records.update((record.offset, record) for record in batch.records(first, last))
        for first, last in ranges:
            for offset in range(int(first), int(last) + 1):
                record = records.get(offset)
                if record is None:
                    raise ClientError(f"pop: offset {offset} of partition {partition} is in the checkpoint but in "
                                      "none of the batches the broker sent")
                popped.append(PoppedMessage(topic, group, partition, offset, record.timestamp, record.key,
                                            record.value, record.headers, f"1 {epoch} {partition} {offset} "
                                            f"{topic_hex} {group}", reconsumed.get(offset, 0), until))
    return popped


def _compact_acks(messages: Sequence[PoppedMessage]
                  ) -> tuple[list[dict[str, Any]], list[dict[int, list[int]]]] | None:
    """``messages`` as compact acks (one per topic, partition and handle epoch, offsets as ranges) and, per
    ack, each offset's positions in ``messages``; ``None`` if a handle is not in the text form this reads."""
    grouped: dict[tuple[str, int, int], dict[int, list[int]]] = {}
    for position, message in enumerate(messages):
        fields = message.handle.split(" ", 5)
        if len(fields) != 6 or fields[0] != "1" or not fields[1].isdigit() or len(fields[4]) != 32:
            return None
        grouped.setdefault((fields[4], message.partition, int(fields[1])), {}).setdefault(
            message.offset, []).append(position)
    entries: list[dict[str, Any]] = []
    for (topic_hex, partition, epoch), offsets in grouped.items():
        ranges: list[list[int]] = []
        for offset in sorted(offsets):
            if ranges and ranges[-1][1] == offset - 1:
                ranges[-1][1] = offset
            else:
                ranges.append([offset, offset])
        entries.append({"topic_id": bytes.fromhex(topic_hex), "partition": partition, "epoch": epoch,
                        "ranges": ranges})
    return entries, list(grouped.values())


def _range_refusals(results: list[dict[str, Any]], positions: list[dict[int, list[int]]], count: int,
                    what: str) -> list[ReceiptHandleError | None]:
    """Each acknowledged message's refusal in order (``None``: settled) from the compact acks' results."""
    refusals: list[ReceiptHandleError | None] = [None] * count
    for result, where in zip(results, positions, strict=True):
        for offset, code, kind, message in result["refused"]:
            for position in where.get(int(offset), ()):
                refusals[position] = _HANDLE_ERRORS.get(str(kind or ""), InvalidReceiptHandle)(int(code), message, what)
    return refusals


def _refusals(results: list[dict[str, Any]], what: str) -> list[ReceiptHandleError | None]:
    return [None if not result["error_code"] else _HANDLE_ERRORS.get(str(result.get("handle_error") or ""),
                                                                     InvalidReceiptHandle)(
        int(result["error_code"]), result.get("error_message"), what) for result in results]


def _target(message: PoppedMessage | str, group: str | None) -> tuple[str, str]:
    if isinstance(message, PoppedMessage):
        return message.group if group is None else group, message.handle
    if group is None:
        raise ValueError("a receipt handle given as text needs its group")
    return group, message


async def ack(connection: Connection, message: PoppedMessage | str, group: str | None = None) -> None:
    group_id, handle = _target(message, group)
    await call(connection, ACK_KEY, {"group_id": group_id, "handle": handle}, "ack")


async def ack_all(connection: Connection, messages: Sequence[PoppedMessage]) -> list[ReceiptHandleError | None]:
    """Settle many popped messages of one group in one request (one event per partition); each refused handle's
    error in order, ``None`` for those settled."""
    if not messages:
        return []
    group = messages[0].group
    if any(message.group != group for message in messages):
        raise ValueError("ack_all takes messages of one group")
    compact = _compact_acks(messages)
    if compact is not None and await pop_version(connection) >= 1:
        answer = await call(connection, ACK_KEY, {"group_id": group, "acks": compact[0]}, "ack", version=1)
        return _range_refusals(answer["results"], compact[1], len(messages), "ack")
    answer = await call(connection, ACK_KEY, {"group_id": group, "handles": [m.handle for m in messages]}, "ack")
    return _refusals(answer["results"], "ack")


async def change_invisible_time(connection: Connection, message: PoppedMessage | str, invisible_time_ms: int,
                                group: str | None = None) -> PoppedMessage | str:
    """The message with its new handle and deadline (or the new handle, given a handle); the old one is stale."""
    group_id, handle = _target(message, group)
    answer = await call(connection, CHANGE_KEY, {"group_id": group_id, "handle": handle,
                                                 "invisible_time_ms": invisible_time_ms}, "change invisible time")
    if isinstance(message, PoppedMessage):
        return replace(message, handle=str(answer["handle"]), invisible_until_ms=int(answer["invisible_until_ms"]))
    return str(answer["handle"])


async def nack(connection: Connection, message: PoppedMessage | str, delay_ms: int | None = None,
               group: str | None = None) -> bool:
    """Give the record back as failed (after ``delay_ms``, default the group's retry table); whether it went to
    the dead-letter topic instead (past the group's max reconsume times)."""
    group_id, handle = _target(message, group)
    body: dict[str, Any] = {"group_id": group_id, "handle": handle}
    if delay_ms is not None:
        body["delay_ms"] = delay_ms
    return bool((await call(connection, NACK_KEY, body, "nack"))["dead_lettered"])


async def inspect(connection: Connection, topic: str, group: str) -> dict[str, Any]:
    """The group's pop state on ``topic`` (LogwrightPopInspect): retry and dead-letter topic names, partitions."""
    return await call(connection, INSPECT_KEY, {"group_id": group, "topic": topic}, "inspect pop")
