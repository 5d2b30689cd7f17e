"""What bench/soak.py watches: the broker from outside (/proc) and inside (LogwrightBrokerStats), and the clients.

`BrokerProbe` reads the broker process's VmRSS and its open descriptors by kind (sockets, the store's files
under its data dir, the rest) from /proc, and asks the broker itself (extension key 32007) for its open
connections and asyncio tasks. `Window` collects one sampling interval's latencies and counts on the
client side; `OffsetTally` remembers which offsets were consumed so losses and duplicates show at the end.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compare_report import percentile
from logwright.client.connection import Connection

BROKER_STATS_KEY = 32007
MIB = 2**20


@dataclass(frozen=True, slots=True)
class BrokerReading:
    rss_mib: float
    cpu_s: float
    """User and system CPU seconds the broker has used since it started."""
    waited_s: float
    """Seconds the broker's main thread (its event loop) has waited for a CPU while runnable (schedstat)."""
    fds: int
    sockets: int
    store_files: int
    other_fds: int
    connections: int
    tasks: int
    tasks_by_coroutine: dict[str, int]
    python_blocks: int
    """The broker interpreter's allocated blocks (a count, not bytes): steady while RSS grows points away from
    leaked Python objects, towards RocksDB's memory or a few large buffers."""

    @classmethod
    def unavailable(cls) -> BrokerReading:
        """What a sample records when the broker cannot be read (it exited, or did not answer)."""
        return cls(math.nan, math.nan, math.nan, -1, -1, -1, -1, -1, -1, {}, -1)

    def client_bound(self) -> tuple[int, int, int, int]:
        """What must come back once the clients leave: the store's files grow with the data, not with them."""
        return self.connections, self.tasks, self.sockets, self.other_fds


class BrokerProbe:
    """Readings of one broker process; ``connection`` is the probe's own (it counts as one open connection)."""

    def __init__(self, pid: int, data_dir: Path, connection: Connection) -> None:
        self.pid = pid
        self.data_dir = str(data_dir.resolve())
        self.connection = connection

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime

    def waited_s(self) -> float:
        return run_queue_wait_s(self.pid)

    def descriptors(self) -> Counter[str]:
        kinds: Counter[str] = Counter()
        folder = f"/proc/{self.pid}/fd"
        for name in os.listdir(folder):
            try:
                target = os.readlink(f"{folder}/{name}")
            except OSError:  # closed between the listing and the read
                continue
            kinds["socket" if target.startswith("socket:") else "store" if target.startswith(self.data_dir)
                  else "other"] += 1
        return kinds

    async def read(self) -> BrokerReading:
        stats: dict[str, Any] = await self.connection.extension(BROKER_STATS_KEY, {}, "broker stats", timeout_s=30)
        kinds = self.descriptors()
        return BrokerReading(self.rss_mib(), self.cpu_s(), self.waited_s(), sum(kinds.values()), kinds["socket"],
                             kinds["store"], kinds["other"], int(stats["connections"]), int(stats["tasks"]),
                             dict(stats["tasks_by_coroutine"]), int(stats["python_blocks"]))


def run_queue_wait_s(pid: int | str = "self") -> float:
    """Seconds the process's main thread spent runnable but waiting for a CPU (/proc schedstat): on a shared
    machine, latency that neither the broker nor the clients caused."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return math.nan


@dataclass(slots=True)
class Window:
    """One sampling interval on the client side; latencies in ms."""

    produce_ms: list[float] = field(default_factory=list)
    end_to_end_ms: list[float] = field(default_factory=list)
    loop_lag_ms: list[float] = field(default_factory=list)
    produced: int = 0
    consumed: int = 0
    errors: int = 0

    def summary(self) -> dict[str, float]:
        return {"produced": self.produced, "consumed": self.consumed, "errors": self.errors,
                "produce p50": percentile(self.produce_ms, 50), "produce p99": percentile(self.produce_ms, 99),
                "e2e p50": percentile(self.end_to_end_ms, 50), "e2e p99": percentile(self.end_to_end_ms, 99),
                "loop lag p99": percentile(self.loop_lag_ms, 99)}


class OffsetTally:
    """Consumed offsets per (topic, partition) as bitmaps: cheap for the millions of a 10-minute run."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int], bytearray] = {}
        self.duplicates = 0

    def mark(self, topic: str, partition: int, offset: int) -> None:
        bits = self._seen.setdefault((topic, partition), bytearray())
        byte, bit = divmod(offset, 8)
        if byte >= len(bits):
            bits.extend(bytes(max(byte + 1 - len(bits), 4096)))
        if bits[byte] & (1 << bit):
            self.duplicates += 1
        bits[byte] |= 1 << bit

    def missing(self, end_offsets: dict[tuple[str, int], int]) -> int:
        """Offsets below each partition's end that nobody consumed (only the soak's producers write there)."""
        lost = 0
        for key, end in end_offsets.items():
            bits = self._seen.get(key, bytearray())
            whole, rest = divmod(end, 8)
            present = int.from_bytes(bits[:whole], "big").bit_count()
            if rest and whole < len(bits):
                present += (bits[whole] & ((1 << rest) - 1)).bit_count()
            lost += end - present
        return lost
