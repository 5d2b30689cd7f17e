"""The server's back-pressure, driven through its protocol callbacks with a recording transport: which requests
start, when reading pauses and resumes, and that answers still leave in request order. No sockets, one loop."""

from __future__ import annotations

import asyncio
import datetime
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.fetch.v12 import request as fetch_v12
from logwright.compat import broker_commits
from logwright.compat.broker import Broker
from logwright.compat.registry import HandlerEntry, RequestContext, make
from logwright.compat.server import Connection, KafkaServer
from logwright.compat.turns import give_way
from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import decode_response, encode_request
from logwright.compat.wiring import compose_broker
from logwright.core.clock import ManualClock
from logwright.eventstore import batch_files
from logwright.eventstore.file_ranges import FileRange
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import PluginHost

from tests.compat.test_commit_written_ahead import TOPIC as AHEAD_TOPIC
from tests.compat.test_commit_written_ahead import produce_frame
from tests.eventstore.support import new_topic, produce


class RecordingTransport(asyncio.Transport):
    """What the server did to its socket: the bytes written, whether it reads, whether it closed."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.reading = True
        self.closed = False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("10.0.0.9", 5555) if name == "peername" else default

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def write(self, data: Any) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.closed

    def is_reading(self) -> bool:
        return self.reading

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.closed = True

    def correlation_ids(self) -> list[int]:
        ids, position = [], 0
        while position < len(self.written):
            (size,) = struct.unpack_from(">i", self.written, position)
            ids.append(struct.unpack_from(">i", self.written, position + 4)[0])
            position += 4 + size
        return ids


class SlowSocketTransport(RecordingTransport):
    """asyncio's socket transport over a peer that reads ``room`` bytes at a time: what the socket does not take
    is copied into the transport's buffer (counted), ``pause_writing`` while any is left, ``resume_writing``
    once the peer read it all, as the server's write-buffer limits of 0 ask."""

    def __init__(self, room: int) -> None:
        super().__init__()
        self.protocol: Connection | None = None
        self.room = room
        self.buffer = bytearray()
        self.copied = 0
        self.largest_write = 0
        self.paused = False
        self.fail_writes = False
        self.writes_after_close = 0

    def write(self, data: Any) -> None:
        if self.closed or self.fail_writes:  # a failed send closes the transport; later writes are dropped
            self.closed = True
            self.writes_after_close += 1
            return
        self.largest_write = max(self.largest_write, len(data))
        if not self.buffer:
            taken = min(self.room, len(data))
            self.written += data[:taken]
            self.room -= taken
            data = data[taken:]
        self.buffer += data
        self.copied += len(data)
        if self.buffer and not self.paused and self.protocol is not None:
            self.paused = True
            self.protocol.pause_writing()

    def get_write_buffer_size(self) -> int:
        return len(self.buffer)

    def peer_reads(self, count: int) -> None:
        self.room += count
        taken = min(self.room, len(self.buffer))
        self.written += self.buffer[:taken]
        del self.buffer[:taken]
        self.room -= taken
        if not self.buffer and self.paused and self.protocol is not None:
            self.paused = False
            self.protocol.resume_writing()


BIG_KEY = 32000


def serve_big_answers(server: KafkaServer, size: int) -> None:
    """An extension key whose answer is ``size`` bytes: the pieces a large Fetch answer would be."""
    async def handle(context: RequestContext, body: bytes) -> bytes:
        return bytes(size)

    server.handlers = {**server.handlers, BIG_KEY: HandlerEntry(BIG_KEY, "Big", 0, 0, handle)}  # not the global table


def request(api_key: int, correlation_id: int, padding: int = 0) -> bytes:
    payload = struct.pack(">hhih", api_key, 0, correlation_id, 4) + b"test" + bytes(padding)
    return struct.pack(">i", len(payload)) + payload


