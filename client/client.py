"""``logwright.client``: the bundled asyncio client, with an API that reads like Pulsar's.

    client = await Client.connect("127.0.0.1:9092")
    consumer = await client.subscribe("orders", "billing", mode="failover", consumer_name="a")
    msg = await consumer.receive(timeout=10)
    await consumer.acknowledge(msg)            # or negative_acknowledge(msg), acknowledge_cumulative(msg)
    await consumer.close(); await client.close()

A subscription is a KIP-932 share group named after it. What belongs to the subscription is set on the
group; what belongs to one consumer travels with that consumer:

- ``mode`` is the subscription's (``logwright.subscription.mode``): subscribing with another mode than the
  group has while it has members raises `InvalidConfiguration` (the broker refuses the change, as Pulsar
  refuses a consumer of another subscription type); the first subscriber of an empty group sets it.
- ``initial_position`` matters only where the subscription starts: it is set (``share.auto.offset.reset``)
  only when the group does not exist yet, and ignored afterwards, as in Pulsar.
- ``ack_timeout_ms`` is this consumer's own acquisition lock on the broker (15 s to 60 s), declared with
  its other options (key 32002); other consumers keep theirs or the group's.
- name, priority, key-hash ranges, receiver queue, backoff and the acknowledgement grouping are the
  consumer's own too.

What Kafka cannot say goes through logwright's extension API keys (`compat/wire/extension_body.py`).

Semantics worth knowing: a negative ack is released on the broker with the delay the backoff gives for
the record's *persisted* redelivery count, so a multiplier backoff keeps growing across reconnects and
broker restarts; acknowledgements are grouped (`client_acks`) and ``await``-ing one sends it at once;
``close`` sends pending acknowledgements, then leaves the group, and whatever the consumer still held is
redelivered at once, without using up an attempt.
"""

from __future__ import annotations

import ssl
import struct
import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from logwright.client import pop as pop_calls
from logwright.client.acks import AckReceipt
from logwright.client.connection import BrokerError, ClientError, Connection, ConnectionClosed
from logwright.client.consumer import Consumer, ConsumerBusy, ConsumerSettings, InvalidConfiguration, Message, Timeout
from logwright.client.pop import PoppedMessage, PoppedMessages, ReceiptHandleError
from logwright.client.reader import EARLIEST, LATEST, MessageId, PublishTime, Reader, StartPosition
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make
from logwright.core.cursors.redelivery_backoff import FixedDelay, MultiplierBackoff

__all__ = ["AckReceipt", "BrokerError", "Client", "ClientError", "ConnectionClosed", "Consumer", "ConsumerBusy",
           "EARLIEST", "FixedDelay", "InvalidConfiguration", "LATEST", "Message", "MessageId", "MultiplierBackoff",
           "PublishTime", "Reader", "StartPosition", "Timeout"]

MODES = ("exclusive", "failover", "shared", "key_shared")
INITIAL_POSITIONS = ("latest", "earliest")
GROUP_RESOURCE = 32
SET = 0
ADVANCE_CLOCK_KEY = 32001
INSPECT_CURSOR_KEY = 32006


