"""Ctrl-C with clients still connected: the broker closes their connections and exits 0 without a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

from .broker_process import BrokerProcess


def test_ctrl_c_with_open_connections_exits_cleanly(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "data").start()
    clients = [socket.create_connection(("127.0.0.1", broker.port), timeout=10) for _ in range(3)]
    try:
        for client in clients:
            client.sendall(b"\x00\x00\x00\x0c\x00\x12\x00\x00\x00\x00\x00\x01\x00\x02lw")  # ApiVersions v0
            assert len(client.recv(4)) == 4
        assert broker.stop() == 0, broker.log_tail()
    finally:
        broker.kill()
        for client in clients:
            client.close()
    log = broker.log_path.read_text(errors="replace")
    assert "Traceback" not in log and " ERROR " not in log, log