def api_versions(correlation_id: int, padding: int = 0) -> bytes:
    """A framed ApiVersions v0 request; ``padding`` bytes after its body are ignored, as Kafka ignores them."""
    payload = struct.pack(">hhih", 18, 0, correlation_id, 4) + b"test" + bytes(padding)
    return struct.pack(">i", len(payload)) + payload


GATED_KEY = 32001


def serve_gated_answers(server: KafkaServer, gates: dict[int, asyncio.Future[None]]) -> None:
    """An extension key answering each request once its correlation id's gate opens (at once without a gate)."""
    async def handle(context: RequestContext, body: bytes) -> bytes:
        gate = gates.get(context.correlation_id)
        if gate is not None:
            await gate
        return b"ok"

    server.handlers = {**server.handlers, GATED_KEY: HandlerEntry(GATED_KEY, "Gated", 0, 0, handle)}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    clock = ManualClock()
    store = RocksEventStore(tmp_path / "data", clock=clock)
    served = compose_broker(store, PluginHost.load(installed=False), clock=clock)
    yield served
    served.coordinators.close()
    served.commit_now()
    store.close()


def with_limits(broker: Broker, **limits: str) -> Broker:
    broker.settings.overrides.update(limits)
    return broker


def connect(server: KafkaServer) -> tuple[Connection, RecordingTransport]:
    connection, transport = Connection(server), RecordingTransport()
    connection.connection_made(transport)
    return connection, transport


