"""The server's back-pressure, driven through its protocol callbacks with a recording transport: which requests
start, when reading pauses and resumes, and that answers still leave in request order. No sockets, one loop."""

from __future__ import annotations

import asyncio
import datetime
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.fetch.v12 import request as fetch_v12
from logwright.compat.broker import Broker
from logwright.compat.registry import make
from logwright.compat.server import Connection, KafkaServer
from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import encode_request
from logwright.compat.wiring import compose_broker
from logwright.core.clock import ManualClock
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import PluginHost


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


def api_versions(correlation_id: int, padding: int = 0) -> bytes:
    """A framed ApiVersions v0 request; ``padding`` bytes after its body are ignored, as Kafka ignores them."""
    payload = struct.pack(">hhih", 18, 0, correlation_id, 4) + b"test" + bytes(padding)
    return struct.pack(">i", len(payload)) + payload


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
        server = KafkaServer(with_limits(broker, **{"socket.request.max.bytes": "1024"}))
        connection, transport = connect(server)
        receive(connection, b"".join(api_versions(correlation_id, padding=580) for correlation_id in range(3)))
        assert (server.quotas.requests_in_flight, server.quotas.request_bytes_in_flight) == (1, 594)
        assert not transport.reading
        await settle()
        assert transport.correlation_ids() == [0, 1, 2]
        assert server.quotas.request_bytes_in_flight == 0 and transport.reading
        connection.abort()

    asyncio.run(run())


def test_one_fetch_at_a_time_per_connection(broker: Broker) -> None:
    """A second Fetch waits for the first's answer (so one connection holds one fetch.max.bytes of answers);
    what follows it waits too, answers stay in order."""
    fetch = make(fetch_v12.FetchRequest, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=10**6, topics=(
        make(fetch_v12.FetchTopic, topic="missing", partitions=(make(
            fetch_v12.FetchPartition, partition=0, fetch_offset=0, partition_max_bytes=10**6),)),),
        forgotten_topics_data=())

    async def run() -> None:
        server = KafkaServer(broker)
        connection, transport = connect(server)
        fetches = b"".join(encode_frame(encode_request(fetch, correlation_id, "test")) for correlation_id in (1, 2))
        receive(connection, fetches + api_versions(3))
        assert server.quotas.requests_in_flight == 1
        await settle()
        assert transport.correlation_ids() == [1, 2, 3]
        connection.abort()

    asyncio.run(run())


def test_reading_pauses_while_answers_wait_in_a_full_write_buffer(broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(broker)
        connection, transport = connect(server)
        connection.pause_writing()
        assert not transport.reading
        receive(connection, api_versions(1))  # read before the pause took effect: waits, not started
        assert server.quotas.requests_in_flight == 0
        await settle()
        assert transport.correlation_ids() == []
        connection.resume_writing()
        await settle()
        assert transport.correlation_ids() == [1] and transport.reading
        connection.abort()

    asyncio.run(run())


def test_queued_max_requests_holds_other_connections_until_a_slot_frees(broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(with_limits(broker, **{"queued.max.requests": "1"}))
        first, first_transport = connect(server)
        second, second_transport = connect(server)
        receive(first, api_versions(1))
        receive(second, api_versions(2))
        assert server.quotas.requests_in_flight == 1
        assert not second_transport.reading, "the second connection read on with no slot free"
        await settle()
        assert first_transport.correlation_ids() == [1]
        assert second_transport.correlation_ids() == [2]
        assert second_transport.reading and server.quotas.requests_in_flight == 0
        first.abort()
        second.abort()

    asyncio.run(run())


def test_an_idle_connection_closes_on_the_broker_clock_and_a_busy_one_does_not(broker: Broker) -> None:
    async def run() -> None:
        server = KafkaServer(with_limits(broker, **{"connections.max.idle.ms": "1000"}))
        idle, idle_transport = connect(server)
        busy, busy_transport = connect(server)
        busy.pause_writing()
        receive(busy, api_versions(1))  # waits for the write buffer: busy, whatever the clock says
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
