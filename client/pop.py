"""Pop consumption from the bundled client (RocketMQ 5's SimpleConsumer): pop, ack, change invisible time, nack.

    popped = await client.pop("orders", "billing", max_messages=16, invisible_time_ms=30_000, long_poll_ms=5_000)
    for message in popped:
        await client.ack(message)                       # or nack(message), change_invisible_time(message, ms)

No subscription and no rebalance: any number of clients pop the same topic, the broker hands each record to
one of them at a time and takes it back when its invisible time runs out. Every call is durable on return.
A superseded handle raises `StaleReceiptHandle` (the record is still in flight under its newer handle),
a settled or never-popped one `UnknownReceiptHandle`, one of another group `ForeignReceiptHandle`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import msgpack
from logwright.client.connection import BrokerError, ClientError, Connection

POP_KEY, ACK_KEY, CHANGE_KEY, NACK_KEY, INSPECT_KEY = 32009, 32010, 32011, 32012, 32013
LONG_POLL_MARGIN_S = 10.0
"""Time the client waits beyond a long poll for the answer itself."""


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


async def call(connection: Connection, api_key: int, body: dict[str, Any], what: str,
               timeout_s: float = 60.0) -> dict[str, Any]:
    """One pop extension request; a refused handle raises its `ReceiptHandleError`, any other error `BrokerError`."""
    answer = msgpack.unpackb(await connection.raw(api_key, msgpack.packb(body, use_bin_type=True), timeout_s),
                             raw=False)
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
    if acked:
        if any(message.group != group for message in acked):
            raise ValueError(f"pop_with_acks acknowledges messages of group {group!r} only")
        body["ack_handles"] = [message.handle for message in acked]
    answer = await call(connection, POP_KEY, body, "pop", long_poll_ms / 1000 + LONG_POLL_MARGIN_S)
    popped = [PoppedMessage(topic, group, int(m["partition"]), int(m["offset"]), int(m["timestamp"]), m["key"],
                            m["value"], tuple((str(k), v) for k, v in m["headers"]), str(m["handle"]),
                            int(m["reconsume_times"]), int(m["invisible_until_ms"])) for m in answer["messages"]]
    return popped, _refusals(answer.get("ack_results", []), "ack")


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