def receive(connection: Connection, data: bytes) -> None:
    buffer = connection.get_buffer(len(data))
    buffer[: len(data)] = data
    connection.buffer_updated(len(data))


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_connection_starts_at_most_its_in_flight_limit_and_answers_all_in_order(broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(with_limits(broker, **{"logwright.max.in.flight.requests.per.connection": "2"}))
        connection, transport = connect(server)
        receive(connection, b"".join(api_versions(correlation_id) for correlation_id in range(5)))
        assert server.quotas.requests_in_flight == 2
        assert not transport.reading, "reading went on with the pipeline full"
        await settle()
        assert transport.correlation_ids() == [0, 1, 2, 3, 4]
        assert transport.reading and server.quotas.requests_in_flight == 0
        connection.abort()

    asyncio.run(run())


def test_a_connections_requests_in_flight_hold_at_most_socket_request_max_bytes(broker: Broker) -> None:
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gates = {correlation_id: loop.create_future() for correlation_id in range(3)}
        server = KafkaServer(with_limits(broker, **{"socket.request.max.bytes": "1024"}))
        serve_gated_answers(server, gates)
        connection, transport = connect(server)
        receive(connection, b"".join(request(GATED_KEY, correlation_id, padding=580) for correlation_id in range(3)))
        assert (server.quotas.requests_in_flight, server.quotas.request_bytes_in_flight) == (1, 594)
        assert not transport.reading
        for gate in gates.values():
            gate.set_result(None)
        await settle()
        assert transport.correlation_ids() == [0, 1, 2]
        assert server.quotas.request_bytes_in_flight == 0 and transport.reading
        connection.abort()

    asyncio.run(run())


def fetch_from_start(topic: str) -> Any:
    """Fetch v12 of partition 0 of ``topic`` from offset 0, up to 1 MB, no wait."""
    return make(fetch_v12.FetchRequest, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=10**6, topics=(
        make(fetch_v12.FetchTopic, topic=topic, partitions=(make(
            fetch_v12.FetchPartition, partition=0, fetch_offset=0, partition_max_bytes=10**6),)),),
        forgotten_topics_data=())


def test_one_fetch_at_a_time_per_connection(broker: Broker) -> None:
    """A second Fetch waits for the first's answer (so one connection holds one fetch.max.bytes of answers);
    what follows it waits too, answers stay in order."""
    fetch = fetch_from_start("missing")

    async def run() -> None:
        server = KafkaServer(broker)
        connection, transport = connect(server)
        fetches = b"".join(encode_frame(encode_request(fetch, correlation_id, "test")) for correlation_id in (1, 2))
        answered_before_start: dict[int, list[int]] = {}
        dispatch_now = connection._dispatch

        def dispatch(frame: bytes | bytearray, just_read: bool = False) -> bool:
            answered_before_start[int.from_bytes(frame[4:8], "big")] = transport.correlation_ids()
            return dispatch_now(frame, just_read)

        connection._dispatch = dispatch  # type: ignore[method-assign]
        receive(connection, fetches + api_versions(3))
        await settle()
        assert answered_before_start == {1: [], 2: [1], 3: [1]}, "a Fetch started before the one ahead was answered"
        assert transport.correlation_ids() == [1, 2, 3]
        connection.abort()

    asyncio.run(run())


def test_a_large_answer_leaves_in_slices_uncopied_and_reading_waits_for_the_peer(broker: Broker) -> None:
    """A 20 MB answer to a peer reading 1 MiB at a time: the transport gets bounded slices only while it holds
    nothing (it copies at most one slice's remainder each time, never the answer), reading stops while more than
    4 MiB are unsent and the requests read meanwhile wait; all leaves in order once the peer reads."""
    size = 20 * 1024 * 1024

    async def run() -> None:
        server = KafkaServer(broker)
        serve_big_answers(server, size)
        connection, transport = Connection(server), SlowSocketTransport(room=100_000)
        transport.protocol = connection
        connection.connection_made(transport)
        receive(connection, request(BIG_KEY, 1))
        await settle()
        assert len(transport.written) == 100_000 and transport.largest_write <= 256 * 1024
        assert connection.unsent_bytes == size + 8 - 100_000
        assert not transport.reading, "reading went on with 20 MB unsent"
        receive(connection, api_versions(2))  # read before the pause took effect: waits, not started
        assert server.quotas.requests_in_flight == 0
        await settle()
        while len(transport.written) < size - 4 * 1024 * 1024:
            transport.peer_reads(1024 * 1024)
            await asyncio.sleep(0)  # the next slices are handed over in the turn after resume_writing
            assert transport.largest_write <= 256 * 1024 and len(transport.buffer) <= 256 * 1024
        await settle()
        assert not transport.reading and server.quotas.requests_in_flight == 0, "read on with 4 MiB unsent"
        while connection.unsent_bytes or transport.buffer:
            transport.peer_reads(1024 * 1024)
            await settle()
        assert transport.correlation_ids() == [1, 2] and transport.reading
        assert transport.copied < size // 4, f"{transport.copied} of {size} bytes were copied"
        connection.abort()

    asyncio.run(run())


def test_a_socket_that_takes_everything_is_handed_a_large_answer_over_several_turns(broker: Broker) -> None:
    """Loopback takes whatever it is given: an 18 MB answer went to it in one 180 ms stretch, every other client
    waiting. The pump hands it 16 slices (4 MiB) a turn."""
    size = 10 * 1024 * 1024

    async def run() -> None:
        server = KafkaServer(broker)
        serve_big_answers(server, size)
        connection, transport = connect(server)
        receive(connection, request(BIG_KEY, 1))
        written: list[int] = []
        for _ in range(10):
            await asyncio.sleep(0)
            written.append(len(transport.written))
        steps = [after - before for before, after in zip([0, *written], written, strict=False) if after > before]
        assert len(steps) == 3 and max(steps) <= 4 * 1024 * 1024, written
        assert written[-1] == size + 8 and transport.correlation_ids() == [1]
        connection.abort()

    asyncio.run(run())


def test_a_closed_connection_drops_its_unsent_answers_and_an_idle_one_that_does_not_read_is_dropped(
        broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(with_limits(broker, **{"connections.max.idle.ms": "1000"}))
        serve_big_answers(server, 10 * 1024 * 1024)
        lost, lost_transport = Connection(server), SlowSocketTransport(room=0)
        stalled, stalled_transport = Connection(server), SlowSocketTransport(room=0)
        for connection, transport in ((lost, lost_transport), (stalled, stalled_transport)):
            transport.protocol = connection
            connection.connection_made(transport)
            receive(connection, request(BIG_KEY, 1))
        await settle()
        assert lost.unsent_bytes > 9 * 1024 * 1024 and stalled.unsent_bytes > 9 * 1024 * 1024
        lost_transport.fail_writes = True  # the next send fails: connection_lost comes a turn later
        lost_transport.peer_reads(1024 * 1024)
        await asyncio.sleep(0)  # the pump runs in the turn after resume_writing (`Connection.resume_writing`)
        assert lost.unsent_bytes == 0 and lost_transport.writes_after_close == 1, "wrote on to a lost socket"
        lost.connection_lost(ConnectionResetError())
        await settle()
        assert lost.unsent_bytes == 0 and lost_transport.closed and lost not in server.connections
        assert isinstance(broker.clock, ManualClock)
        broker.clock.advance(1000)
        server._close_idle_now()
        await settle()
        assert stalled_transport.closed and stalled.unsent_bytes == 0 and not server.connections
        assert server.quotas.open_total == 0 and server.quotas.requests_in_flight == 0

    asyncio.run(run())


def test_queued_max_requests_holds_other_connections_until_a_slot_frees(broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(with_limits(broker, **{"queued.max.requests": "1"}))
        gates = {1: asyncio.get_running_loop().create_future()}
        serve_gated_answers(server, gates)
        first, first_transport = connect(server)
        second, second_transport = connect(server)
        receive(first, request(GATED_KEY, 1))
        receive(second, request(GATED_KEY, 2))
        assert server.quotas.requests_in_flight == 1
        assert second_transport.reading, "paused for the one request it waits with"
        receive(second, request(GATED_KEY, 3))
        assert not second_transport.reading, "the second connection read on with two requests waiting for a slot"
        gates[1].set_result(None)
        await settle()
        assert first_transport.correlation_ids() == [1]
        assert second_transport.correlation_ids() == [2, 3]
        assert second_transport.reading and server.quotas.requests_in_flight == 0
        first.abort()
        second.abort()

    asyncio.run(run())


def test_an_idle_connection_closes_on_the_broker_clock_and_a_busy_one_does_not(broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(with_limits(broker, **{"connections.max.idle.ms": "1000"}))
        idle, idle_transport = connect(server)
        busy, busy_transport = connect(server)
        answer_now = asyncio.Event()

        async def handle(context: RequestContext, body: bytes) -> bytes:
            await answer_now.wait()
            return b""

        server.handlers = {**server.handlers, BIG_KEY: HandlerEntry(BIG_KEY, "Slow", 0, 0, handle)}  # a copy
        receive(busy, request(BIG_KEY, 1))  # in flight: busy, whatever the clock says
        assert isinstance(broker.clock, ManualClock)
        broker.clock.advance(999)
        server._close_idle_now()
        assert not idle_transport.closed
        broker.clock.advance(1)
        server._close_idle_now()
        await settle()
        assert idle_transport.closed and not busy_transport.closed
        assert idle not in server.connections and server.quotas.open_total == 1
        busy.abort()

    asyncio.run(run())


def store_in_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RocksEventStore, list[bytes]]:
    """A store whose topic "t" holds 96 KB of batches in one batch file, opened afresh (nothing in the tail cache,
    so a read of them is one `FileRange`), and those batches' bytes."""
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 0)  # the first batches go to a file too
    store = RocksEventStore(tmp_path / "data")
    new_topic(store, "t", 1)
    for _ in range(12):
        produce(store, 0, record_count=10, payload_size=8_000)
    store.commit()
    store.close()
    store = RocksEventStore(tmp_path / "data")
    return store, store.read_batches(0, 0, 10**6)


class CorkedSocket:
    """The socket a transport sends through (asyncio's ``_sock``): takes at most ``room`` bytes of a send into the
    transport's record, and keeps each send's flags."""

    def __init__(self, transport: RecordingTransport, room: int) -> None:
        self.transport = transport
        self.room = room
        self.flags: list[int] = []

    def send(self, data: Any, flags: int = 0) -> int:
        self.flags.append(flags)
        taken = min(self.room, len(data))
        self.transport.written += data[:taken]
        self.room -= taken
        return taken


@pytest.mark.parametrize("room", [None, 10**6, 10], ids=["no-socket", "taken-whole", "taken-in-part"])
def test_a_fetch_answer_with_a_range_of_a_batch_file_is_written_whole_the_bytes_before_it_held_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, room: int | None) -> None:
    """Batches read back from their file come as one `FileRange`. The answer's bytes before it are sent straight to
    the transport's socket with MSG_MORE, so the kernel sends them with the range rather than as a packet of their
    own; what the socket does not take goes through the transport, before the range, and the answer behind it
    follows. A transport with no socket (``room`` None) is handed every byte, the range's in its place. An answer
    with no range never touches the socket."""
    store, stored = store_in_one_file(tmp_path, monkeypatch)
    assert [type(piece) for piece in store.read_batch_pieces(0, 0, 10**6)] == [FileRange]
    served = compose_broker(store, PluginHost.load(installed=False))

    async def run() -> None:
        server = KafkaServer(served)
        connection, transport = connect(server)
        corked = CorkedSocket(transport, room if room is not None else 0)
        if room is not None:
            transport._sock = corked  # type: ignore[attr-defined]
        receive(connection, api_versions(4))
        await settle()
        assert corked.flags == []  # no range in the answer: the transport alone
        receive(connection, encode_frame(encode_request(fetch_from_start("t"), 5, "test")) + api_versions(6))
        await settle()
        assert corked.flags == ([socket.MSG_MORE] if room is not None else [])
        assert transport.correlation_ids() == [4, 5, 6]
        (first,) = struct.unpack_from(">i", transport.written, 0)
        (size,) = struct.unpack_from(">i", transport.written, 4 + first)
        correlation_id, answer = decode_response(1, 12, bytes(transport.written[8 + first:8 + first + size]))
        assert correlation_id == 5 and answer.responses[0].partitions[0].records == b"".join(stored)
        connection.abort()

    try:
        asyncio.run(run())
    finally:
        served.coordinators.close()
        store.close()


def test_a_lone_answer_is_written_without_waiting_a_turn_and_answers_keep_request_order(broker: Broker) -> None:
    """The only request in flight on a connection is written when its answer is queued, not a turn later by a
    scheduled pump (a ping behind a 5,000-partition request waited through one more of its stretches); answers of
    pipelined requests are gathered for one write, in request order, a request answered before the one ahead of it
    waiting for it."""
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gates = {1: loop.create_future(), 3: loop.create_future()}
        server = KafkaServer(broker)
        serve_gated_answers(server, gates)
        connection, transport = connect(server)
        receive(connection, request(GATED_KEY, 1))
        await settle()
        gates[1].set_result(None)
        await asyncio.sleep(0)  # the handler's task resumes and ends
        await asyncio.sleep(0)  # its done callback queues the answer, written at once
        assert transport.correlation_ids() == [1]
        receive(connection, request(GATED_KEY, 3) + request(GATED_KEY, 4))
        await settle()
        assert transport.correlation_ids() == [1], "4 is answered but waits for 3"
        gates[3].set_result(None)
        await settle()
        assert transport.correlation_ids() == [1, 3, 4]
        assert server.quotas.requests_in_flight == 0
        connection.abort()

    asyncio.run(run())


def test_an_answer_its_read_finished_is_written_in_that_read_ahead_of_what_the_loop_has_queued(broker: Broker) -> None:
    """A request whose handler ends in its first step (ApiVersions) is answered from the read that started it, not
    by a callback queued behind what is already waiting (a commit of a producer's 500 KB batch, 0.6-0.8 ms here, was
    in front of a ping's answer); pipelined, it still waits for the answer ahead of it; and one read just before a
    request that closes the connection is still sent, then the connection closes."""
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gates = {2: loop.create_future()}
        server = KafkaServer(broker)
        serve_gated_answers(server, gates)
        connection, transport = connect(server)
        seen_by_queued: list[list[int]] = []
        loop.call_soon(lambda: seen_by_queued.append(transport.correlation_ids()))
        receive(connection, api_versions(1))
        assert transport.correlation_ids() == [1], "the answer waited for a later turn"
        receive(connection, request(GATED_KEY, 2) + api_versions(3))
        await settle()
        assert seen_by_queued == [[1]]
        assert transport.correlation_ids() == [1], "3 is answered but waits for 2"
        gates[2].set_result(None)
        await settle()
        assert transport.correlation_ids() == [1, 2, 3]
        assert server.quotas.requests_in_flight == 0 and transport.reading

        closing, closing_transport = connect(server)
        receive(closing, api_versions(4) + struct.pack(">i", 2) + b"\x00\x12")  # a header cut short: closes
        assert closing_transport.correlation_ids() == [4] and closing_transport.closed
        assert server.quotas.requests_in_flight == 0
        connection.abort()

    asyncio.run(run())


def test_a_request_read_after_a_large_batch_is_answered_before_that_batchs_commit_writes_it(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit of `COMMIT_GIVES_WAY_FROM` or more of batch-file bytes waits one more turn: a ping read while the
    producer's handler ran (queued, as the loop's next poll queues it, behind the commit that handler scheduled) is
    answered before the commit's write, not after it (0.4-0.5 ms of writev for 500 KB here)."""
    monkeypatch.setattr(broker_commits, "WRITE_AHEAD_AFTER_NS", 10**18)  # written on the loop, where order shows
    events: list[str] = []
    write_all = batch_files._write_all

    def writing(fd: int, buffers: list[Any]) -> None:
        events.append("batch written")
        write_all(fd, buffers)

    monkeypatch.setattr(batch_files, "_write_all", writing)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        broker.create_topic(AHEAD_TOPIC, 1)
        broker.commit_now()
        server = KafkaServer(broker)
        producer, produced = connect(server)
        pinger, pinged = connect(server)
        pinged_write = pinged.write

        def answered(data: Any) -> None:
            events.append("ping answered")
            pinged_write(data)

        pinged.write = answered  # type: ignore[method-assign]
        frame = encode_frame(produce_frame(1, 300, 1024))
        for start in range(0, len(frame), 128 * 1024):  # as the socket hands it over, a read at a time
            receive(producer, frame[start : start + 128 * 1024])
        loop.call_soon(receive, pinger, api_versions(2))  # read by the loop's next poll
        await settle()
        assert events == ["ping answered", "batch written"]
        assert pinged.correlation_ids() == [2] and produced.correlation_ids() == [1]
        producer.abort()
        pinger.abort()

    asyncio.run(run())


def test_the_last_answer_to_a_peer_that_closed_its_side_is_written_once_and_counted_once(broker: Broker) -> None:
    """The lone answer written at once (above) may be the last one owed to a closing connection: the connection then
    finishes inside that write, and the answer must not be counted as answered a second time after it (that raised
    in the done callback: 'pop from an empty deque')."""
    async def run() -> None:
        loop = asyncio.get_running_loop()
        failures: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _, context: failures.append(context))
        gates = {1: loop.create_future()}
        server = KafkaServer(broker)
        serve_gated_answers(server, gates)
        connection, transport = connect(server)
        receive(connection, request(GATED_KEY, 1))
        await settle()
        connection.eof_received()  # the client shut down its side with the request in flight
        gates[1].set_result(None)
        await settle()
        assert failures == []
        assert transport.correlation_ids() == [1] and transport.closed
        assert server.quotas.requests_in_flight == 0 and server.quotas.request_bytes_in_flight == 0
        assert connection not in server.connections

    asyncio.run(run())


