"""The bundled client's consumer: a share group member that reads like a Pulsar consumer.

It joins with ShareGroupHeartbeat (having declared its options first: Failover name and priority,
Key_Shared ranges, its own ack timeout; so it picks its own member id), keeps heartbeating in a
background task, fetches with ShareFetch v2 in record-limit mode (never more than its receiver queue)
in a share session whose partitions follow the assignment, and hands out only the records the broker
says it acquired. Individual acknowledgements are grouped (`client_acks`: one request per 100 ms or
1000 acks by default, at once when awaited); negative acks with a delay computed from the persisted
delivery count (32003) and cumulative acks (32005, Exclusive and Failover only) go at once and are
durable when they return.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import uuid
from collections import deque
from dataclasses import dataclass
from typing import Any

from kio.schema.share_acknowledge.v1.request import ShareAcknowledgeRequest
from kio.schema.share_fetch.v2.request import FetchPartition, FetchTopic, ForgottenTopic, ShareFetchRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.client.acks import AckGroup, AckReceipt
from logwright.client.connection import BrokerError, ClientError, Connection, ConnectionClosed
from logwright.client.record_reader import read_all
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import iter_batches, parse_header
from logwright.core.cursors.redelivery_backoff import RedeliveryBackoff

log = logging.getLogger(__name__)

CUMULATIVE_MODES = frozenset({"exclusive", "failover"})
_REJOIN = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.GROUP_ID_NOT_FOUND})
"""Heartbeat answers after which the member joins again with epoch 0 (the last: its group was deleted meanwhile)."""
_NEW_SESSION = frozenset({ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH})
_MAX_EPOCH = 2**31 - 1
_CLOSE_EPOCH = -1
"""A share session request with this epoch closes the session."""
RECORD_LIMIT = 1
"""ShareFetch v2 ``share_acquire_mode``: never more than ``max_records`` (the receiver queue)."""


class InvalidConfiguration(ClientError):
    """The request does not fit the subscription (e.g. a cumulative ack on a Shared subscription)."""


class ConsumerBusy(BrokerError):
    """The subscription mode refuses another consumer (a second consumer of an Exclusive subscription)."""


class Timeout(ClientError):
    """`Consumer.receive` found no record before its timeout."""


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...]
    delivery_count: int

    @property
    def redelivery_count(self) -> int:
        """Pulsar's count: how often the record was delivered before this delivery."""
        return self.delivery_count - 1


@dataclass(frozen=True, slots=True)
class ReconsumedTo:
    """Where `Consumer.reconsume_later` moved a record: the retry topic, or the dead-letter topic."""

    topic: str
    reconsume_times: int
    dead_lettered: bool


@dataclass(frozen=True, slots=True)
class ConsumerSettings:
    topic: str
    topic_id: uuid.UUID
    subscription: str
    mode: str
    consumer_name: str
    priority: int
    hash_ranges: tuple[tuple[int, int], ...]
    receiver_queue_size: int
    negative_ack_backoff: RedeliveryBackoff | None
    heartbeat_interval_ms: int | None
    ack_timeout_ms: int = 0
    """This consumer's acquisition lock on the broker (0: the group's ``share.record.lock.duration.ms``)."""
    ack_group_time_ms: int = 100
    ack_group_size: int = 1000


