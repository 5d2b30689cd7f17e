"""What the fuzz tests send a broker process and what they check of it afterwards, shared by every fuzz test.

A fault is the broker dying, freezing (a well-behaved client waits a second or more), growing past a budget, or
logging an ERROR (a handler failed on what a client sent).
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

import msgpack
from logwright.compat.wire.messages import decode_response

from tests.integration.broker_process import BrokerProcess

from .frames import framed
from .hostile_values import Extension, Request, encode

RSS_BUDGET_BYTES = 256 * 1024 * 1024
"""How far above its size after the warm-up the broker may grow while fuzzed."""


def send_alone(broker: BrokerProcess, frame: bytes, port: int | None = None) -> None:
    """One frame (or any bytes) on a connection of its own, to the broker's port or ``port`` (another listener's);
    whatever comes back (an answer, a close, nothing) is fine."""
    try:
        sock = socket.create_connection(("127.0.0.1", port or broker.port), timeout=2)
    except ConnectionRefusedError:
        assert broker.alive(), f"the broker died before frame {frame[:40].hex()}...: {broker.log_tail(8)}"
        raise
    with sock:
        try:
            sock.sendall(frame)
            sock.settimeout(0.05)
            sock.recv(65536)
        except (TimeoutError, ConnectionError):
            pass


def assert_served_within_a_second(broker: BrokerProcess, context: str) -> None:
    """ApiVersions on a fresh connection is answered, correctly, within a second."""
    assert broker.alive(), f"the broker died after {context}: {broker.log_tail()}"
    started = time.monotonic()
    client = b"well-behaved"
    request = struct.pack(">hhih", 18, 0, 424242, len(client)) + client
    answer = b""
    try:
        with socket.create_connection(("127.0.0.1", broker.port), timeout=1.0) as sock:
            sock.sendall(framed(request))
            while len(answer) < 10:
                chunk = sock.recv(4096)
                assert chunk, f"ApiVersions got no answer after {context}"
                answer += chunk
    except TimeoutError:
        raise AssertionError(f"a well-behaved client waited over a second after {context}") from None
    except ConnectionRefusedError:
        raise AssertionError(f"nothing listens on the broker's port after {context}") from None
    assert struct.unpack_from(">iih", answer)[1:] == (424242, 0)
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"a well-behaved client waited {elapsed:.2f} s after {context}"


def assert_within_budget(broker: BrokerProcess, baseline: int, context: str) -> None:
    grown = broker.resident_bytes() - baseline
    assert grown < RSS_BUDGET_BYTES, f"the broker grew by {grown // 2**20} MiB after {context}"


class BrokerLog:
    """The broker's log from where the last look stopped (its start at first): ERROR lines are handler failures on
    client input."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.broker = broker
        self.position = 0

    def assert_no_errors(self, context: str) -> None:
        with open(self.broker.log_path, "rb") as log:
            log.seek(self.position)
            text = log.read().decode(errors="replace")
        self.position += len(text.encode(errors="replace"))
        failures = [line[:300] for line in text.splitlines() if " ERROR " in line or line.startswith("Traceback")]
        assert not failures, f"the broker logged errors after {context}: {failures[:5]}"


class Conversation:
    """One connection that sends requests in turn and decodes each answer; on a timeout or a close the answer is
    ``None`` and the next request goes over a new connection (what a client does)."""

    def __init__(self, broker: BrokerProcess, answer_timeout_s: float = 0.5) -> None:
        self.broker = broker
        self.answer_timeout_s = answer_timeout_s
        self.sock: socket.socket | None = None
        self.correlation_id = 0

    def call(self, request: Request) -> Any:
        self.correlation_id += 1
        try:
            if self.sock is None:
                self.sock = socket.create_connection(("127.0.0.1", self.broker.port), timeout=self.answer_timeout_s)
            self.sock.sendall(framed(encode(request, self.correlation_id)))
            (size,) = struct.unpack(">i", self._read(4))
            payload = self._read(size)
        except (OSError, ConnectionError):
            self.close()
            return None
        if isinstance(request, Extension):
            return msgpack.unpackb(payload[4:], raw=False, strict_map_key=False)
        return decode_response(type(request).__api_key__, type(request).__version__, payload)[1]

    def _read(self, count: int) -> bytes:
        assert self.sock is not None
        data = bytearray()
        while len(data) < count:
            chunk = self.sock.recv(min(count - len(data), 1 << 20))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
