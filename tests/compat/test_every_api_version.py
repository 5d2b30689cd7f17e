"""Every Kafka API key and version the broker advertises, once through its handler and the response writer.

Each request is built from kio's schema with neutral values (one entry in every array of entities), so every
handler reads each field its version has and writes a response of exactly that version; a misspelt field in
a ``make`` call or a read of a field the version lacks fails here rather than on a client's first request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import types
import typing
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.index import load_request_schema
from logwright.compat.broker import Broker
from logwright.compat.handlers import KAFKA_APIS, load_handlers
from logwright.compat.kafka.consumer_group_heartbeat import wire_assignment
from logwright.compat.registry import CloseConnection, RequestContext, response_module
from logwright.compat.wire.messages import encode_response
from logwright.core.clock import ManualClock
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker

NAME = "probe"
HANDLERS = load_handlers()
SERVED = [(api_key, version) for api_key in sorted(KAFKA_APIS)
          for version in range(HANDLERS[api_key].min_version, HANDLERS[api_key].max_version + 1)]


def neutral(kind: Any) -> Any:
    """A value of ``kind`` a handler can read: zero, empty, a name, or an entity built the same way."""
    if isinstance(kind, typing.NewType):
        return neutral(kind.__supertype__)
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        arms = [arm for arm in typing.get_args(kind) if arm is not type(None)]
        return neutral(arms[0]) if len(arms) == 1 and dataclasses.is_dataclass(arms[0]) else None
    if typing.get_origin(kind) is tuple:
        (item, _) = typing.get_args(kind)
        return (build(item),) if dataclasses.is_dataclass(item) else ()
    if dataclasses.is_dataclass(kind):
        return build(typing.cast(type[Any], kind))
    if hasattr(kind, "parse"):  # kio's phantom types (i32, i32Timedelta, ...) check a plain value
        for candidate in (0, 0.0, datetime.timedelta(0)):
            if isinstance(candidate, kind):
                return kind.parse(candidate)
    if isinstance(kind, type):
        if issubclass(kind, datetime.timedelta):
            return kind(0)
        if issubclass(kind, bool):
            return False
        if issubclass(kind, int | float):
            return kind(0)
        if issubclass(kind, str):
            return kind(NAME)
        if issubclass(kind, bytes):
            return b""
        if issubclass(kind, uuid.UUID):
            return uuid.UUID(int=0)
    raise TypeError(f"no neutral value for {kind!r}")


def build(cls: type[Any]) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{field.name: neutral(hints[field.name]) for field in dataclasses.fields(cls) if field.init})


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    clock = ManualClock()
    store = RocksEventStore(tmp_path_factory.mktemp("every-version") / "data", clock=clock)
    served = in_process_broker(store, clock=clock)
    yield served
    served.coordinators.close()
    served.commit_now()
    store.close()


@pytest.mark.parametrize(("api_key", "version"), SERVED, ids=[f"{key}-v{version}" for key, version in SERVED])
def test_the_handler_answers_a_neutral_request_in_its_own_version(broker: Broker, api_key: int,
                                                                   version: int) -> None:
    request = build(load_request_schema(api_key, version))
    context = RequestContext(broker, api_key, version, 7, "every-version", 1, "127.0.0.1")
    try:
        response = asyncio.run(asyncio.wait_for(HANDLERS[api_key].handle(context, request), timeout=30))
    except CloseConnection:  # a neutral Produce is acks=0 and names a partition that is not there: Kafka closes
        assert api_key == 0 and request.acks == 0
        return
    if response is not None:
        assert encode_response(api_key, version, 7, response)


@pytest.mark.parametrize(("api_name", "version"), [("consumer_group_heartbeat", 0), ("consumer_group_heartbeat", 1),
                                                   ("consumer_group_describe", 0), ("consumer_group_describe", 1)])
def test_one_assignment_writer_serves_the_heartbeat_and_describe(broker: Broker, api_name: str, version: int) -> None:
    """Neutral requests carry no assignment; ConsumerGroupDescribe names the topics, the heartbeat does not."""
    async def create() -> None:
        broker.create_topic("assigned", 2)
        await broker.durable()

    if broker.topic("assigned") is None:
        asyncio.run(create())
    module = response_module(api_name, version)
    assignment = wire_assignment(broker, module, (("assigned", (0, 1)),))
    (entry,) = assignment.topic_partitions
    assert tuple(entry.partitions) == (0, 1)
    assert getattr(entry, "topic_name", "assigned") == "assigned"
