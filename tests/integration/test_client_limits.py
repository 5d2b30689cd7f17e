"""What one client may make the broker hold is bounded: Kafka's broker limits and logwright's own, over TCP.

Each scenario starts a broker of its own with the limits under test (``--config``) and talks to it with raw
sockets, the bundled client and librdkafka: a client that pipelines Fetches and never reads, a Fetch and a
ShareFetch capped by the broker's ``fetch.max.bytes``, ``message.max.bytes`` and ``socket.request.max.bytes``,
connection limits, an idle connection on a manual clock, and a flood of partial frames.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from kio.schema.fetch.v12 import request as fetch
from logwright.client import Client
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import encode_request
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record

from .broker_process import BrokerProcess
from .raw_batches import fill_topic, produce_request
from .test_bad_input import _broker_still_serves, _closed, _connect, _read_response, _request
from .test_share_fetch_limits import acquire_once

pytestmark = pytest.mark.logwright_only(reason="starts brokers with limits set on the command line")

API_VERSIONS = _request(18, 0, 7, b"")


@pytest.fixture
def start_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    started: list[BrokerProcess] = []

    def start(config: dict[str, str], *extra_args: str) -> BrokerProcess:
        process = BrokerProcess(tmp_path / f"data{len(started)}", config=config, extra_args=extra_args).start()
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


def fetch_request(topic: str, max_bytes: int, partition_max_bytes: int, max_wait_ms: int = 0) -> Any:
    return make(fetch.FetchRequest, max_wait=datetime.timedelta(milliseconds=max_wait_ms), min_bytes=1,
                max_bytes=max_bytes, topics=(make(fetch.FetchTopic, topic=topic, partitions=(
                    make(fetch.FetchPartition, partition=0, fetch_offset=0,
                         partition_max_bytes=partition_max_bytes),)),), forgotten_topics_data=())


def fetched_bytes(bootstrap: str, topic: str, max_bytes: int, partition_max_bytes: int) -> int:
    async def run() -> int:
        connection = await Connection.open(bootstrap, "limits")
        try:
            answer = await connection.request(fetch_request(topic, max_bytes, partition_max_bytes))
        finally:
            await connection.close()
        partition = answer.responses[0].partitions[0]
        assert partition.error_code == 0
        return len(partition.records or b"")

    return asyncio.run(run())


def test_fetch_answers_are_capped_by_the_brokers_fetch_max_bytes(start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker({"fetch.max.bytes": "12000"})
    topic = f"capped-{uuid.uuid4().hex[:8]}"
    fill_topic(broker.bootstrap, topic, batches=6, records=5, record_bytes=1000)  # about 5.1 KB a batch
    batch = fetched_bytes(broker.bootstrap, topic, 5000, 5000)  # one batch: the first always goes whole
    assert 5000 < batch < 6000
    assert fetched_bytes(broker.bootstrap, topic, 10**8, 10**8) == 2 * batch, "the client's max_bytes won"
    assert fetched_bytes(broker.bootstrap, topic, 7000, 10**8) == batch, "the client's smaller max_bytes was ignored"
    assert asyncio.run(acquire_once(broker.bootstrap, topic, max_bytes=10**8, max_records=500, batch_size=500)) == \
        [(0, 9)], "ShareFetch's max_bytes was not capped by fetch.max.bytes"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource("BROKER", "1", incremental_configs=[
        ConfigEntry("fetch.max.bytes", "1024", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    assert fetched_bytes(broker.bootstrap, topic, 10**8, 10**8) == batch, "a cap below one batch must still " \
        "return the first batch whole (KIP-74)"


def test_message_max_bytes_and_socket_request_max_bytes(start_broker: Callable[..., BrokerProcess]) -> None:
    """The broker's message.max.bytes bounds batches of topics without their own max.message.bytes; a frame
    over socket.request.max.bytes closes its connection at its size prefix, others carry on."""
    broker = start_broker({"message.max.bytes": "3000", "socket.request.max.bytes": "8192"})
    topic = f"sizes-{uuid.uuid4().hex[:8]}"
    fill_topic(broker.bootstrap, topic, batches=1, records=2, record_bytes=1000)

    async def produce_code(batch: bytes) -> int:
        connection = await Connection.open(broker.bootstrap, "limits")
        try:
            answer = await connection.request(produce_request(topic, batch))
        finally:
            await connection.close()
        return int(answer.responses[0].partition_responses[0].error_code)

    assert asyncio.run(produce_code(build_batch([Record(0, 0, None, b"x" * 4000)]))) == 10  # MESSAGE_TOO_LARGE
    with _connect(broker.bootstrap) as sock:
        sock.sendall(encode_frame(encode_request(
            produce_request(topic, build_batch([Record(0, 0, None, b"y" * 9000)])), 1, "limits")))
        assert _closed(sock)
    with _connect(broker.bootstrap) as sock:
        sock.sendall(API_VERSIONS)
        assert _read_response(sock)[:4] == struct.pack(">i", 7)


def test_a_client_that_pipelines_fetches_and_never_reads_is_bounded(
        start_broker: Callable[..., BrokerProcess]) -> None:
    """Reading from a connection pauses while its answers wait to be written: 100 pipelined Fetches of a
    3.6 MB partition would be 360 MB of answers; the broker holds one or two of them (one Fetch runs per
    connection at a time), answers all of them in order once the client reads, and serves other clients
    meanwhile."""
    broker = start_broker({})
    topic = f"pipelined-{uuid.uuid4().hex[:8]}"
    fill_topic(broker.bootstrap, topic, batches=4, records=900, record_bytes=1000)
    broker.stop()
    broker.start()  # answers are then read from RocksDB, one copy each, not shared from the tail cache
    one_answer = fetched_bytes(broker.bootstrap, topic, 10**8, 10**8)
    assert one_answer > 3_500_000
    before = broker.resident_bytes()
    count = 100
    with _connect(broker.bootstrap) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        sock.sendall(b"".join(encode_frame(encode_request(fetch_request(topic, 10**8, 10**8), correlation_id,
                                                          "pipeliner")) for correlation_id in range(count)))
        _broker_still_serves(broker.bootstrap)
        grown = broker.resident_bytes() - before
        assert grown < 8 * one_answer, f"the broker grew by {grown} bytes for a client that does not read"
        for correlation_id in range(count):
            (size,) = struct.unpack(">i", read_exactly(sock, 4))
            assert struct.unpack_from(">i", read_exactly(sock, size))[0] == correlation_id


def read_exactly(sock: socket.socket, count: int) -> bytes:
    """``count`` bytes (``recv`` with ``MSG_WAITALL`` returns less on a socket with a timeout)."""
    received = bytearray()
    while len(received) < count:
        chunk = sock.recv(min(count - len(received), 1 << 20))
        assert chunk, "the connection was closed"
        received += chunk
    return bytes(received)


def test_connection_limits_refuse_the_extra_connection(start_broker: Callable[..., BrokerProcess]) -> None:
    """max.connections.per.ip is 1 but 127.0.0.1 may open 5 (its override); max.connections caps all at 3."""
    broker = start_broker({"max.connections": "3", "max.connections.per.ip": "1",
                           "max.connections.per.ip.overrides": "127.0.0.1:5"})
    open_sockets = [_connect(broker.bootstrap) for _ in range(3)]
    try:
        for sock in open_sockets:
            sock.sendall(API_VERSIONS)
            assert _read_response(sock)[:4] == struct.pack(">i", 7)
        with _connect(broker.bootstrap) as extra:
            assert _closed(extra), "a fourth connection was served"
        for sock in open_sockets:
            sock.sendall(API_VERSIONS)
            assert _read_response(sock)[:4] == struct.pack(">i", 7), "an admitted connection stopped working"
        open_sockets.pop().close()
        deadline = time.monotonic() + 10
        while True:  # the broker sees the close a moment later
            with _connect(broker.bootstrap) as again:
                try:
                    again.sendall(API_VERSIONS)
                    if _read_response(again)[:4] == struct.pack(">i", 7):
                        break
                except (AssertionError, ConnectionError):
                    assert time.monotonic() < deadline, "a freed slot was never given to a new connection"
    finally:
        for sock in open_sockets:
            sock.close()


def test_an_idle_connection_is_closed_when_the_broker_clock_passes_connections_max_idle_ms(
        start_broker: Callable[..., BrokerProcess]) -> None:
    broker = start_broker({"connections.max.idle.ms": "60000"}, "--manual-clock")

    async def advance(milliseconds: int) -> None:
        client = await Client.connect(broker.bootstrap)
        try:
            await client.advance_clock(milliseconds)
        finally:
            await client.close()

    with _connect(broker.bootstrap) as idle:
        idle.sendall(API_VERSIONS)
        _read_response(idle)
        asyncio.run(advance(59_999))
        idle.setblocking(False)
        with pytest.raises(BlockingIOError):
            idle.recv(1)  # still open, nothing to read
        idle.setblocking(True)
        asyncio.run(advance(1))
        assert _closed(idle), "the idle connection was not closed"
    _broker_still_serves(broker.bootstrap)


def test_a_flood_of_partial_frames_stays_within_the_budget(start_broker: Callable[..., BrokerProcess]) -> None:
    """40 connections each announce a 200 KiB frame (counted in full: it gets a buffer of its own) or send 100 KB
    of a 120 KB one; with a budget of 1 MiB at most five of them may stay open, and other clients carry on."""
    budget = 1024 * 1024
    broker = start_broker({"logwright.socket.partial.frame.budget.bytes": str(budget)})
    before = broker.resident_bytes()
    flood: list[socket.socket] = []
    try:
        for index in range(40):
            sock = _connect(broker.bootstrap)
            flood.append(sock)
            if index % 2:
                sock.sendall(struct.pack(">i", 200 * 1024) + b"\x00" * 100)
            else:
                sock.sendall(struct.pack(">i", 120_000) + b"\x00" * 100_000)
        deadline = time.monotonic() + 20

        def still_open() -> list[socket.socket]:
            alive = []
            for sock in flood:
                sock.setblocking(False)
                try:
                    if sock.recv(1) != b"":
                        alive.append(sock)
                except BlockingIOError:
                    alive.append(sock)
                except ConnectionError:
                    pass
            return alive

        while len(still_open()) * 100_000 > budget:
            assert time.monotonic() < deadline, f"{len(still_open())} partial frames are still held"
            time.sleep(0.1)
        assert broker.resident_bytes() - before < 16 * budget
        _broker_still_serves(broker.bootstrap)
    finally:
        for sock in flood:
            sock.close()


def test_connections_share_one_read_buffer(start_broker: Callable[..., BrokerProcess]) -> None:
    """400 connections, each answered one ApiVersions, grow the broker by far less than a read buffer of its own
    each would (256 KiB each, 100 MiB in all: 1,000 connections took it from 49 to 303 MiB when each had one)."""
    broker = start_broker({})
    _broker_still_serves(broker.bootstrap)
    before = broker.resident_bytes()
    connections = [_connect(broker.bootstrap) for _ in range(400)]
    try:
        for sock in connections:
            sock.sendall(API_VERSIONS)
        for sock in connections:
            assert _read_response(sock)[:4] == (7).to_bytes(4, "big")  # API_VERSIONS's correlation id
        grown = broker.resident_bytes() - before
        assert grown < 40 * 1024 * 1024, f"400 connections grew the broker by {grown >> 20} MiB"
        _broker_still_serves(broker.bootstrap)
    finally:
        for sock in connections:
            sock.close()
