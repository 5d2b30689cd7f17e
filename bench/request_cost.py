"""A broker's CPU per request over TCP: pipelined Produce or Fetch requests from a raw socket, no client library.

Why: librdkafka shares this machine's two vCPUs with the broker, so its runs swing by 2x and an A/B of two builds
needs many pairs. Here one socket sends pre-encoded Produce v9 frames of one partition's batch (acks=-1), keeping
``--depth`` requests awaiting an answer, and reads the answers as raw frames: the client's share of a vCPU is small
and steady, the broker is the busy side, and its CPU per request (its cgroup's, as every benchmark reads it) comes
out within about 3% from one round to the next (session 58: logwright 140-146 us for a one-record request at depth
5, 240-243 at depth 1, where the broker idles between requests: `results/cold_requests.md`). Builds compare as
``NAME=PYTHON`` variants (a worktree's venv runs that worktree's code), brokers as ``--peers``.

``--api fetch`` sends Fetch v12 requests instead (no session, `hot_path.fetch_frame`), each from the base offset of one
of the first eight batches of a topic filled with them first, with a partition limit of one byte: every answer holds
exactly one stored batch (a broker answers at least the first batch whole, KIP-74), read from wherever the broker
keeps it. Both brokers take one request of a connection at a time (Kafka mutes the channel until it has answered;
logwright runs one Fetch of a connection at a time), so the depth saves the client's turnaround only.

    .venv/bin/python bench/request_cost.py [--api produce,fetch] [--peers logwright,kafka] [--records 100:1,1024:44]
        [--depth 5,1] [--requests 5000] [--rounds 3] [--warm-up 20000] [NAME=PYTHON ...]

Every answer is read; the first of each round is decoded and must carry error 0 for the partition (and, for a Fetch,
records), so a refused request cannot read as a cheap one. Each round uses a fresh topic; peers take turns going first
(`brokers.in_turn`).
"""

from __future__ import annotations

import argparse
import itertools
import socket
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import brokers
import hot_path
from logwright.compat.wire.messages import decode_response
from wire_workload import create_topic, delete_topic

_SIZE = struct.Struct(">i")
PRODUCE_VERSION, FETCH_VERSION = 9, 12
"""The versions of `hot_path.produce_frame`'s and `hot_path.fetch_frame`'s requests, which their answers are read at."""
APIS = ("produce", "fetch")
FRAMES = 8
"""Distinct frames sent in turn (correlation ids 0-7): a broker sees the same bytes only every eighth request."""
WARM_UP = 500
"""Requests sent before each measured round, on its own fresh topic."""
JIT_WARM_UP = 20_000
"""Requests each broker is sent once at its start (``--warm-up``), before any round: Kafka's JIT compiles its request
path only after thousands of calls (its first round of 10,000 one-record requests cost 513 us a request, later ones
94-105), and logwright generates its schemas' code on first use."""


def produce_frame(topic: str, correlation_id: int, count: int, size: int) -> bytes:
    """`hot_path.produce_frame` (Produce v9, acks=-1, one partition's batch of ``count`` zero-filled records of
    ``size`` bytes) with its size prefix."""
    payload = hot_path.produce_frame(correlation_id, count, size, topic)
    return _SIZE.pack(len(payload)) + payload


def split_frames(buffer: bytearray) -> Iterator[bytes]:
    """The complete size-prefixed frames at the start of ``buffer`` (payloads), removed from it as they are read."""
    while len(buffer) >= _SIZE.size:
        (size,) = _SIZE.unpack_from(buffer)
        if len(buffer) < _SIZE.size + size:
            return
        payload = bytes(buffer[_SIZE.size : _SIZE.size + size])
        del buffer[: _SIZE.size + size]
        yield payload


def fetch_frame(topic: str, correlation_id: int, offset: int) -> bytes:
    """`hot_path.fetch_frame` from ``offset`` with a partition limit of one byte (one batch answered), size-prefixed."""
    payload = hot_path.fetch_frame(correlation_id, offset, topic, partition_max_bytes=1)
    return _SIZE.pack(len(payload)) + payload


def partition_error(payload: bytes) -> int:
    """The error code of the one partition a Produce v9 answer is about."""
    _, response = decode_response(0, PRODUCE_VERSION, payload)
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return int(partition.error_code)


def fetch_error(payload: bytes) -> int:
    """The error code of the one partition a Fetch v12 answer is about; -1 when it carries no records."""
    _, response = decode_response(1, FETCH_VERSION, payload)
    (topic,) = response.responses
    (partition,) = topic.partitions
    return int(partition.error_code) if partition.error_code or partition.records else -1


def send_pipelined(bootstrap: str, frames: list[bytes], requests: int, depth: int,
                   error_of: Callable[[bytes], int] = partition_error) -> None:
    """Send ``requests`` frames (in turn) over one connection with up to ``depth`` awaiting an answer; read every
    answer; raise if the first one's error (``error_of`` it) is not 0 or the broker closes the connection."""
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = answered = 0
        buffer = bytearray()
        while sent < min(depth, requests):
            connection.sendall(frames[sent % len(frames)])
            sent += 1
        while answered < requests:
            chunk = connection.recv(1 << 16)
            if not chunk:
                raise RuntimeError(f"the broker closed the connection after {answered} answers")
            buffer += chunk
            for payload in split_frames(buffer):
                if answered == 0 and (error := error_of(payload)) != 0:
                    raise RuntimeError(f"the broker refused the request: error {error}")
                answered += 1
                if sent < requests:
                    connection.sendall(frames[sent % len(frames)])
                    sent += 1


