"""A large request is decoded in steps, the loop serving other connections between them.

The `bounds` walk of a DescribeGroups of a million names took 59 of its 75 ms of decoding, in one stretch inside the
read. `bounds.body_checker_in_steps` makes the same walk pausing every `STEP_ELEMENTS` elements; the server decodes
request frames of `ANSWERED_IN_STEPS_FROM` bytes or more (but Produce, which has its own reader) that way, in a task,
the connection's later requests waiting until the body is read, and none of them started if it is refused.
"""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.compat.broker import Broker
from logwright.compat.registry import HandlerEntry, RequestContext
from logwright.compat.request_dispatch import ANSWERED_IN_STEPS_FROM
from logwright.compat.server import Connection, KafkaServer
from logwright.compat.wire.bounds import STEP_ELEMENTS, OutOfBounds, body_checker_in_steps, check_body
from logwright.compat.wire.encoder import encode_entity
from logwright.compat.wire.messages import (
    MalformedRequest,
    decode_request,
    decode_request_in_steps,
    parse_request_header,
)

from tests.compat.test_answers_in_steps import run_steps
from tests.compat.test_bounds_decoding import ALL_CLASSES, MUTATION, TOLERANT, mutate
from tests.compat.test_server_backpressure import api_versions, broker, connect, settle

__all__ = ["broker"]  # the fixture, used by name

DESCRIBE_GROUPS = 15


def walk_in_steps(cls: type[Any], body: bytes) -> int | str:
    try:
        return run_steps(body_checker_in_steps(cls)(body, 0, len(body)))[1]
    except OutOfBounds as error:
        return f"refused: {error}"


def walk_at_once(cls: type[Any], body: bytes) -> int | str:
    try:
        return check_body(cls, body, 0)
    except OutOfBounds as error:
        return f"refused: {error}"


@settings(TOLERANT, max_examples=1000)
@given(st.sampled_from(ALL_CLASSES).flatmap(st.from_type), st.lists(MUTATION, max_size=3))
def test_the_stepped_walk_ends_or_refuses_as_the_walk_at_once_does(entity: Any,
                                                                   mutations: list[tuple[str, int, Any]]) -> None:
    body = encode_entity(entity)
    for mutation in mutations:
        body = mutate(body, mutation)
    assert walk_in_steps(type(entity), body) == walk_at_once(type(entity), body)


def describe_groups(names: int, correlation_id: int = 7, name: bytes = b"") -> bytes:
    """A DescribeGroups v0 frame (size prefix included) naming ``names`` groups called ``name``."""
    payload = struct.pack(">hhih", DESCRIBE_GROUPS, 0, correlation_id, 4) + b"test" + struct.pack(">i", names) \
        + (struct.pack(">h", len(name)) + name) * names
    return struct.pack(">i", len(payload)) + payload


def test_a_million_names_are_walked_in_steps_of_a_few_thousand_and_read_as_at_once() -> None:
    frame = describe_groups(300_000)[4:]
    header = parse_request_header(frame)
    steps, request = run_steps(decode_request_in_steps(frame, header))
    assert steps >= 300_000 // STEP_ELEMENTS
    assert request == decode_request(frame, header)[1]
    forged = frame[:-1]  # the last name's length runs past the end
    with pytest.raises(MalformedRequest, match="OutOfBounds"):
        run_steps(decode_request_in_steps(forged, parse_request_header(forged)))


def receive(connection: Connection, data: bytes) -> None:
    """``data`` read as the transport reads it, into the buffers the connection hands out (each may be smaller)."""
    view = memoryview(data)
    while view:
        buffer = connection.get_buffer(len(view))
        size = min(len(buffer), len(view))
        buffer[:size] = view[:size]
        connection.buffer_updated(size)
        view = view[size:]


def serve_recording_describe(server: KafkaServer) -> list[int]:
    """DescribeGroups answered with nothing (the test reads only the order), its correlation ids noted."""
    handled: list[int] = []

    async def describe(context: RequestContext, request: Any) -> Any:
        handled.append(context.correlation_id)
        return None

    server.handlers = {**server.handlers,
                       DESCRIBE_GROUPS: HandlerEntry(DESCRIBE_GROUPS, "DescribeGroups", 0, 5, describe)}
    return handled


def test_a_ping_on_another_connection_is_answered_while_a_large_request_is_decoded(broker: Broker) -> None:
    """Decoded inside the read, the large request's walk ran before anything else; in steps, a ping read after it on
    another connection is answered before its handler runs; its own connection's next request is answered after it
(that it is not started before the body is read is the refusal test's)."""
    async def run() -> None:
        server = KafkaServer(broker)
        handled = serve_recording_describe(server)
        large = describe_groups(200_000, correlation_id=1)
        assert len(large) >= ANSWERED_IN_STEPS_FROM
        wide, wide_transport = connect(server)
        receive(wide, large + api_versions(2))
        pinger, pinged = connect(server)
        receive(pinger, api_versions(3))
        while not pinged.correlation_ids():
            await asyncio.sleep(0)
        assert handled == [], "the large request was decoded and handled before the ping was answered"
        while wide_transport.correlation_ids() != [2]:
            await asyncio.sleep(0)
        assert handled == [1]
        wide.abort()
        pinger.abort()

    asyncio.run(run())


def test_a_large_request_refused_in_steps_closes_its_connection_and_nothing_after_it_starts(broker: Broker) -> None:
    """As a request refused inside the read: the answers before it go out, the requests after it are never started
    (a Produce behind a forged body must not be applied), and the connection closes."""
    async def run() -> None:
        server = KafkaServer(broker)
        handled = serve_recording_describe(server)
        forged = bytearray(describe_groups(100_000, correlation_id=2))
        forged[-2:] = b"\x7f\xff"  # the last name claims 32,767 bytes
        connection, transport = connect(server)
        receive(connection, api_versions(1) + bytes(forged) + describe_groups(1, correlation_id=3)
                + api_versions(4))
        await settle()
        while not transport.closed:
            await asyncio.sleep(0)
        assert transport.correlation_ids() == [1]
        assert handled == []
        assert server.quotas.requests_in_flight == 0

    asyncio.run(run())
