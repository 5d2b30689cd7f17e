"""Connection limits without sockets: who may connect, and what a partial frame counts against the budget."""

from __future__ import annotations

import pytest
from logwright.compat.connection_limits import ConnectionQuotas, StartupLimits
from logwright.compat.wire.framing import OWN_BUFFER_FROM, FrameDecoder
from logwright.core.config.configs import connection_overrides, default_registry, parse_connection_overrides

LIMITS = StartupLimits(in_flight_per_connection=8, queued_max_requests=2, queued_max_request_bytes=100,
                       partial_frame_budget=1000, idle_ms=600_000, max_request_bytes=104_857_600,
                       send_buffer_bytes=102_400, receive_buffer_bytes=102_400)


def quotas(**configs: str) -> ConnectionQuotas:
    registry = default_registry()

    def broker_config(name: str) -> str:
        if name in configs:
            return configs[name]
        key = registry.get("broker", name)
        assert key is not None and key.default is not None, name
        return key.default

    return ConnectionQuotas(broker_config, LIMITS)


def test_kafka_defaults_admit_everyone() -> None:
    limits = quotas()
    assert all(limits.refusal("10.0.0.1") is None for _ in range(100))
    assert limits.open_total == 100


def test_per_address_limit_with_an_override_and_the_total() -> None:
    limits = quotas(**{"max.connections": "4", "max.connections.per.ip": "1",
                       "max.connections.per.ip.overrides": "10.0.0.2:3"})
    assert limits.refusal("10.0.0.1") is None
    assert "limit is 1" in (limits.refusal("10.0.0.1") or "")
    assert [limits.refusal("10.0.0.2") for _ in range(3)] == [None, None, None]
    assert "max.connections=4" in (limits.refusal("10.0.0.3") or "")
    limits.closed("10.0.0.1")
    assert limits.refusal("10.0.0.3") is None, "a closed connection frees its slot"
    assert limits.open_by_host == {"10.0.0.2": 3, "10.0.0.3": 1}


def test_queued_max_requests_and_bytes_count_across_connections() -> None:
    limits = quotas()
    assert limits.may_start_request(10**6), "one request alone always starts"
    limits.requests_in_flight, limits.request_bytes_in_flight = 2, 20
    assert not limits.may_start_request(1)
    limits.requests_in_flight = 1
    assert limits.may_start_request(80)
    assert not limits.may_start_request(81), "queued.max.request.bytes"


@pytest.mark.parametrize(("value", "parsed"), [
    ("", {}), ("10.0.0.1:5", {"10.0.0.1": 5}), ("a.example:0, ::1:7", {"a.example": 0, "::1": 7}),
])
def test_overrides_parse(value: str, parsed: dict[str, int]) -> None:
    assert parse_connection_overrides(value) == parsed
    assert connection_overrides(value) is None


@pytest.mark.parametrize("value", ["10.0.0.1", "10.0.0.1:x", ":5", "10.0.0.1:-1"])
def test_bad_overrides_are_refused(value: str) -> None:
    assert connection_overrides(value) is not None


def test_a_large_frame_counts_in_full_from_its_size_prefix() -> None:
    decoder = FrameDecoder()
    size = OWN_BUFFER_FROM + 10
    decoder.feed(size.to_bytes(4, "big") + b"x" * 10)
    assert decoder.held == 4 + size, "the buffer get_buffer is about to allocate is not counted"
    decoder.get_buffer()
    assert decoder.held == 4 + size


def test_a_small_partial_frame_counts_what_arrived() -> None:
    decoder = FrameDecoder()
    decoder.feed((100).to_bytes(4, "big") + b"x" * 30)
    assert decoder.held == 34
    assert decoder.feed(b"x" * 70) == [b"x" * 100]
    assert decoder.held == 0
