"""Pop consumption from the bundled client (RocketMQ 5's SimpleConsumer): pop, ack, change invisible time, nack.

    popped = await client.pop("orders", "billing", max_messages=16, invisible_time_ms=30_000, long_poll_ms=5_000)
    for message in popped:
        await client.ack(message)                       # or nack(message), change_invisible_time(message, ms)

No subscription and no rebalance: any number of clients pop the same topic, the broker hands each record to
one of them at a time and takes it back when its invisible time runs out. Every call is durable on return.
A superseded handle raises `StaleReceiptHandle` (the record is still in flight under its newer handle),
a settled or never-popped one `UnknownReceiptHandle`, one of another group `ForeignReceiptHandle`.

Against a broker that advertises version 1 of LogwrightPop and LogwrightPopAck (ApiVersions, asked once per
connection) pops and batch acks use the compact form: the answer carries the stored record batches (or, for
those this process already holds, a reference) and a checkpoint per partition; the records are read from the
batch bytes only as far as the caller reads them, the receipt handles built only when asked
(`logwright.client.popped`); acknowledgements travel as (partition, epoch, offset ranges), those of a whole
pop as its checkpoints' ranges. A pop may then ask for up to 1024 messages. Otherwise version 0: a map and a
handle per record, up to 32.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import msgpack
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from logwright.client.connection import BrokerError, ClientError, Connection
from logwright.client.popped import PoppedMessage, PoppedMessages, held_batches, unpacked

__all__ = ["PoppedMessage", "PoppedMessages", "ReceiptHandleError", "StaleReceiptHandle", "UnknownReceiptHandle",
           "ForeignReceiptHandle", "InvalidReceiptHandle", "pop", "pop_with_acks", "ack", "ack_all",
           "change_invisible_time", "nack", "inspect", "pop_version", "pin_version"]

POP_KEY, ACK_KEY, CHANGE_KEY, NACK_KEY, INSPECT_KEY = 32009, 32010, 32011, 32012, 32013
RESET_KEY = 32014
LONG_POLL_MARGIN_S = 10.0
"""Time the client waits beyond a long poll for the answer itself."""
MAX_MESSAGES_V0, MAX_MESSAGES_V1 = 32, 1_024
"""The most one pop may ask for in each version (RocketMQ's 32; the compact form's 1024)."""
_VERSIONS: weakref.WeakKeyDictionary[Connection, int] = weakref.WeakKeyDictionary()
"""The pop version each connection's broker serves (1: compact pops and acks, 0 otherwise)."""
_TOPIC_IDS: weakref.WeakKeyDictionary[Connection, dict[str, str]] = weakref.WeakKeyDictionary()
"""Per connection, topic name → topic id (hex) from its last compact pop: which kept batches a pop may name."""
MAX_HELD = 64
"""Kept batches one pop may name (the broker's bound)."""
Locate = Callable[[int, int], list[int]]
"""(compact ack number, offset) → the positions of that offset among the acknowledged messages."""


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
              invisible_time_ms: int = 60_000, long_poll_ms: int = 0, orderly: bool = False) -> PoppedMessages:
    return (await pop_with_acks(connection, topic, group, (), max_messages, invisible_time_ms, long_poll_ms,
                                orderly))[0]


async def pop_with_acks(connection: Connection, topic: str, group: str, acked: Sequence[PoppedMessage],
                        max_messages: int = 32, invisible_time_ms: int = 60_000, long_poll_ms: int = 0,
                        orderly: bool = False) -> tuple[PoppedMessages, list[ReceiptHandleError | None]]:
    """Acknowledge ``acked`` (messages of ``group``) and pop, in one request: the popped messages and each ack's
    refusal in order (``None``: settled)."""
    body: dict[str, Any] = {"group_id": group, "topic": topic, "max_messages": max_messages,
                            "invisible_time_ms": invisible_time_ms, "long_poll_ms": long_poll_ms, "orderly": orderly}
    if _groups(acked) - {group}:
        raise ValueError(f"pop_with_acks acknowledges messages of group {group!r} only")
    timeout_s = long_poll_ms / 1000 + LONG_POLL_MARGIN_S
    compact = _compact_acks(acked)
    if await pop_version(connection) >= 1 and compact is not None:
        if acked:
            body["acks"] = compact[0]
        known = _TOPIC_IDS.setdefault(connection, {})
        held = held_batches(known[topic]) if topic in known else {}
        if held:
            body["held"] = {"topic_id": bytes.fromhex(known[topic]),
                            "batches": [list(key) for key in list(held)[-MAX_HELD:]]}
        answer = await call(connection, POP_KEY, body, "pop", timeout_s, version=1)
        known[topic] = bytes(answer["topic_id"]).hex()
        return (unpacked(topic, group, answer, held),
                _range_refusals(answer.get("ack_results", []), len(compact[0]), compact[1], len(acked), "ack")
                if acked else [])
    if acked:
        body["ack_handles"] = [message.handle for message in acked]
    answer = await call(connection, POP_KEY, body, "pop", timeout_s)
    popped = PoppedMessages(listed=[
        PoppedMessage(topic, group, int(m["partition"]), int(m["offset"]), int(m["timestamp"]), m["key"], m["value"],
                      tuple((str(k), v) for k, v in m["headers"]), str(m["handle"]), int(m["reconsume_times"]),
                      int(m["invisible_until_ms"])) for m in answer["messages"]])
    return popped, _refusals(answer.get("ack_results", []), "ack")