class Client:
    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._consumers: list[Consumer] = []

    @classmethod
    async def connect(cls, bootstrap: str, client_id: str = "logwright-client",
                      tls: ssl.SSLContext | None = None) -> Client:
        """A client of the broker at ``bootstrap``: its PLAINTEXT listener, or with ``tls`` its SSL one."""
        return cls(await Connection.open(bootstrap, client_id, tls=tls))

    async def subscribe(
        self,
        topic: str,
        subscription: str,
        mode: str = "shared",
        consumer_name: str = "",
        priority: int = 0,
        initial_position: str = "latest",
        ack_timeout_ms: int | None = None,
        negative_ack_redelivery_delay_ms: int | None = None,
        redelivery_backoff: MultiplierBackoff | None = None,
        key_hash_ranges: tuple[tuple[int, int], ...] = (),
        receiver_queue_size: int = 100,
        heartbeat_interval_ms: int | None = None,
        ack_group_time_ms: int = 100,
        ack_group_size: int = 1000,
        retry_enable: bool = False,
        retry_letter_topic: str | None = None,
        processed_key_source: str | None = None,
        processed_keys_ttl_ms: int | None = None,
    ) -> Consumer:
        """Join ``subscription`` on ``topic``; raises `ConsumerBusy`, `InvalidConfiguration` or `BrokerError`.

        ``negative_ack_redelivery_delay_ms`` or ``redelivery_backoff`` make `Consumer.negative_acknowledge` ask
        for that delay; with neither (the default) it asks for none and the subscription's
        ``logwright.redelivery.backoff.*`` policy decides (Kafka's "at once" when it has none).
        ``key_hash_ranges`` are Key_Shared STICKY ranges (inclusive, within 0..65535; empty: AUTO_SPLIT).
        ``heartbeat_interval_ms`` overrides the group's interval (tests, fast failover switch-over).
        ``ack_group_time_ms`` and ``ack_group_size`` group acknowledgements (Pulsar's
        acknowledgementsGroupTime and maxAcknowledgmentGroupSize); 0 ms sends each at once.
        ``retry_enable`` (Pulsar's enableRetry) also consumes the subscription's retry letter topic
        (``retry_letter_topic``, stored as the group's ``logwright.retry.letter.topic``; default
        ``<topic>-<subscription>-RETRY``, created here if missing when the broker auto-creates topics, unless
        Pulsar's legacy ``<subscription>-RETRY`` exists, which is then taken, as the broker takes it; a named
        one must exist), where `Consumer.reconsume_later` moves records.
        ``processed_key_source`` (``"record-key"`` or ``"header:<name>"``) and ``processed_keys_ttl_ms`` set the
        subscription's ``logwright.processed.key`` and ``logwright.processed.keys.ttl.ms``: what
        ``acknowledge(msg, processed_key=...)`` needs (consumer-side idempotency, docs/keys.md).
        """
        if mode not in MODES:
            raise InvalidConfiguration(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        if initial_position not in INITIAL_POSITIONS:
            raise InvalidConfiguration(f"initial_position must be 'latest' or 'earliest', got {initial_position!r}")
        if receiver_queue_size < 1:
            raise InvalidConfiguration(f"receiver_queue_size must be positive, got {receiver_queue_size}")
        configs = {"logwright.subscription.mode": mode}
        if retry_letter_topic:
            configs["logwright.retry.letter.topic"] = retry_letter_topic
        if processed_key_source is not None:
            configs["logwright.processed.key"] = processed_key_source
        if processed_keys_ttl_ms is not None:
            configs["logwright.processed.keys.ttl.ms"] = str(processed_keys_ttl_ms)
        if not await self._exists(subscription):
            configs["share.auto.offset.reset"] = initial_position
        await self._set_group_configs(subscription, configs)
        settings = ConsumerSettings(
            topic=topic, topic_id=await self._topic_id(topic), subscription=subscription, mode=mode,
            consumer_name=consumer_name, priority=priority, hash_ranges=tuple(key_hash_ranges),
            receiver_queue_size=receiver_queue_size,
            negative_ack_backoff=redelivery_backoff or (FixedDelay(negative_ack_redelivery_delay_ms)
                                                        if negative_ack_redelivery_delay_ms is not None else None),
            heartbeat_interval_ms=heartbeat_interval_ms, ack_timeout_ms=ack_timeout_ms or 0,
            ack_group_time_ms=ack_group_time_ms, ack_group_size=ack_group_size)
        consumer = Consumer(self._connection, settings)
        await consumer.join()
        self._consumers.append(consumer)
        if retry_enable:
            retry = retry_letter_topic or await self._legacy_topic(f"{subscription}-RETRY") or (
                f"{topic}-{subscription}-RETRY")
            retry_id = await self._topic_id(retry, auto_create=not retry_letter_topic)
            companion = Consumer(self._connection, replace(settings, topic=retry, topic_id=retry_id))
            try:
                await companion.join()
            except BaseException:
                await consumer.close()
                self._consumers.remove(consumer)
                raise
            consumer.retry_consumer = companion
        return consumer

    async def create_reader(self, topic: str, start: StartPosition = EARLIEST, partition: int | None = None,
                            start_inclusive: bool = False) -> Reader:
        """A `Reader` of ``topic`` (one ``partition``, or all) from ``start``, without a group; see `client.reader`.

        ``start`` is ``"earliest"``, ``"latest"``, an offset, a `MessageId`, a `PublishTime` or offsets by
        partition; an offset or id is exclusive unless ``start_inclusive`` (Pulsar's startMessageIdInclusive).
        """
        return await Reader.open(self._connection, topic, start, partition, start_inclusive)

    async def _exists(self, subscription: str) -> bool:
        """Whether the subscription's share group exists (ShareGroupDescribe)."""
        response = await self._connection.request(make(
            ShareGroupDescribeRequest, group_ids=(subscription,), include_authorized_operations=False))
        [group] = response.groups
        if group.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
            return False
        if group.error_code:
            raise BrokerError(int(group.error_code), group.error_message, f"describe {subscription!r}")
        return True

    async def _set_group_configs(self, group: str, configs: dict[str, str]) -> None:
        changes = tuple(make(AlterableConfig, name=name, config_operation=SET, value=value)
                        for name, value in configs.items())
        response = await self._connection.request(make(
            IncrementalAlterConfigsRequest, validate_only=False,
            resources=(make(AlterConfigsResource, resource_type=GROUP_RESOURCE, resource_name=group,
                            configs=changes),)))
        for resource in response.responses:
            if resource.error_code == ErrorCode.INVALID_CONFIG:
                raise InvalidConfiguration(f"subscription {group!r}: {resource.error_message}")
            if resource.error_code:
                raise BrokerError(int(resource.error_code), resource.error_message, f"configure {group!r}")

    async def _legacy_topic(self, topic: str) -> str | None:
        """``topic`` if it exists (Pulsar's client takes its legacy retry topic only then), else ``None``."""
        try:
            await self._topic_id(topic)
        except BrokerError as error:
            if error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                return None
            raise
        return topic

    async def _topic_id(self, topic: str, auto_create: bool = False) -> uuid.UUID:
        """The topic's id; ``auto_create`` lets the broker create it (only with its ``auto.create.topics.enable``)."""
        response = await self._connection.request(make(
            MetadataRequest, topics=(make(MetadataRequestTopic, topic_id=None, name=topic),),
            allow_auto_topic_creation=auto_create, include_topic_authorized_operations=False))
        for found in response.topics:
            if found.name == topic:
                if found.error_code:
                    raise BrokerError(int(found.error_code), None, f"topic {topic!r}")
                assert found.topic_id is not None
                return uuid.UUID(bytes=found.topic_id.bytes)
        raise BrokerError(int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None, f"topic {topic!r}")

    async def inspect(self, subscription: str, topic: str) -> list[dict[str, Any]]:
        """The subscription's cursor on every partition of ``topic`` (LogwrightInspectCursor)."""
        answer = await self._connection.extension(INSPECT_CURSOR_KEY, {"group_id": subscription, "topic": topic},
                                                  "inspect cursor")
        return list(answer["partitions"])

    async def pop(self, topic: str, group: str, max_messages: int = 32, invisible_time_ms: int = 60_000,
                  long_poll_ms: int = 0, orderly: bool = False) -> PoppedMessages:
        """Pop up to ``max_messages`` (1-32; 1-1024 from a broker serving pop v1) of ``topic`` for ``group``
        (RocketMQ 5's pop; see `client.pop`):
        each is invisible to other pops for ``invisible_time_ms`` (10 s - 12 h) unless acknowledged."""
        return await pop_calls.pop(self._connection, topic, group, max_messages, invisible_time_ms, long_poll_ms,
                                   orderly)

    async def pop_with_acks(self, topic: str, group: str, acked: Sequence[PoppedMessage], max_messages: int = 32,
                            invisible_time_ms: int = 60_000, long_poll_ms: int = 0, orderly: bool = False
                            ) -> tuple[PoppedMessages, list[ReceiptHandleError | None]]:
        """Acknowledge ``acked`` and pop in one request (as ShareFetch carries acknowledgements): the popped
        messages and each acknowledgement's refusal, in order."""
        return await pop_calls.pop_with_acks(self._connection, topic, group, acked, max_messages, invisible_time_ms,
                                             long_poll_ms, orderly)

    async def ack(self, message: PoppedMessage | str, group: str | None = None) -> None:
        """Settle a popped message by its receipt handle; a superseded handle raises `StaleReceiptHandle`."""
        await pop_calls.ack(self._connection, message, group)

    async def ack_all(self, messages: Sequence[PoppedMessage]) -> list[ReceiptHandleError | None]:
        """Settle many popped messages of one group in one request; each refused handle's error, in order."""
        return await pop_calls.ack_all(self._connection, messages)

    async def change_invisible_time(self, message: PoppedMessage | str, invisible_time_ms: int,
                                    group: str | None = None) -> PoppedMessage | str:
        """Keep a popped message invisible ``invisible_time_ms`` from now; returns it with its new handle."""
        return await pop_calls.change_invisible_time(self._connection, message, invisible_time_ms, group)

    async def nack(self, message: PoppedMessage | str, delay_ms: int | None = None, group: str | None = None) -> bool:
        """Give a popped message back as failed; True if it went to the dead-letter topic instead."""
        return await pop_calls.nack(self._connection, message, delay_ms, group)

    async def inspect_pop(self, topic: str, group: str) -> dict[str, Any]:
        """The group's pop state on ``topic`` (in flight, revived, consumed offsets) per partition."""
        return await pop_calls.inspect(self._connection, topic, group)

    async def reset_pop(self, topic: str, group: str, to: str, value: int | None = None,
                        partitions: Sequence[int] | None = None) -> dict[int, int]:
        """Reset the group's pop position on ``topic`` to ``earliest``, ``latest``, an ``offset`` or a ``timestamp``
        (``value``), dropping what it had in flight there (F41); the new position per partition index."""
        return await pop_calls.reset(self._connection, topic, group, to, value, partitions)

    async def advance_clock(self, milliseconds: int) -> int:
        """Move a ``--manual-clock`` broker's clock (LogwrightAdvanceClock); the broker's new time."""
        answer = await self._connection.raw(ADVANCE_CLOCK_KEY, struct.pack(">q", milliseconds))
        code, now_ms = struct.unpack(">hq", answer)
        if code:
            raise BrokerError(code, "the broker does not run on a manual clock", "advance clock")
        return int(now_ms)

    async def close(self) -> None:
        for consumer in self._consumers:
            await consumer.close()
        self._consumers.clear()
        await self._connection.close()

