"""Which requests the server starts in the turn that read them (`HandlerEntry.at_once`, `start_at_once`): a handler
that opted in, when its request was just read; never one started as a slot frees, nor one that did not opt in.
Driven through the protocol callbacks with a recording transport, as the back-pressure tests are."""

from __future__ import annotations

import asyncio
import datetime

from kio.schema.fetch.v12 import request as fetch_v12
from logwright.compat.broker import Broker
from logwright.compat.registry import HandlerEntry, RequestContext, make
from logwright.compat.server import Connection, KafkaServer
from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import decode_response, encode_request
from logwright.core.events import OffsetCommitted

from tests.compat import test_server_backpressure
from tests.compat.test_server_backpressure import connect, fetch_from_start, receive, request, settle, with_limits
from tests.eventstore.support import new_topic, produce

KEY = 32001
broker = test_server_backpressure.broker  # the fixture


async def read_in_a_callback(connection: Connection, data: bytes, steps: list[str]) -> list[str]:
    """``receive`` from a loop callback, as the transport's read is (no current task); the steps run by then."""
    loop = asyncio.get_running_loop()
    seen: asyncio.Future[list[str]] = loop.create_future()

    def read() -> None:
        receive(connection, data)
        seen.set_result(list(steps))

    loop.call_soon(read)
    return await seen


def serve_recording(server: KafkaServer, at_once: bool) -> tuple[list[str], asyncio.Event]:
    """A handler that notes whether its first step ran in a task, then waits for the gate."""
    steps: list[str] = []
    gate = asyncio.Event()

    async def handle(context: RequestContext, body: bytes) -> bytes:
        steps.append(f"{context.correlation_id}: {'in a task' if asyncio.current_task() else 'at once'}")
        await gate.wait()
        return b""

    server.handlers = {**server.handlers, KEY: HandlerEntry(KEY, "Recording", 0, 0, handle, at_once=at_once)}
    return steps, gate