def _groups(messages: Sequence[PoppedMessage]) -> set[str]:
    """The groups of ``messages`` (of a whole compact pop: from its checkpoints)."""
    if isinstance(messages, PoppedMessages) and messages.compact():
        return {checkpoint.group for checkpoint in messages.checkpoints}
    return {message.group for message in messages}


def _compact_acks(messages: Sequence[PoppedMessage]) -> tuple[list[dict[str, Any]], Locate] | None:
    """``messages`` as compact acks (one per topic, partition and handle epoch, offsets as ranges) and where each
    acknowledged offset is in ``messages``; ``None`` if a handle is not in the text form this reads. A whole
    `PoppedMessages` sends its checkpoints' ranges as they came, with no work per record."""
    if isinstance(messages, PoppedMessages) and messages.compact():
        entries = [{"topic_id": bytes.fromhex(checkpoint.topic_hex), "partition": checkpoint.partition,
                    "epoch": checkpoint.epoch, "ranges": [list(pair) for pair in checkpoint.ranges]}
                   for checkpoint in messages.checkpoints]

        def located(entry: int, offset: int) -> list[int]:
            position = messages.position(entry, offset)
            return [] if position is None else [position]

        return entries, located
    grouped: dict[tuple[str, int, int], dict[int, list[int]]] = {}
    for position, message in enumerate(messages):
        key = message.ack_key()
        if key is None:
            return None
        grouped.setdefault(key, {}).setdefault(message.offset, []).append(position)
    entries = []
    for (topic_hex, partition, epoch), offsets in grouped.items():
        ranges: list[list[int]] = []
        for offset in sorted(offsets):
            if ranges and ranges[-1][1] == offset - 1:
                ranges[-1][1] = offset
            else:
                ranges.append([offset, offset])
        entries.append({"topic_id": bytes.fromhex(topic_hex), "partition": partition, "epoch": epoch,
                        "ranges": ranges})
    positions = list(grouped.values())
    return entries, lambda entry, offset: positions[entry].get(offset, [])


def _range_refusals(results: list[dict[str, Any]], entries: int, locate: Locate, count: int,
                    what: str) -> list[ReceiptHandleError | None]:
    """Each acknowledged message's refusal in order (``None``: settled) from the compact acks' results."""
    refusals: list[ReceiptHandleError | None] = [None] * count
    if len(results) != entries:
        raise ClientError(f"{what}: {len(results)} results for {entries} acknowledgements")
    for entry, result in enumerate(results):
        for offset, code, kind, message in result["refused"]:
            for position in locate(entry, int(offset)):
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
    groups = _groups(messages)
    if len(groups) != 1:
        raise ValueError("ack_all takes messages of one group")
    group = groups.pop()
    compact = _compact_acks(messages)
    if compact is not None and await pop_version(connection) >= 1:
        answer = await call(connection, ACK_KEY, {"group_id": group, "acks": compact[0]}, "ack", version=1)
        return _range_refusals(answer["results"], len(compact[0]), compact[1], len(messages), "ack")
    answer = await call(connection, ACK_KEY, {"group_id": group, "handles": [m.handle for m in messages]}, "ack")
    return _refusals(answer["results"], "ack")


async def change_invisible_time(connection: Connection, message: PoppedMessage | str, invisible_time_ms: int,
                                group: str | None = None) -> PoppedMessage | str:
    """The message with its new handle and deadline (or the new handle, given a handle); the old one is stale."""
    group_id, handle = _target(message, group)
    answer = await call(connection, CHANGE_KEY, {"group_id": group_id, "handle": handle,
                                                 "invisible_time_ms": invisible_time_ms}, "change invisible time")
    if isinstance(message, PoppedMessage):
        return message.with_handle(str(answer["handle"]), int(answer["invisible_until_ms"]))
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


async def reset(connection: Connection, topic: str, group: str, to: str, value: int | None = None,
                partitions: Sequence[int] | None = None) -> dict[int, int]:
    """Reset the group's pop position (LogwrightPopReset, F41): ``to`` is ``earliest``, ``latest``, ``offset`` or
    ``timestamp`` (``value``: the offset, or ms); on ``partitions`` (indexes; all by default). What the group had
    in flight there is dropped. The new position of each partition."""
    body: dict[str, Any] = {"group_id": group, "topic": topic, "to": to}
    if value is not None:
        body["value"] = value
    if partitions is not None:
        body["partitions"] = list(partitions)
    answer = await call(connection, RESET_KEY, body, "reset pop")
    return {int(entry["partition"]): int(entry["offset"]) for entry in answer["partitions"]}


async def inspect(connection: Connection, topic: str, group: str) -> dict[str, Any]:
    """The group's pop state on ``topic`` (LogwrightPopInspect): retry and dead-letter topic names, partitions."""
    return await call(connection, INSPECT_KEY, {"group_id": group, "topic": topic}, "inspect pop")
