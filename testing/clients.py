"""Blocking clients for plugin tests: the bundled asyncio client, run on a private event loop.

A plugin author's test is a plain function: ``client.create_topic("t")``, ``client.produce("t", [b"v"])``,
``consumer = client.subscribe("t", "sub")``, ``consumer.receive(timeout=10)``. Every call runs the
coroutine to completion on the client's own loop, so no async test plugin is needed.
"""

from __future__ import annotations

import asyncio
import datetime
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from kio.schema.create_topics.v7.request import CreatableTopic, CreatableTopicConfig, CreateTopicsRequest
from kio.schema.produce.v9 import request as produce_v9
from logwright.client import BrokerError, Client
from logwright.client.connection import Connection
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record

TIMEOUT = datetime.timedelta(seconds=30)


def one_request(bootstrap: str, message: Any, client_id: str = "logwright-testing") -> Any:
    """The answer to ``message`` (a kio request) sent on a connection of its own, closed after it."""

    async def exchange() -> Any:
        connection = await Connection.open(bootstrap, client_id)
        try:
            return await connection.request(message)
        finally:
            await connection.close()

    return asyncio.run(exchange())


def advance_clock(bootstrap: str, milliseconds: int) -> int:
    """Move a ``--manual-clock`` broker's time on by ``milliseconds``; its new time, once everything that came
    due (lock expiry, session timeouts, plugin tasks' sleeps) has run and is durable."""

    async def advance() -> int:
        client = await Client.connect(bootstrap, "logwright-testing-clock")
        try:
            return await client.advance_clock(milliseconds)
        finally:
            await client.close()

    return asyncio.run(advance())


class Blocking:
    """``target``'s methods as blocking calls on ``loop``; results with coroutine methods (consumers) are
    wrapped too, plain values are returned as they are."""

    def __init__(self, target: Any, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        self._target = target
        self._loop = loop
        self._timeout_s = timeout_s

    def run(self, awaitable: Any) -> Any:
        async def bounded() -> Any:
            async with asyncio.timeout(self._timeout_s):
                return await awaitable

        return self._loop.run_until_complete(bounded())

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            if inspect.isawaitable(result):
                result = self.run(result)
            if any(inspect.iscoroutinefunction(getattr(type(result), attribute, None))
                   for attribute in dir(type(result)) if not attribute.startswith("__")):
                return Blocking(result, self._loop, self._timeout_s)
            return result

        return call


class TestClient(Blocking):
    """The bundled `Client` (subscribe, inspect, advance_clock, close) plus what a plugin test needs to set up:
    topics, records and group configs. Raises `logwright.client.BrokerError` when the broker refuses."""

    __test__ = False  # not a test class, whatever pytest's name pattern says

    def __init__(self, bootstrap: str, timeout_s: float = 60.0) -> None:
        loop = asyncio.new_event_loop()
        super().__init__(loop.run_until_complete(Client.connect(bootstrap, "logwright-testing")), loop, timeout_s)
        self._connection: Connection = self.run(Connection.open(bootstrap, "logwright-testing-admin"))

    def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> None:
        topic = make(CreatableTopic, name=name, num_partitions=partitions, replication_factor=-1, assignments=(),
                     configs=tuple(make(CreatableTopicConfig, name=key, value=value)
                                   for key, value in (configs or {}).items()))
        [created] = self.run(self._connection.request(
            make(CreateTopicsRequest, topics=(topic,), timeout=TIMEOUT, validate_only=False))).topics
        if created.error_code:
            raise BrokerError(int(created.error_code), created.error_message, f"create topic {name!r}")

    def produce(self, topic: str, values: Sequence[bytes | None], partition: int = 0, key: bytes | None = None,
                timestamp_ms: int = 0) -> int:
        """Append ``values`` as one batch (acks=all); the first record's offset."""
        batch = build_batch([Record(0, timestamp_ms, key, value) for value in values])
        response = self.run(self._connection.request(make(
            produce_v9.ProduceRequest, transactional_id=None, acks=-1, timeout=TIMEOUT,
            topic_data=(make(produce_v9.TopicProduceData, name=topic, partition_data=(
                make(produce_v9.PartitionProduceData, index=partition, records=batch),)),))))
        [answer] = response.responses[0].partition_responses
        if answer.error_code != ErrorCode.NONE:
            raise BrokerError(int(answer.error_code), answer.error_message, f"produce to {topic}-{partition}")
        return int(answer.base_offset)

    def set_group_configs(self, group: str, configs: Mapping[str, str]) -> None:
        """IncrementalAlterConfigs SET on a group (a plugin's group keys, ``logwright.subscription.mode``)."""
        self.run(self._target._set_group_configs(group, dict(configs)))

    def close(self) -> None:
        try:
            self.run(self._target.close())
            self.run(self._connection.close())
        finally:
            self._loop.close()