class Consumer:
    def __init__(self, connection: Connection, settings: ConsumerSettings) -> None:
        self._connection = connection
        self.settings = settings
        self.member_id = str(uuid.uuid4())
        self.member_epoch = 0
        self.assignment: frozenset[int] = frozenset()
        self._interval_s = 5.0
        self._session_epoch = 0
        self._session: frozenset[int] = frozenset()
        self._buffer: deque[Message] = deque()
        self._heartbeats: asyncio.Task[None] | None = None
        self._closing = False
        self._assigned = asyncio.Event()
        self._acks = AckGroup(connection, settings.subscription, self.member_id, settings.topic,
                              settings.ack_group_time_ms, settings.ack_group_size)
        self.retry_consumer: Consumer | None = None
        """The subscription's member on its retry letter topic (``retry_enable``): received from, acked and
        closed through this consumer, like Pulsar's consumer with retry enabled (two topics, one consumer)."""

    # -- membership ---------------------------------------------------------------------------

    async def join(self) -> None:
        """Declare the mode options, then heartbeat with epoch 0; raises `ConsumerBusy` when refused."""
        s = self.settings
        try:
            await self._connection.extension(32002, {
                "group_id": s.subscription, "member_id": self.member_id, "name": s.consumer_name,
                "priority": s.priority, "hash_ranges": [list(r) for r in s.hash_ranges],
                "ack_timeout_ms": s.ack_timeout_ms}, "consumer options")
        except BrokerError as error:
            if error.code == ErrorCode.INVALID_CONFIG:
                raise InvalidConfiguration(f"subscription {s.subscription!r}: {error.broker_message}") from error
            raise
        self.member_epoch = 0
        self._session_epoch, self._session = 0, frozenset()
        response = await self._heartbeat((s.topic,))
        if response.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED:
            raise ConsumerBusy(int(response.error_code), response.error_message, f"subscribe to {s.subscription!r}")
        if response.error_code:
            raise BrokerError(int(response.error_code), response.error_message, f"join {s.subscription!r}")
        if self._heartbeats is None:
            self._heartbeats = asyncio.get_running_loop().create_task(self._heartbeat_forever(),
                                                                      name=f"logwright-heartbeat-{self.member_id}")

    async def _heartbeat(self, topics: tuple[str, ...] | None) -> Any:
        response = await self._connection.request(make(
            ShareGroupHeartbeatRequest, group_id=self.settings.subscription, member_id=self.member_id,
            member_epoch=self.member_epoch, rack_id=None, subscribed_topic_names=topics))
        if not response.error_code:
            self.member_epoch = int(response.member_epoch)
            interval_ms = self.settings.heartbeat_interval_ms or response.heartbeat_interval.total_seconds() * 1000
            self._interval_s = max(interval_ms / 1000, 0.01)
            if response.assignment is not None:
                self.assignment = frozenset(
                    int(p) for tp in response.assignment.topic_partitions if tp.topic_id == self.settings.topic_id
                    for p in tp.partitions)
                self._assigned.set()
                self._assigned = asyncio.Event()
        return response

    async def _heartbeat_forever(self) -> None:
        """Heartbeat until `close` (which also cancels: the flag ends the loop even if a cancellation is lost)."""
        while not self._closing:
            await asyncio.sleep(self._interval_s)
            if self._closing:
                return
            try:
                response = await self._heartbeat(None)
                if response.error_code in _REJOIN:
                    log.info("member %s must rejoin %s: %s", self.member_id, self.settings.subscription,
                             response.error_message)
                    await self.join()
            except ConnectionClosed:
                log.warning("member %s stops heartbeating: the connection is closed", self.member_id)
                return
            except Exception:
                log.exception("heartbeat of %s failed; trying again", self.member_id)

    # -- receiving ----------------------------------------------------------------------------

    async def receive(self, timeout: float | None = None) -> Message:
        """The next acquired record (of the topic or its retry letter topic); `Timeout` if none arrives within
        ``timeout`` seconds."""
        retry = self.retry_consumer
        if retry is None:
            return await self._receive(timeout)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            for consumer in (self, retry):
                if consumer._buffer:
                    return consumer._buffer.popleft()
            remaining = 1.0 if deadline is None else deadline - loop.time()
            if remaining <= 0:
                raise Timeout(f"no record for subscription {self.settings.subscription!r} within {timeout} s")
            for consumer in (self, retry):
                with contextlib.suppress(Timeout):
                    return await consumer._receive(max(min(remaining / 2, 0.25), 0.001))

    def _for(self, message: Message) -> Consumer:
        """The member that holds ``message``: this one, or the retry letter topic's."""
        retry = self.retry_consumer
        return retry if retry is not None and message.topic == retry.settings.topic else self

    async def _receive(self, timeout: float | None) -> Message:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not self._buffer:
            remaining = 1.0 if deadline is None else deadline - loop.time()
            if remaining <= 0:
                raise Timeout(f"no record for subscription {self.settings.subscription!r} within {timeout} s")
            if not self.assignment:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(remaining, 0.5)):
                        await self._assigned.wait()
                continue
            await self._fetch(min(remaining, 0.5))
        return self._buffer.popleft()

    async def _fetch(self, max_wait_s: float) -> None:
        s = self.settings
        wanted = self.assignment
        added = wanted if self._session_epoch == 0 else wanted - self._session
        forgotten = () if self._session_epoch == 0 else tuple(sorted(self._session - wanted))
        topics = (make(FetchTopic, topic_id=s.topic_id, partitions=tuple(
            make(FetchPartition, partition_index=p, acknowledgement_batches=()) for p in sorted(added))),)
        response = await self._connection.request(make(
            ShareFetchRequest, group_id=s.subscription, member_id=self.member_id,
            share_session_epoch=self._session_epoch, max_wait=datetime.timedelta(seconds=max_wait_s), min_bytes=1,
            max_bytes=64 * 1024 * 1024, max_records=s.receiver_queue_size, batch_size=s.receiver_queue_size,
            share_acquire_mode=RECORD_LIMIT, is_renew_ack=False, topics=topics if added else (),
            forgotten_topics_data=(make(ForgottenTopic, topic_id=s.topic_id, partitions=forgotten),)
            if forgotten else ()))
        if response.error_code in _NEW_SESSION:
            self._session_epoch, self._session = 0, frozenset()
            return
        if response.error_code:
            raise BrokerError(int(response.error_code), response.error_message, "ShareFetch")
        self._session = wanted
        self._session_epoch = self._session_epoch + 1 if self._session_epoch < _MAX_EPOCH else 1
        control: list[tuple[int, int]] = []
        for topic in response.responses:
            for partition in topic.partitions:
                if partition.error_code:
                    log.warning("ShareFetch %s-%d: error %d %s", s.topic, partition.partition_index,
                                partition.error_code, partition.error_message)
                    continue
                control.extend(self._take(int(partition.partition_index), partition))
        for partition, offset in control:  # transaction markers take offsets but are nobody's message: settle them
            self._acks.add(partition, offset)

    def _take(self, index: int, partition: Any) -> list[tuple[int, int]]:
        counts: dict[int, int] = {}
        for acquired in partition.acquired_records:
            for offset in range(int(acquired.first_offset), int(acquired.last_offset) + 1):
                counts[offset] = int(acquired.delivery_count)
        control = []
        spans = []
        for batch in iter_batches(partition.records or b""):
            header = parse_header(batch)
            is_control = header.is_control
            spans.append((header.base_offset, header.last_offset))
            for record in read_all(batch):
                count = counts.pop(record.offset, None)
                if count is None:
                    continue
                if is_control:
                    control.append((index, record.offset))
                    continue
                self._buffer.append(Message(self.settings.topic, index, record.offset, record.key, record.value,
                                            record.timestamp, tuple(record.headers), count))
        # Offsets acquired with no record up to the last returned batch's end are compaction's gaps (KIP-932's GAP):
        # emptied inside a returned batch, or whole batches it removed before or between them. Settle them too: they
        # stayed acquired until the lock ran out, again and again until archived.
        if spans:
            end = spans[-1][1]
            control.extend((index, offset) for offset in counts if offset <= end)
        return control

    # -- acknowledging ------------------------------------------------------------------------

    def acknowledge(self, message: Message, processed_key: bytes | None = None) -> AckReceipt:
        """Individual acknowledgement, grouped with others into one request (see `client_acks`).

        ``await consumer.acknowledge(msg)`` sends what is pending at once and returns when it is durable
        (`BrokerError` if refused); without ``await`` it goes within ``ack_group_time_ms`` or with the next
        ``ack_group_size`` acknowledgements, and at `flush_acknowledgements` and `close` at the latest.

        With ``processed_key`` (a business id, as the subscription's ``logwright.processed.key`` reads it from
        records) the acknowledgement is sent at once with the key (LogwrightAcknowledgeProcessed, 32020): the
        subscription keeps the key for ``logwright.processed.keys.ttl.ms`` and the broker acknowledges, instead
        of delivering, any record of the subscription with that key in the meantime (F36).
        """
        owner = self._for(message)
        if processed_key is None:
            return owner._acks.add(message.partition, message.offset)
        s = owner.settings
        sent = asyncio.ensure_future(owner._connection.extension(32020, {
            "group_id": s.subscription, "member_id": owner.member_id, "topic": s.topic,
            "partition": message.partition, "records": [[message.offset, bytes(processed_key)]]},
            "acknowledge with a processed key"))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def settle(task: asyncio.Future[Any]) -> None:
            error = None if task.cancelled() else task.exception()
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

        done.add_done_callback(AckGroup._report)
        sent.add_done_callback(settle)
        return AckReceipt(owner._acks, done)

    async def flush_acknowledgements(self) -> None:
        """Send every pending acknowledgement and wait until all sent so far are answered."""
        await self._acks.flush()
        if self.retry_consumer is not None:
            await self.retry_consumer.flush_acknowledgements()

    async def acknowledge_cumulative(self, message: Message) -> None:
        """Settle everything of the message's partition up to it (Exclusive and Failover only)."""
        if self._for(message) is not self:
            await self._for(message).acknowledge_cumulative(message)
            return
        s = self.settings
        if s.mode not in CUMULATIVE_MODES:
            raise InvalidConfiguration(f"subscription {s.subscription!r} is {s.mode}: cumulative acknowledgement "
                                       "is only allowed on exclusive and failover subscriptions")
        await self._acks.flush()  # individual acks below the position would otherwise be refused after it
        await self._connection.extension(32005, {
            "group_id": s.subscription, "member_id": self.member_id, "topic": s.topic,
            "partition": message.partition, "offset": message.offset}, "acknowledge_cumulative")
        self._buffer = deque(m for m in self._buffer
                             if m.partition != message.partition or m.offset > message.offset)

    async def negative_acknowledge(self, message: Message, delay_ms: int | None = None) -> None:
        """Redeliver after ``delay_ms`` if given, else the consumer's configured delay or backoff for the record's
        persisted count; with none of them the request carries no delay (0) and the subscription's backoff
        policy decides, so a group's ``logwright.redelivery.backoff.policy`` is not overridden by default."""
        if self._for(message) is not self:
            await self._for(message).negative_acknowledge(message, delay_ms)
            return
        if delay_ms is not None and delay_ms < 0:
            raise InvalidConfiguration(f"delay_ms must not be negative, got {delay_ms}")
        s = self.settings
        if delay_ms is None:
            backoff = s.negative_ack_backoff
            delay_ms = backoff.delay_for(message.redelivery_count) if backoff is not None else 0
        await self._connection.extension(32003, {
            "group_id": s.subscription, "member_id": self.member_id, "topic": s.topic,
            "partition": message.partition, "ranges": [[message.offset, message.offset]],
            "delay_ms": delay_ms}, "negative_acknowledge")

    async def reconsume_later(self, message: Message, delay_ms: int) -> ReconsumedTo:
        """Pulsar's ``reconsumeLater``: the broker moves the record to the subscription's retry letter topic,
        visible again after ``delay_ms``, and acknowledges it, atomically (32008); past the subscription's
        ``logwright.retry.max.reconsume.times`` it goes to the dead-letter topic instead. Durable on return."""
        if self._for(message) is not self:
            return await self._for(message).reconsume_later(message, delay_ms)
        s = self.settings
        if delay_ms < 0:
            raise InvalidConfiguration(f"delay_ms must not be negative, got {delay_ms}")
        answer = await self._connection.extension(32008, {
            "group_id": s.subscription, "member_id": self.member_id, "topic": message.topic,
            "partition": message.partition, "offset": message.offset, "delay_ms": delay_ms}, "reconsume_later")
        return ReconsumedTo(str(answer["topic"]), int(answer["reconsume_times"]), bool(answer["dead_lettered"]))

    async def close(self) -> None:
        """Send pending acknowledgements, close the share session (records still held become available to the others
        at once, as Kafka's ``releaseSession`` makes them), then leave."""
        if self.retry_consumer is not None:
            await self.retry_consumer.close()
        self._closing = True
        with contextlib.suppress(ClientError):
            await self._acks.flush()
        self._acks.fail_pending(ClientError(f"consumer {self.member_id} is closed"))
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._heartbeats
            self._heartbeats = None
        if self._session_epoch > 0:
            self._session_epoch, self._session = 0, frozenset()
            with contextlib.suppress(ClientError):
                await self._connection.request(make(
                    ShareAcknowledgeRequest, group_id=self.settings.subscription, member_id=self.member_id,
                    share_session_epoch=_CLOSE_EPOCH, topics=()))
        if self.member_epoch >= 0:
            self.member_epoch = -1
            with contextlib.suppress(ClientError):
                await self._heartbeat(None)
        self._buffer.clear()
