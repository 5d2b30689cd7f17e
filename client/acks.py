"""The bundled client's grouped acknowledgements: many `Consumer.acknowledge` calls, one request.

Pulsar groups acknowledgements on the client (``acknowledgementsGroupTime`` 100 ms,
``maxAcknowledgmentGroupSize`` 1000) and so does this client: `AckGroup` collects acknowledged offsets
and sends them in one LogwrightAcknowledgeBatch (key 32004) when ``group_size`` are pending, when the
oldest has waited ``group_time_ms``, on `AckGroup.flush` and before the consumer closes or acknowledges
cumulatively. Each partition's offsets go as merged ranges in one entry, so the broker writes one
``RecordsAcked`` event per partition and flush. A partition whose entry is refused (one offset the
consumer no longer holds makes the whole entry INVALID_RECORD_STATE) is sent again one offset per entry,
so only the offsets really refused fail (this error path costs an event per offset on the broker).

Every acknowledgement returns an `AckReceipt`. ``await receipt`` sends what is pending at once and
returns when the acknowledgement is durable on the broker (or raises `BrokerError`), which is what
``await consumer.acknowledge(msg)`` always meant; not awaiting it leaves the acknowledgement to the
group's schedule, and a refusal nobody awaits is logged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Generator
from typing import Any

from logwright.client.connection import BrokerError, ClientError, Connection
from logwright.compat.errors import ErrorCode
from logwright.core.rangeset import RangeSet

log = logging.getLogger(__name__)

ACKNOWLEDGE_BATCH_KEY = 32004
Failure = tuple[int, str | None]
"""A refused entry's Kafka error code and the broker's message."""


class AckReceipt:
    """The outcome of one acknowledgement: ``await`` it to send now and wait until it is durable."""

    def __init__(self, group: AckGroup, future: asyncio.Future[None]) -> None:
        self._group = group
        self._future = future

    def __await__(self) -> Generator[Any, None, None]:
        self._group.send_soon()
        return self._future.__await__()

    def done(self) -> bool:
        """Whether the broker has answered (successfully or not)."""
        return self._future.done()

    async def settled(self) -> None:
        """Wait for the acknowledgement without hurrying it: it goes with its group, on the group's schedule."""
        await asyncio.shield(self._future)


class AckGroup:
    """Pending acknowledgements of one consumer and the requests that carry them."""

    def __init__(self, connection: Connection, group_id: str, member_id: str, topic: str, group_time_ms: int,
                 group_size: int) -> None:
        self._connection = connection
        self.group_id = group_id
        self.member_id = member_id
        self._topic = topic
        self._group_time_s = max(group_time_ms, 0) / 1000
        self._group_size = max(group_size, 1)
        self._pending: list[tuple[int, int, asyncio.Future[None]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._sending: set[asyncio.Task[None]] = set()

    def add(self, partition: int, offset: int) -> AckReceipt:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        future.add_done_callback(self._report)
        self._pending.append((partition, offset, future))
        if len(self._pending) >= self._group_size or self._group_time_s == 0:
            self.send_soon()
        elif self._timer is None:
            self._timer = loop.call_later(self._group_time_s, self.send_soon)
        return AckReceipt(self, future)

    def send_soon(self) -> None:
        """Send what is pending in a request of its own (nothing if nothing is)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        task = asyncio.get_running_loop().create_task(self._send(batch), name=f"logwright-acks-{self.member_id}")
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def flush(self) -> None:
        """Send everything pending and wait until every acknowledgement sent so far is answered."""
        self.send_soon()
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)

    def fail_pending(self, error: ClientError) -> None:
        """Give up on what was never sent (the consumer is gone)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        batch, self._pending = self._pending, []
        for _, _, future in batch:
            if not future.done():
                future.set_exception(error)

    async def _send(self, batch: list[tuple[int, int, asyncio.Future[None]]]) -> None:
        offsets: dict[int, RangeSet] = {}
        for partition, offset, _ in batch:
            offsets[partition] = offsets.get(partition, RangeSet()).add(offset)
        failures: dict[tuple[int, int, int], Failure] = {}
        try:
            entries = [(partition, ranges.ranges) for partition, ranges in offsets.items()]
            again: list[tuple[int, tuple[tuple[int, int], ...]]] = []
            for (partition, ranges), failure in zip(entries, await self._request(entries), strict=True):
                if failure is not None and failure[0] == ErrorCode.INVALID_RECORD_STATE and len(offsets[partition]) > 1:
                    again.extend((partition, ((offset, offset),)) for offset in offsets[partition])
                elif failure is not None:
                    failures[(partition, ranges[0][0], ranges[-1][1])] = failure
            for (partition, ranges), failure in zip(again, await self._request(again) if again else [], strict=True):
                if failure is not None:
                    failures[(partition, ranges[0][0], ranges[0][1])] = failure
        except ClientError as error:
            for _, _, future in batch:
                if not future.done():
                    future.set_exception(error)
            return
        for partition, offset, future in batch:
            failure = next((found for (p, first, last), found in failures.items()
                            if p == partition and first <= offset <= last), None)
            if future.done():
                continue
            if failure is None:
                future.set_result(None)
            else:
                future.set_exception(BrokerError(failure[0], failure[1], f"acknowledge {self._topic}-{partition}"))

    async def _request(self, entries: list[tuple[int, tuple[tuple[int, int], ...]]]) -> list[Failure | None]:
        """One LogwrightAcknowledgeBatch of ``(partition, ranges)`` entries; each entry's failure, if any."""
        answer = await self._connection.extension(ACKNOWLEDGE_BATCH_KEY, {
            "group_id": self.group_id, "member_id": self.member_id,
            "acks": [{"topic": self._topic, "partition": partition, "ranges": [list(span) for span in ranges]}
                     for partition, ranges in entries]}, "acknowledge")
        return [(int(result["error_code"]), result["error_message"]) if result["error_code"] else None
                for result in answer["results"]]

    @staticmethod
    def _report(future: asyncio.Future[None]) -> None:
        """Retrieve a failure so an acknowledgement nobody awaits is logged once, not lost."""
        if not future.cancelled() and future.exception() is not None:
            log.warning("an acknowledgement was refused: %s", future.exception())