def wait_until_led(bootstrap: str, frame: bytes, seconds: float = 30.0) -> None:
    """Send ``frame`` (a Produce) until the broker takes it: a fresh topic on Kafka answers NOT_LEADER_OR_FOLLOWER
    (6) until its partition's leadership reaches the broker's metadata, after the creation itself has returned."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            send_pipelined(bootstrap, [frame], 1, 1)
            return
        except RuntimeError as refused:
            if "error 6" not in str(refused) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@dataclass(frozen=True, slots=True)
class Round:
    peer: str
    api: str
    size: int
    count: int
    depth: int
    cpu_us: float
    """Broker CPU per request."""
    per_second: float


def measure(peer: brokers.RunningPeer, name: str, size: int, count: int, depth: int, requests: int,
            api: str = "produce") -> Round:
    topic = create_topic(peer.bootstrap, "request-cost")
    try:
        frames = [produce_frame(topic, correlation_id, count, size) for correlation_id in range(FRAMES)]
        wait_until_led(peer.bootstrap, frames[0])
        error_of = partition_error
        if api == "fetch":  # the eight batches the fetches read, then a fetch from each one's base offset
            send_pipelined(peer.bootstrap, frames, FRAMES, 1)
            frames = [fetch_frame(topic, correlation_id, correlation_id * count) for correlation_id in range(FRAMES)]
            error_of = fetch_error
        send_pipelined(peer.bootstrap, frames, WARM_UP, depth, error_of)
        cpu, started = peer.cpu_seconds(), time.perf_counter()
        send_pipelined(peer.bootstrap, frames, requests, depth, error_of)
        seconds, cpu = time.perf_counter() - started, peer.cpu_seconds() - cpu
    finally:
        delete_topic(peer.bootstrap, topic)
    return Round(name, api, size, count, depth, cpu / requests * 1e6, requests / seconds)


def warm_up(peer: brokers.RunningPeer, size: int, count: int, requests: int) -> None:
    """``requests`` Produce requests (depth 5) to a topic of their own, deleted after."""
    topic = create_topic(peer.bootstrap, "request-cost-warm-up")
    try:
        frames = [produce_frame(topic, i, count, size) for i in range(FRAMES)]
        wait_until_led(peer.bootstrap, frames[0])
        send_pipelined(peer.bootstrap, frames, requests, 5)
    finally:
        delete_topic(peer.bootstrap, topic)


def _records(text: str) -> list[tuple[int, int]]:
    return [(int(size), int(count)) for size, count in (item.split(":") for item in text.split(","))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("variants", nargs="*", metavar="NAME=PYTHON", help="logwright builds: a worktree's python")
    parser.add_argument("--api", default="produce", help="produce, fetch or both, comma-separated")
    parser.add_argument("--peers", default="logwright", help="brokers, comma-separated (logwright, kafka, tansu)")
    parser.add_argument("--records", type=_records, default=_records("100:1,1024:44"),
                        help="SIZE:COUNT of each request's batch, comma-separated")
    parser.add_argument("--depth", default="5,1", help="requests awaiting an answer at once, comma-separated")
    parser.add_argument("--requests", type=int, default=5000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm-up", type=int, default=JIT_WARM_UP, help="requests each broker is sent at its start")
    args = parser.parse_args(argv)
    depths = [int(depth) for depth in args.depth.split(",")]
    apis = args.api.split(",")
    if not set(apis) <= set(APIS):
        parser.error(f"--api takes {', '.join(APIS)}")
    if args.requests < 1 or args.rounds < 1 or min(depths) < 1 or args.warm_up < 0:
        parser.error("--requests, --rounds and every --depth must be 1 or more, --warm-up 0 or more")
    starts: list[tuple[str, str, dict[str, str]]] = [(peer, peer, {}) for peer in args.peers.split(",")
                                                      if not (args.variants and peer == "logwright")]
    for variant in args.variants:
        name, _, python = variant.partition("=")
        starts.append((name, "logwright", {"python": python}))
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory(prefix="request-cost-") as workdir:
        running = []
        try:
            for name, peer, options in starts:
                running.append((name, brokers.start(peer, Path(workdir) / name, **options)))
                if args.warm_up > 0:
                    warm_up(running[-1][1], *args.records[0], args.warm_up)
            for repeat in range(args.rounds):
                for api, (size, count), depth in itertools.product(apis, args.records, depths):
                    for name, peer in brokers.in_turn(running, repeat):
                        measured = measure(peer, name, size, count, depth, args.requests, api)
                        rounds.append(measured)
                        print(f"{name}: {api}, {count} x {size} B, depth {depth}: {measured.cpu_us:.0f} us of broker "
                              f"CPU a request, {measured.per_second:,.0f} requests/s", flush=True)
        finally:
            for _, peer in running:
                peer.stop()
    print("\nmedians, broker CPU us a request (requests/s):")
    for name, _, _ in starts:
        for api, (size, count), depth in itertools.product(apis, args.records, depths):
            mine = [r for r in rounds if (r.peer, r.api, r.size, r.count, r.depth) == (name, api, size, count, depth)]
            cpu_us, per_second = (statistics.median(r.cpu_us for r in mine),
                                  statistics.median(r.per_second for r in mine))
            print(f"  {name}: {api}, {count} x {size} B, depth {depth}: {cpu_us:.0f} ({per_second:,.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
