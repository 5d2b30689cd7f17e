"""Ctrl-C with clients still connected: the broker closes their connections quietly and exits 0.

Found by franz-go's peer suite (peers/franz_go.py): its clients still held long-polling Fetches when the
run ended, and every connection the broker cancelled on the way out was logged by Python 3.11's
asyncio as an "Exception in callback" with a CancelledError traceback, 54 of them for one clean stop.
"""

from __future__ import annotations

import socket
import struct

from confluent_kafka import Producer

from .broker_process import BrokerProcess

TOPIC = b"shutdown-topic"


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=10)


def _send(sock: socket.socket, api_key: int, version: int, body: bytes) -> None:
    client = b"shutdown-test"
    payload = struct.pack(">hhih", api_key, version, 1, len(client)) + client + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)


def _served_then_idle(bootstrap: str) -> socket.socket:
    """A raw connection answered once (ApiVersions v0), then left open and silent."""
    sock = _connect(bootstrap)
    _send(sock, 18, 0, b"")
    size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
    assert len(sock.recv(size, socket.MSG_WAITALL)) == size
    return sock


def _long_polling(bootstrap: str) -> socket.socket:
    """A Fetch v4 at the end of the log that asks the broker to wait up to 60 s for a byte."""
    sock = _connect(bootstrap)
    partition = struct.pack(">iqi", 0, 1, 1 << 20)
    topic = struct.pack(">h", len(TOPIC)) + TOPIC + struct.pack(">i", 1) + partition
    _send(sock, 1, 4, struct.pack(">iiiib", -1, 60_000, 1, 1 << 20, 0) + struct.pack(">i", 1) + topic)
    return sock


def test_stop_with_idle_and_long_polling_connections_logs_no_traceback(broker: BrokerProcess) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce(TOPIC.decode(), b"one", partition=0)
    assert producer.flush(30) == 0
    del producer
    sockets = [_served_then_idle(broker.bootstrap) for _ in range(3)]
    sockets += [_long_polling(broker.bootstrap) for _ in range(3)]
    try:
        _served_then_idle(broker.bootstrap).close()  # every Fetch above has been read and is waiting
        assert broker.stop() == 0, broker.log_tail()
    finally:
        for sock in sockets:
            sock.close()
    log = broker.log_path.read_text(errors="replace")
    assert "shutting down" in log
    assert "Traceback" not in log and "ERROR" not in log, broker.log_tail(60)
