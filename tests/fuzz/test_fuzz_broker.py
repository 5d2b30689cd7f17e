"""Mutated request frames of every served API key and version, and of real clients' requests, against a real
broker process.

Each frame goes over its own connection. After every batch a well-behaved client must be answered within a
second (no crash, no freeze) and the broker's resident memory must stay within a budget of where it started
(no balloon). ``LOGWRIGHT_FUZZ_EXAMPLES`` sets the number of batches: the default keeps the run near half a
minute inside ``make test``; ``make fuzz`` runs thousands.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.broker_process import BrokerProcess

from .broker_checks import assert_served_within_a_second, assert_within_budget, send_alone
from .capture import RecordingProxy, run_clients
from .frames import framed, mutated_payloads, smallest_seeds

EXAMPLES = int(os.environ.get("LOGWRIGHT_FUZZ_EXAMPLES", "300"))
FRAMES_PER_BATCH = 6


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


@pytest.fixture(scope="module")
def baseline_rss(fuzzed_broker: BrokerProcess, client_frames: list[bytes]) -> int:
    """The broker's size once every served (key, version) has been seen well-formed (its caches warm)."""
    for payload in smallest_seeds():
        send_alone(fuzzed_broker, framed(payload))
    assert_served_within_a_second(fuzzed_broker, "the seed frames")
    return fuzzed_broker.resident_bytes()


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
    assert_within_budget(fuzzed_broker, baseline_rss, context)
