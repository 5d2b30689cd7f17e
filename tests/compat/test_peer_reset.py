"""A peer that resets its connection while answers are still flowing to it, on real loopback sockets of an
in-process server: the connection ends alone and asyncio's transport reports nothing to the loop's exception
handler (what the broker logs as an ERROR). The reset is made to land at the worst moment, inside the
transport's ``resume_writing`` callback, the window the hostile-values fuzz hit by chance."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from logwright.compat.broker import Broker
from logwright.compat.server import Connection, KafkaServer

from tests.compat.brokers import loopback_broker

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 7, 5) + b"reset"
PIPELINED = 3_000
"""ApiVersions v0 requests sent at once and never read until the broker's transport holds answers (~1.3 MB)."""


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with loopback_broker(tmp_path / "data") as served:
        yield served


def transport_holds(server: KafkaServer) -> bool:
    """Some connection's transport holds answer bytes, so it paused writing and will resume once they are read.
    Answers still queued in the connection itself are not enough: while the test read, the pump could hand them
    to a socket that took them all, writing never paused, and the read loop waited for a reset forever (CI, once)."""
    return any(connection.transport is not None and connection.transport.get_write_buffer_size()
               for connection in server.connections)


def test_a_reset_landing_as_the_transport_resumes_writing_ends_the_connection_alone(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    client = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.setblocking(False)
    reset: list[bool] = []
    resume_writing = Connection.resume_writing

    def reset_then_resume(connection: Connection) -> None:
        if not reset:
            reset.append(True)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # the broker's socket now holds ECONNRESET for its next send
        resume_writing(connection)

    monkeypatch.setattr(Connection, "resume_writing", reset_then_resume)

    async def run() -> list[dict[str, Any]]:
        loop = asyncio.get_running_loop()
        reported: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _loop, context: reported.append(context))
        server = KafkaServer(broker)
        await server.start()
        try:
            await loop.sock_connect(client, ("127.0.0.1", broker.settings.port))
            frame = struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0
            await loop.sock_sendall(client, frame * PIPELINED)
            for _ in range(500):  # until the transport holds what the socket did not take
                if transport_holds(server):
                    break
                await asyncio.sleep(0.01)
            assert transport_holds(server), "the answers all fit"
            read_until = loop.time() + 30
            while not reset:  # read, so the transport drains and resumes writing, until the reset
                assert loop.time() < read_until, "the transport never resumed writing"
                try:
                    client.recv(1 << 16)
                except BlockingIOError:
                    await asyncio.sleep(0)
            for _ in range(500):
                if not server.connections:
                    break
                await asyncio.sleep(0.01)
            assert not server.connections, "the reset connection was not closed"
            return reported
        finally:
            await server.stop()

    assert asyncio.run(run()) == []
