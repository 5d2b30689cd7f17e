"""The socket options Kafka's acceptor sets, on real loopback sockets of an in-process server: SO_SNDBUF of each
connection from ``socket.send.buffer.bytes``, SO_RCVBUF of the listening socket (inherited by its connections) from
``socket.receive.buffer.bytes`` (Kafka's default 100 KiB, logwright's -1), both left to the OS at -1, and
keep-alive. Linux reports twice the size set; left to it, a loopback connection's send buffer is autotuned to
megabytes as soon as it is accepted."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.compat.broker import Broker
from logwright.compat.connection_limits import StartupLimits
from logwright.compat.server import Connection, KafkaServer
from logwright.core.errors import InvalidConfig

from tests.compat.brokers import loopback_broker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with loopback_broker(tmp_path / "data") as served:
        yield served


def accepted(broker: Broker) -> tuple[int, int, int, int]:
    """SO_SNDBUF, SO_RCVBUF and SO_KEEPALIVE of the broker's side of one new connection, and the listening
    socket's SO_RCVBUF."""

    async def run() -> tuple[int, int, int, int]:
        broker.settings.port = 0  # a fresh port each time (the server writes back the one it bound)
        server = KafkaServer(broker)
        await server.start()
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", broker.settings.port)
            for _ in range(100):
                if server.connections:
                    break
                await asyncio.sleep(0.01)
            (connection,) = server.connections
            assert isinstance(connection, Connection) and connection.transport is not None
            ours = connection.transport.get_extra_info("socket")
            assert server._server is not None
            (listening,) = server._server.sockets
            options = (ours.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                       ours.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
                       ours.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                       listening.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
            writer.close()
            return options
        finally:
            await server.stop()

    return asyncio.run(run())


def os_defaults() -> tuple[int, int]:
    """SO_SNDBUF and SO_RCVBUF of a new TCP socket nobody has set (net.ipv4.tcp_wmem's and tcp_rmem's defaults)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as fresh:
        return (fresh.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
                fresh.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))


def test_by_default_a_connection_gets_kafkas_100_kib_send_buffer_the_os_receive_buffer_and_keep_alive(
        broker: Broker) -> None:
    send, receive, keep_alive, listening = accepted(broker)
    assert (send, keep_alive, listening) == (2 * 102_400, 1, os_defaults()[1])
    assert receive >= os_defaults()[1]


def test_kafkas_receive_default_is_set_when_asked(broker: Broker) -> None:
    broker.settings.overrides["socket.receive.buffer.bytes"] = "102400"
    assert accepted(broker) == (2 * 102_400, 2 * 102_400, 1, 2 * 102_400)


def test_other_sizes_are_set_and_minus_one_leaves_the_os_default(broker: Broker) -> None:
    broker.settings.overrides.update({"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "65536"})
    send, receive, keep_alive, listening = accepted(broker)
    assert (receive, keep_alive, listening) == (2 * 65_536, 1, 2 * 65_536)
    assert send >= os_defaults()[0] and send != 2 * 102_400  # autotuned: on loopback 4 MiB at once here
    broker.settings.overrides.update({"socket.send.buffer.bytes": "50000", "socket.receive.buffer.bytes": "-1"})
    send, receive, keep_alive, listening = accepted(broker)
    assert (send, keep_alive) == (2 * 50_000, 1)
    assert receive >= os_defaults()[1] and listening == os_defaults()[1]  # autotuning may have grown it


@pytest.mark.parametrize("value", ["0", "-2", "abc", "1.5", "", "2147483648"])
def test_a_size_neither_minus_one_nor_positive_stops_the_start(broker: Broker, value: str) -> None:
    for name in ("socket.send.buffer.bytes", "socket.receive.buffer.bytes"):
        configs = {"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "-1", name: value}
        broker.settings.overrides.update(configs)
        with pytest.raises(InvalidConfig, match=f"for broker config '{name}'"):
            StartupLimits.read(broker.broker_config)
