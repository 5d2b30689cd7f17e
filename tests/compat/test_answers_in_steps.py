"""A large request's answer is written in steps, the loop serving other connections between them.

A million-partition ElectLeaders asked for a 41 MB answer whose million entities took 470 ms to write and join in
one stretch, every other client waiting. `encode_response_frame_in_steps` writes the same bytes, pausing every
`PARTS_PER_STEP` parts; the server uses it for requests of `ANSWERED_IN_STEPS_FROM` bytes or more.
"""

from __future__ import annotations

import asyncio
import datetime
import struct
from collections.abc import Generator
from typing import Any, TypeVar

from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.compat.broker import Broker
from logwright.compat.registry import HandlerEntry, RequestContext, make
from logwright.compat.request_dispatch import ANSWERED_IN_STEPS_FROM
from logwright.compat.server import KafkaServer
from logwright.compat.wire.encoder import Encoded, encode_entity
from logwright.compat.wire.messages import (
    KNOWN_VERSIONS,
    PARTS_PER_STEP,
    decode_response,
    encode_response_frame,
    encode_response_frame_in_steps,
    response_type,
)

from tests.compat.test_server_backpressure import api_versions, broker, connect, receive, settle
from tests.compat.test_wire_encoder import TOLERANT

__all__ = ["broker"]  # the fixture, used by name

RESPONSES = [response_type(api_key, version) for api_key, versions in KNOWN_VERSIONS.items() for version in versions]
ELECT_LEADERS = 43
Result = TypeVar("Result")


def run_steps(steps: Generator[None, None, Result]) -> tuple[int, Result]:
    """Run ``steps`` to its end: how many times it paused, and what it returned."""
    count = 0
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return count, done.value
        count += 1


def elect_leaders_answer(topics: int, partitions: int, message: str = "not needed") -> Any:
    from kio.schema.elect_leaders import v2
    module = v2.response
    return make(module.ElectLeadersResponse, throttle_time=datetime.timedelta(0), error_code=0,
                replica_election_results=tuple(
                    make(module.ReplicaElectionResult, topic=f"topic-{topic}", partition_result=tuple(
                        make(module.PartitionResult, partition_id=index, error_code=84, error_message=message)
                        for index in range(partitions)))
                    for topic in range(topics)))


@settings(TOLERANT, max_examples=300)
@given(st.sampled_from(RESPONSES).flatmap(st.from_type), st.integers(-(2**31), 2**31 - 1))
def test_the_same_frame_as_written_at_once_for_every_response_class(response: Any, correlation_id: int) -> None:
    cls = type(response)
    _, pieces = run_steps(encode_response_frame_in_steps(cls.__api_key__, cls.__version__, correlation_id, response))
    assert b"".join(pieces) == b"".join(encode_response_frame(cls.__api_key__, cls.__version__, correlation_id,
                                                              response))


def test_a_wide_answer_pauses_every_few_thousand_entities_and_leaves_as_a_few_joined_pieces() -> None:
    answer = elect_leaders_answer(1, 60_000)
    steps, pieces = run_steps(encode_response_frame_in_steps(ELECT_LEADERS, 2, 7, answer))
    parts = 60_000 * 3  # a partition's fixed fields, its message's length, its message (then tagged fields)
    assert steps >= parts // (2 * PARTS_PER_STEP), f"{steps} steps for {parts} parts"
    assert len(pieces) <= steps + 2
    assert decode_response(ELECT_LEADERS, 2, b"".join(pieces)[4:]) == (7, answer)


def test_nested_arrays_shorter_than_a_step_are_stepped_through_too() -> None:
    """250 topics of 250 partitions each: no array reaches `STEP_ITEMS`, the answer is 62,500 entities long."""
    answer = elect_leaders_answer(250, 250)
    steps, pieces = run_steps(encode_response_frame_in_steps(ELECT_LEADERS, 2, 7, answer))
    assert steps >= 250 * 250 * 3 // (2 * PARTS_PER_STEP)
    assert b"".join(pieces) == b"".join(encode_response_frame(ELECT_LEADERS, 2, 7, answer))


def test_an_entity_answered_again_stays_by_reference_across_steps() -> None:
    """`answered_once`'s repeats (`Encoded`, 256 bytes or more) are handed to the socket by reference, never copied,
    in whichever step they come."""
    from kio.schema.elect_leaders import v2
    module = v2.response
    repeated = Encoded(encode_entity(make(module.PartitionResult, partition_id=1, error_code=84,
                                          error_message="x" * 400)))
    partitions = (make(module.PartitionResult, partition_id=0, error_code=84, error_message="first"),
                  *(repeated,) * 40_000)
    answer = make(module.ElectLeadersResponse, throttle_time=datetime.timedelta(0), error_code=0,
                  replica_election_results=(make(module.ReplicaElectionResult, topic="t",
                                                 partition_result=partitions),))
    steps, pieces = run_steps(encode_response_frame_in_steps(ELECT_LEADERS, 2, 7, answer))
    assert steps > 1
    assert sum(piece is repeated for piece in pieces) == 40_000 - 1  # the first time copied with its neighbours
    assert b"".join(pieces) == b"".join(encode_response_frame(ELECT_LEADERS, 2, 7, answer))


def elect_leaders_request(partitions: int, correlation_id: int) -> bytes:
    """ElectLeaders v0 naming ``partitions`` partitions of topic t."""
    body = (struct.pack(">ih", 1, 1) + b"t" + struct.pack(f">i{partitions}i", partitions, *range(partitions))
            + struct.pack(">i", 1000))
    payload = struct.pack(">hhih", ELECT_LEADERS, 0, correlation_id, 4) + b"test" + body
    return struct.pack(">i", len(payload)) + payload


def test_a_ping_read_while_a_large_answer_is_written_is_answered_before_it(broker: Broker) -> None:
    """The handler answers at once, no turn given; the writing of its 60,000 entities gives way: a ping read on
    another connection meanwhile is answered first. Written in one stretch, the large answer went out first."""
    async def run() -> None:
        from kio.schema.elect_leaders import v0
        module = v0.response
        answer = make(module.ElectLeadersResponse, throttle_time=datetime.timedelta(0), replica_election_results=(
            make(module.ReplicaElectionResult, topic="t", partition_result=tuple(
                make(module.PartitionResult, partition_id=index, error_code=84, error_message="not needed")
                for index in range(60_000))),))
        handled: list[int] = []

        async def elect(context: RequestContext, request: Any) -> Any:
            handled.append(context.correlation_id)
            return answer

        server = KafkaServer(broker)
        server.handlers = {**server.handlers, ELECT_LEADERS: HandlerEntry(ELECT_LEADERS, "ElectLeaders", 0, 2, elect)}
        large = elect_leaders_request(20_000, 1)
        assert len(large) >= ANSWERED_IN_STEPS_FROM
        wide, wide_transport = connect(server)
        receive(wide, large)
        while not handled:
            await asyncio.sleep(0)
        pinger, pinged = connect(server)
        receive(pinger, api_versions(2))
        while not pinged.correlation_ids():
            await asyncio.sleep(0)
        assert wide_transport.correlation_ids() == [], "the large answer was written before the ping's"
        while not wide_transport.correlation_ids():
            await asyncio.sleep(0)
        assert decode_response(ELECT_LEADERS, 0, bytes(wide_transport.written[4:])) == (1, answer)
        await settle()
        wide.abort()
        pinger.abort()

    asyncio.run(run())