SLICED_KEY = 32002


def test_a_request_read_during_a_long_sliced_one_is_answered_behind_at_most_one_more_slice(broker: Broker) -> None:
    """Read, its task's step, its answer's callback: three turns, each behind whatever is ready before it. A long
    request that yields one turn between its slices made a ping wait through three more slices; `give_way` waits as
    many turns as the ping needs."""
    async def run() -> None:
        slices: list[int] = []
        server = KafkaServer(broker)

        async def sliced(context: RequestContext, body: bytes) -> bytes:
            for index in range(12):
                slices.append(index)
                await give_way()
            return b"done"

        server.handlers = {**server.handlers, SLICED_KEY: HandlerEntry(SLICED_KEY, "Sliced", 0, 0, sliced)}
        long_one, _ = connect(server)
        receive(long_one, request(SLICED_KEY, 1))
        while len(slices) < 3:
            await asyncio.sleep(0)
        pinger, pinged = connect(server)
        receive(pinger, api_versions(7))
        before = len(slices)
        while not pinged.correlation_ids():
            await asyncio.sleep(0)
        assert len(slices) - before <= 1, f"the ping waited behind {len(slices) - before} more slices"
        while len(slices) < 12:
            await asyncio.sleep(0)
        await settle()
        long_one.abort()
        pinger.abort()

    asyncio.run(run())