def test_a_handler_that_opted_in_runs_its_first_step_within_the_read(broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(broker)
        steps, gate = serve_recording(server, at_once=True)
        connection, transport = connect(server)
        assert await read_in_a_callback(connection, request(KEY, 1) + request(KEY, 2), steps) == [
            "1: at once", "2: at once"]
        gate.set()
        await settle()
        assert transport.correlation_ids() == [1, 2]
        connection.abort()

    asyncio.run(run())


def test_a_handler_that_did_not_opt_in_starts_in_a_task_a_turn_later(broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(broker)
        steps, gate = serve_recording(server, at_once=False)
        connection, transport = connect(server)
        assert await read_in_a_callback(connection, request(KEY, 1), steps) == []
        await settle()
        assert steps == ["1: in a task"]
        gate.set()
        await settle()
        assert transport.correlation_ids() == [1]
        connection.abort()

    asyncio.run(run())


def test_a_request_started_as_a_slot_frees_starts_in_a_task_never_within_the_answers(
        broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(with_limits(broker, **{"queued.max.requests": "1"}))
        steps, gate = serve_recording(server, at_once=True)
        first, first_transport = connect(server)
        second, second_transport = connect(server)
        assert await read_in_a_callback(first, request(KEY, 1), steps) == ["1: at once"]
        assert await read_in_a_callback(second, request(KEY, 2), steps) == ["1: at once"]  # waits for the slot
        gate.set()
        await settle()
        assert steps == ["1: at once", "2: in a task"]
        assert first_transport.correlation_ids() == [1] and second_transport.correlation_ids() == [2]
        first.abort()
        second.abort()

    asyncio.run(run())


def test_an_answer_that_waits_for_the_commit_leaves_in_the_commits_own_turn(broker: Broker) -> None:
    """Read, then commit and answer: two turns, where a task per request took four (its first step waited on the
    commit's future, its wake-up came a turn later, and the done callback sending the answer one more). (Answers to
    requests pipelined on one connection are still joined into one write a turn later: `Connection._queue_answer`.)"""

    async def handle(context: RequestContext, body: bytes) -> bytes:
        context.broker.stage([OffsetCommitted("g", "t", 0, context.correlation_id, -1, "", 0)])
        await context.broker.durable()
        return b""

    async def run() -> None:
        server = KafkaServer(broker)
        server.handlers = {**server.handlers, KEY: HandlerEntry(KEY, "Committing", 0, 0, handle, at_once=True)}
        connection, transport = connect(server)
        loop = asyncio.get_running_loop()
        after_commit: asyncio.Future[list[int]] = loop.create_future()

        def read() -> None:
            receive(connection, request(KEY, 1))
            assert transport.correlation_ids() == []
            # queued behind the commit the read scheduled: it sees what the commit's turn sent
            loop.call_soon(lambda: after_commit.set_result(transport.correlation_ids()))

        loop.call_soon(read)
        assert await after_commit == [1]
        assert asyncio.all_tasks() == {asyncio.current_task()}, "no task was made for the request"
        connection.abort()

    asyncio.run(run())


def long_poll_from(offset: int, correlation_id: int) -> bytes:
    """A framed Fetch v12 of partition 0 of topic t from ``offset``, waiting up to 30 s for a byte."""
    return encode_frame(encode_request(make(
        fetch_v12.FetchRequest, max_wait=datetime.timedelta(seconds=30), min_bytes=1, max_bytes=10**6, topics=(make(
            fetch_v12.FetchTopic, topic="t", partitions=(make(
                fetch_v12.FetchPartition, partition=0, fetch_offset=offset, partition_max_bytes=10**6),)),),
        forgotten_topics_data=()), correlation_id, "test"))


def test_a_fetch_with_records_is_answered_the_turn_after_its_read_and_a_long_poll_still_waits(broker: Broker) -> None:
    """A consumer keeps one Fetch in flight: each turn the Fetch spends in the broker, its reads stop, and a busy loop's
    turns are long (beside a share consumer and a producer, a librdkafka consumer read 0.58x Kafka's rate). A Fetch
    with records to return is answered the turn after its read, not two turns after; a long poll started at once
    (outside a task, where ``asyncio.timeout`` cannot run) hands itself to a task and waits for the append."""
    store = broker.store
    new_topic(store, "t", 1)
    produce(store, 0, record_count=10)
    store.commit()
    steps: list[str] = []

    async def run() -> None:
        server = KafkaServer(broker)
        connection, transport = connect(server)
        await read_in_a_callback(connection, encode_frame(encode_request(fetch_from_start("t"), 1, "test")), steps)
        assert transport.correlation_ids() == [1], "the Fetch's answer waited another turn"
        _, answer = decode_response(1, 12, bytes(transport.written[4:]))
        assert answer.responses[0].partitions[0].high_watermark == 10
        written = len(transport.written)
        await read_in_a_callback(connection, long_poll_from(10, 2), steps)
        await settle()
        assert len(transport.written) == written, "the long poll answered before any record came"
        produce(store, 0, record_count=5)
        store.commit()
        await settle()
        assert transport.correlation_ids() == [1, 2]
        _, answer = decode_response(1, 12, bytes(transport.written[written + 4:]))
        assert answer.responses[0].partitions[0].high_watermark == 15 and answer.responses[0].partitions[0].records
        connection.abort()

    asyncio.run(run())


def test_a_long_poll_started_at_once_hears_of_records_committed_before_its_task_takes_over(broker: Broker) -> None:
    """The long poll's first step reads nothing and hands itself to a task, which registers its wait a turn later: a
    commit in that turn wakes no waiter of its, so the task reads again before it waits (it waited 30 s)."""
    store = broker.store
    new_topic(store, "t", 1)
    produce(store, 0, record_count=10)
    store.commit()

    async def run() -> None:
        server = KafkaServer(broker)
        connection, transport = connect(server)
        loop = asyncio.get_running_loop()
        read: asyncio.Future[None] = loop.create_future()

        def read_then_commit() -> None:
            receive(connection, long_poll_from(10, 1))
            produce(store, 0, record_count=5)
            store.commit()
            read.set_result(None)

        loop.call_soon(read_then_commit)
        await read
        await settle()
        assert transport.correlation_ids() == [1], "the long poll slept through the records"
        _, answer = decode_response(1, 12, bytes(transport.written[4:]))
        assert answer.responses[0].partitions[0].high_watermark == 15
        connection.abort()

    asyncio.run(run())
