"""What one OffsetCommit costs the broker in process: the server's real `Connection`, store and plugins, no sockets.

Over the wire the 1,000-group curve reads 84-116 us of broker CPU per commit from one fresh process to the next
(`results/groups_knee-s25.md`), too noisy to compare two builds by. This feeds N connections' OffsetCommit v2
frames (the curve's own, `scale_curves.commit_frame`) through `Connection.get_buffer`/`buffer_updated` from loop
callbacks of ``--per-turn`` connections each, as epoll hands ready sockets over, into transports that only keep
what is written; every round checks that each connection got its answer, for its correlation id, with error 0.
It reports the process CPU per commit of each round (min, p25, median): what the handler, the store's group
commit, the plugins and the server's framing cost, without the sockets and asyncio's transports (an asyncio
server answering fixed bytes costs ~23 us a request here on its own). Run it alternately in two worktrees to
compare commits.

    .venv/bin/python bench/commit_path.py [--groups 1000] [--rounds 20] [--per-turn 30] [--partitions 1]
        [--tmp-root /dev/shm]

``--partitions N``: each commit names N partitions (what a member of a big group commits), so the cost per partition
of a commit can be compared too.
"""

from __future__ import annotations

import argparse
import asyncio
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from logwright.compat.broker import BrokerSettings
from logwright.compat.server import Connection, KafkaServer
from logwright.compat.wiring import compose_broker
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import PluginHost
from scale_curves import commit_frame

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from logwright.garbage_collector import tune_garbage_collector
from tests.compat.test_server_backpressure import RecordingTransport  # noqa: E402

TOPIC = "groups"


class KeptTransport(RecordingTransport):
    """A socket that takes every byte at once and keeps them, for the round's check (the server tests' transport);
    ``on_write`` hears of each write, so the round ends when the last answer is written, not by polling."""

    on_write: Callable[[], None] = staticmethod(lambda: None)

    def write(self, data: Any) -> None:
        super().write(data)
        self.on_write()

    def take_answer(self) -> tuple[int, int]:
        """The one answer written since the last call: its correlation id and the first nonzero error code of its
        partitions (0 when every one was committed)."""
        data, self.written = bytes(self.written), bytearray()
        (size,) = struct.unpack_from(">i", data, 0)
        if size + 4 != len(data):
            raise AssertionError(f"expected one whole answer, got {len(data)} bytes for a {size}-byte frame")
        correlation, _topics, name_length = struct.unpack_from(">iih", data, 4)
        position = 4 + 4 + 4 + 2 + name_length
        (partitions,) = struct.unpack_from(">i", data, position)
        errors = [struct.unpack_from(">ih", data, position + 4 + 6 * index)[1] for index in range(partitions)]
        return correlation, next((error for error in errors if error), 0)


class Answers:
    """Counts a round's answers; ``all_written`` is done at the last."""

    def __init__(self, loop: asyncio.AbstractEventLoop, expected: int) -> None:
        self.all_written: asyncio.Future[None] = loop.create_future()
        self.left = expected

    def count(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.all_written.set_result(None)


async def measure(data_dir: Path, groups: int, rounds: int, per_turn: int, partitions: int = 1) -> list[float]:
    """Process CPU seconds per commit, one figure per round."""
    settings = BrokerSettings()
    host = PluginHost.for_broker(settings.overrides)
    store = RocksEventStore(data_dir, projections=host.projections(), types=host.type_registry())
    broker = compose_broker(store, host, settings, configs=host.config_registry())
    server = KafkaServer(broker)
    broker.create_topic(TOPIC, partitions)
    broker.commit_now()
    clients: list[tuple[Connection, KeptTransport, bytearray, int, int]] = []
    for index in range(groups):
        connection, transport = Connection(server), KeptTransport()
        connection.connection_made(transport)
        clients.append((connection, transport, *commit_frame(f"g-{index}", TOPIC, partitions)))
    tune_garbage_collector()
    loop = asyncio.get_running_loop()

    def read(batch: list[tuple[Connection, KeptTransport, bytearray, int, int]], correlation: int) -> None:
        for connection, _, frame, correlation_at, offset_at in batch:
            struct.pack_into(">i", frame, correlation_at, correlation)
            struct.pack_into(">q", frame, offset_at, correlation)
            buffer = connection.get_buffer(len(frame))
            buffer[: len(frame)] = frame
            connection.buffer_updated(len(frame))

    per_commit: list[float] = []
    try:
        for correlation in range(1, rounds + 1):
            answers = Answers(loop, groups)
            for _, transport, *_ in clients:
                transport.on_write = answers.count
            started = time.process_time()
            for first in range(0, groups, per_turn):
                loop.call_soon(read, clients[first:first + per_turn], correlation)
                await asyncio.sleep(0)  # a turn per batch of reads, as a loop meets ready sockets: commits interleave
            await asyncio.wait_for(answers.all_written, 60)
            per_commit.append((time.process_time() - started) / groups)
            for _, transport, *_ in clients:
                answer = transport.take_answer()
                if answer != (correlation, 0):
                    raise SystemExit(f"round {correlation}: answer (correlation, error) {answer}")
    finally:
        for connection, *_ in clients:
            connection.abort()
        broker.coordinators.close()
        broker.commit_now()
        store.close()
    return per_commit


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", type=int, default=1000, help="connections, one group each")
    parser.add_argument("--rounds", type=int, default=20, help="commits per connection")
    parser.add_argument("--per-turn", type=int, default=30, help="connections read per loop callback")
    parser.add_argument("--partitions", type=int, default=1, help="partitions each commit names")
    parser.add_argument("--tmp-root", type=Path, help="where the store goes (e.g. /dev/shm)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="logwright-commit-", dir=args.tmp_root) as tmp:
        figures = sorted(asyncio.run(measure(Path(tmp) / "data", args.groups, args.rounds, args.per_turn,
                                             args.partitions)))
    print(f"{args.groups} connections, {args.per_turn} read per callback, {args.partitions} partition(s) per commit, "
          f"{args.rounds} rounds: CPU per commit "
          f"min {figures[0] * 1e6:.1f} us, p25 {figures[len(figures) // 4] * 1e6:.1f}, "
          f"median {figures[len(figures) // 2] * 1e6:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