def test_slots_freed_by_answers_go_to_the_waiting_line_a_turn_later_and_a_newcomer_queues_behind_it(
        broker: Broker) -> None:
    """Answers first, then the line: the connections waiting for ``queued.max.requests`` slots are started in the
    turn after the answers that freed them, all together, not one between two answers (1,000 committing groups over
    500 slots: each next commit's start spread the answers out, the client slept between them and every send woke it
    across CPUs; deferred, 5,300-5,650 -> 6,200-7,150 commits/s and p99 245 -> 213 ms). A connection that reads in
    between must not take those slots: it queues behind the line."""
    async def run() -> None:
        loop = asyncio.get_running_loop()
        gates = {1: loop.create_future()}
        started: list[int] = []
        server = KafkaServer(with_limits(broker, **{"queued.max.requests": "1"}))
        serve_gated_answers(server, gates)
        handle = server.handlers[GATED_KEY].handle

        async def recording(context: RequestContext, body: bytes) -> bytes:
            started.append(context.correlation_id)
            answer: bytes = await handle(context, body)
            return answer

        server.handlers[GATED_KEY] = HandlerEntry(GATED_KEY, "Gated", 0, 0, recording)  # serve_gated_answers' copy
        newcomer, newcomer_transport = connect(server)
        in_flight_when_answered: list[int] = []
        requests_finished = server.requests_finished

        def finished_then_a_newcomer_reads(count: int) -> None:
            requests_finished(count)
            if not in_flight_when_answered:
                in_flight_when_answered.append(server.quotas.requests_in_flight)
                receive(newcomer, request(GATED_KEY, 3))

        server.requests_finished = finished_then_a_newcomer_reads  # type: ignore[method-assign]
        first, _ = connect(server)
        waiting, waiting_transport = connect(server)
        receive(first, request(GATED_KEY, 1))
        await settle()
        receive(waiting, request(GATED_KEY, 2))  # waits for the slot the first holds
        await settle()
        assert started == [1]
        gates[1].set_result(None)
        await settle()
        assert in_flight_when_answered == [0], "the waiting connection started before the turn after the answers"
        assert started == [1, 2, 3], "the newcomer read while the freed slot was the line's, and went first"
        assert waiting_transport.correlation_ids() == [2] and newcomer_transport.correlation_ids() == [3]
        for connection in (first, waiting, newcomer):
            connection.abort()

    asyncio.run(run())
