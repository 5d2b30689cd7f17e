"""What bounds the clients of one broker: connection counts, requests in flight, partial frames, idleness.

Kafka's broker configs where Kafka has one (``max.connections``, ``max.connections.per.ip`` and its
overrides, ``connections.max.idle.ms``, ``queued.max.requests``), logwright's own where the shape of an
asyncio server needs one (requests in flight per connection, a budget for partial request frames). No
I/O here: the server asks and does what the answer says.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from logwright.core.config.configs import parse_connection_overrides, socket_buffer_bytes
from logwright.core.errors import InvalidConfig

IN_FLIGHT_PER_CONNECTION: Final = "logwright.max.in.flight.requests.per.connection"
PARTIAL_FRAME_BUDGET: Final = "logwright.socket.partial.frame.budget.bytes"


@dataclass(frozen=True, slots=True)
class StartupLimits:
    """The limits read once at start-up (read-only in Kafka too)."""

    in_flight_per_connection: int
    queued_max_requests: int
    queued_max_request_bytes: int
    """-1: no limit (Kafka's default)."""
    partial_frame_budget: int
    idle_ms: int
    max_request_bytes: int
    send_buffer_bytes: int
    """SO_SNDBUF of each connection (``socket.send.buffer.bytes``); -1: the OS default, autotuned."""
    receive_buffer_bytes: int
    """SO_RCVBUF of the listening socket, inherited by its connections (``socket.receive.buffer.bytes``); -1: the OS
    default."""

    @classmethod
    def read(cls, broker_config: Callable[[str], str]) -> StartupLimits:
        """Raises `InvalidConfig` for a socket buffer size that is neither -1 nor positive (Kafka would fail to
        start, or fail every accept)."""
        names = (IN_FLIGHT_PER_CONNECTION, "queued.max.requests", "queued.max.request.bytes", PARTIAL_FRAME_BUDGET,
                 "connections.max.idle.ms", "socket.request.max.bytes")
        buffers = []
        for name in ("socket.send.buffer.bytes", "socket.receive.buffer.bytes"):
            value = broker_config(name)
            problem = socket_buffer_bytes(value)
            if problem is not None:
                raise InvalidConfig(f"invalid value {value!r} for broker config {name!r}: {problem}")
            buffers.append(int(value))
        return cls(*(int(broker_config(name)) for name in names), *buffers)


class ConnectionQuotas:
    """Open connections per address and in total, requests in flight and partial-frame bytes across all.

    ``max.connections`` and the per-address limits are read at every accept (they are dynamic in Kafka);
    a connection over them is closed right after accept, as Kafka closes one over its per-address limit.
    """

    def __init__(self, broker_config: Callable[[str], str], limits: StartupLimits) -> None:
        self._broker_config = broker_config
        self.limits = limits
        self.open_by_host: Counter[str] = Counter()
        self.requests_in_flight = 0
        self.request_bytes_in_flight = 0
        self.partial_frame_bytes = 0

    @property
    def open_total(self) -> int:
        return sum(self.open_by_host.values())

    def refusal(self, host: str) -> str | None:
        """Why a new connection from ``host`` may not open, or ``None``: it may (and is now counted)."""
        total = int(self._broker_config("max.connections"))
        if self.open_total >= total:
            return f"max.connections={total} connections are open"
        per_host = parse_connection_overrides(self._broker_config("max.connections.per.ip.overrides")).get(
            host, int(self._broker_config("max.connections.per.ip")))
        if self.open_by_host[host] >= per_host:
            return f"{host} has {self.open_by_host[host]} connections open, its limit is {per_host}"
        self.open_by_host[host] += 1
        return None

    def closed(self, host: str) -> None:
        self.open_by_host[host] -= 1
        if self.open_by_host[host] <= 0:
            del self.open_by_host[host]

    def may_start_request(self, size: int) -> bool:
        """Whether a request of ``size`` bytes may start now; one alone always may, whatever its size."""
        if not self.requests_in_flight:
            return True
        byte_limit = self.limits.queued_max_request_bytes
        return self.requests_in_flight < self.limits.queued_max_requests and (
            byte_limit < 0 or self.request_bytes_in_flight + size <= byte_limit)

    def request_slots_full(self) -> bool:
        """Whether no request, whatever its size, may start now (``queued.max.requests`` are in flight)."""
        return 0 < self.requests_in_flight >= self.limits.queued_max_requests

    def over_partial_frame_budget(self) -> bool:
        return self.partial_frame_bytes > self.limits.partial_frame_budget
