"""Mutated request frames of every served API key and version, and of real clients' requests, against a real
broker process.

Each frame goes over its own connection. After every batch a well-behaved client must be answered within a
second (no crash, no freeze) and the broker's resident memory must stay within a budget of where it started
(no balloon). ``LOGWRIGHT_FUZZ_EXAMPLES`` sets the number of batches: the default keeps the run near half a
minute inside ``make test``; ``make fuzz`` runs thousands.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.broker_process import BrokerProcess

from .capture import RecordingProxy, run_clients
from .frames import framed, mutated_payloads, smallest_seeds

EXAMPLES = int(os.environ.get("LOGWRIGHT_FUZZ_EXAMPLES", "300"))
FRAMES_PER_BATCH = 6
RSS_BUDGET_BYTES = 256 * 1024 * 1024
"""How far above its size after the seed round the broker may grow while fuzzed."""


@pytest.fixture(scope="module")
def fuzzed_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker that advertises the recording proxy's address, so that clients run through it stay on it."""
    process = BrokerProcess(tmp_path_factory.mktemp("fuzz") / "data")
    proxy = RecordingProxy(process.port)
    process.extra_args = ("--advertised", f"127.0.0.1:{proxy.port}")
    process.start()
    process.proxy = proxy  # type: ignore[attr-defined]
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture(scope="module")
def client_frames(fuzzed_broker: BrokerProcess) -> list[bytes]:
    """Every request confluent-kafka (admin, idempotent lz4/zstd producers, a group consumer) and kafka-python sent
    in a short session, one copy of each."""
    with fuzzed_broker.proxy as proxy:  # type: ignore[attr-defined]
        run_clients(f"127.0.0.1:{proxy.port}")
    return sorted(set(proxy.frames))


def resident_bytes(broker: BrokerProcess) -> int:
    assert broker.process is not None
    for line in Path(f"/proc/{broker.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


def send_alone(broker: BrokerProcess, frame: bytes) -> None:
    """One frame on a connection of its own; whatever comes back (an answer, a close, nothing) is fine."""
    try:
        sock = socket.create_connection(("127.0.0.1", broker.port), timeout=2)
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
    assert broker.alive(), f"the broker died after {context}: {broker.log_tail()}"
    started = time.monotonic()
    client = b"well-behaved"
    request = struct.pack(">hhih", 18, 0, 424242, len(client)) + client
    with socket.create_connection(("127.0.0.1", broker.port), timeout=1.0) as sock:
        sock.sendall(framed(request))
        answer = b""
        while len(answer) < 10:
            chunk = sock.recv(4096)
            assert chunk, f"ApiVersions got no answer after {context}"
            answer += chunk
    assert struct.unpack_from(">iih", answer)[1:] == (424242, 0)
    elapsed = time.monotonic() - started
    assert elapsed < 1.0, f"a well-behaved client waited {elapsed:.2f} s after {context}"


@pytest.fixture(scope="module")
def baseline_rss(fuzzed_broker: BrokerProcess, client_frames: list[bytes]) -> int:
    """The broker's size once every served (key, version) has been seen well-formed (its caches warm)."""
    for payload in smallest_seeds():
        send_alone(fuzzed_broker, framed(payload))
    assert_served_within_a_second(fuzzed_broker, "the seed frames")
    return resident_bytes(fuzzed_broker)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.data())
def test_mutated_frames_neither_crash_freeze_nor_balloon_the_broker(
        fuzzed_broker: BrokerProcess, client_frames: list[bytes], baseline_rss: int, data: st.DataObject) -> None:
    payloads = data.draw(st.lists(mutated_payloads(client_frames), min_size=FRAMES_PER_BATCH,
                                  max_size=FRAMES_PER_BATCH))
    for payload in payloads:
        send_alone(fuzzed_broker, framed(payload))
    context = "frames " + ", ".join(payload[:4].hex() + f"+{len(payload) - 4}" for payload in payloads)
    assert_served_within_a_second(fuzzed_broker, context)
    grown = resident_bytes(fuzzed_broker) - baseline_rss
    assert grown < RSS_BUDGET_BYTES, f"the broker grew by {grown // 2**20} MiB after {context}"
