"""The broker's produce and fetch hot paths in one process, without sockets or clients: what a request costs.

Wire benchmarks on this shared 2-core machine swing by 2x between identical runs (the client competes for
the same cores, and so do other jobs); this one feeds pre-encoded request frames straight through what
`compat/server.py` does per frame (header, kio decode, handler, response encode, framing) against a real
RocksDB store, and reports the 25th percentile and the median of the time each request takes (for
Produce: until its WriteBatch is written), which interference from other jobs inflates far less than
throughput. Compare two commits by running this alternately in two worktrees.

    .venv/bin/python bench/hot_path.py [--tmp-root /dev/shm] [--records 1024:1000,100:8000] [--rounds 7]
        [--requests 200] [--durability wal|fsync] [--gap-us 2000]

Produce requests carry one uncompressed batch of COUNT records of SIZE bytes (librdkafka's default
``batch.size`` is 1 MB); fetches read the topic back from offset 0 with librdkafka's default
``max.partition.fetch.bytes`` (1 MiB), each from the offset the previous answer ended at; a tail fetch
follows every produce request and asks for the batch it just wrote.

``--gap-us`` idles the process before each produce request, as a broker idles between the requests of clients
that send now and then: on this machine a request 2 ms after the last costs 2.3-3.7x one sent at once (spinning
instead of sleeping costs the same: the caches the request path needs have gone cold either way;
`bench/results/cold_requests.md`).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.produce.v9 import request as produce_v9
from kio.static.primitive import i32Timedelta
from logwright.compat.broker import Broker
from logwright.compat.kafka import fetch, produce
from logwright.compat.registry import RequestContext
from logwright.compat.wire.messages import decode_request, decode_response, encode_request, encode_response_frame
from logwright.compat.wire.record_batch import Record, build_batch, iter_batches, parse_header
from logwright.core.log.catalog import delete_topic
from logwright.eventstore.file_ranges import FileRange
from logwright.eventstore.interface import Durability
from logwright.eventstore.rocksdb import RocksEventStore

TOPIC = "hot"


def produce_frame(correlation_id: int, count: int, size: int, topic: str = TOPIC) -> bytes:
    """A Produce v9 request (no size prefix): one partition of ``topic``, one batch of ``count`` records of ``size``
    zero bytes (no key), acks=-1."""
    batch = build_batch([Record(offset=i, timestamp=1_700_000_000_000 + i, key=None, value=bytes(size), headers=())
                         for i in range(count)])
    request = produce_v9.ProduceRequest(
        transactional_id=None, acks=-1, timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(produce_v9.TopicProduceData(name=topic, partition_data=(
            produce_v9.PartitionProduceData(index=0, records=batch),)),))
    return encode_request(request, correlation_id, "hot-path")


def fetch_frame(correlation_id: int, offset: int, topic: str = TOPIC, partition_max_bytes: int = 1_048_576) -> bytes:
    """A Fetch v12 request (no size prefix, no session) of partition 0 of ``topic`` from ``offset``."""
    request = fetch_v12.FetchRequest(
        replica_id=-1, max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)), min_bytes=1,
        max_bytes=52_428_800, isolation_level=0, session_id=0, session_epoch=-1,
        topics=(fetch_v12.FetchTopic(topic=topic, partitions=(fetch_v12.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=partition_max_bytes),)),),
        forgotten_topics_data=(), rack_id="")
    return encode_request(request, correlation_id, "hot-path")


async def serve_frame(
    broker: Broker, handle: Callable[[RequestContext, Any], Awaitable[Any]], frame: bytes
) -> list[bytes]:
    """What the server does for one frame of a handled API key, minus the socket: the pieces it would write."""
    header, request = decode_request(frame)
    context = RequestContext(broker, header.api_key, header.api_version, header.correlation_id, header.client_id,
                             1, "127.0.0.1")
    response = await handle(context, request)
    return encode_response_frame(header.api_key, header.api_version, header.correlation_id, response)


def wire_bytes(pieces: list[bytes | FileRange]) -> bytes:
    """The frame as the socket would carry it: ranges of batch files (sent with sendfile by the server) read."""
    data = b"".join(piece.read() if isinstance(piece, FileRange) else piece for piece in pieces)
    for piece in pieces:
        if isinstance(piece, FileRange):
            piece.close()
    return data


def next_offset(pieces: list[bytes | FileRange]) -> int:
    """The offset after the last whole batch of a FetchResponse v12 frame."""
    _, response = decode_response(1, 12, wire_bytes(pieces)[4:])
    (partition,) = response.responses[0].partitions
    last = -1
    for batch in iter_batches(partition.records or b"", allow_partial_tail=True):
        last = parse_header(batch).next_offset
    return last


async def measure(broker: Broker, count: int, size: int, requests: int, gap_s: float = 0.0
                  ) -> tuple[list[float], list[float], list[float]]:
    """Seconds per produce request (until durable), per fetch at the tail (of the batch just produced, as a
    consumer that keeps up asks) and per fetch from the start, for one round on a fresh topic; ``gap_s``: the
    process sleeps that long before each produce request, as a broker between a slow client's requests."""
    broker.create_topic(TOPIC, 1)
    broker.commit_now()
    frames = [produce_frame(i, count, size) for i in range(min(requests, 8))]
    produce_times: list[float] = []
    tail_times: list[float] = []
    for i in range(requests):
        if gap_s:
            time.sleep(gap_s)  # noqa: ASYNC251 - the whole process idles, as a broker waiting for a request
        started = time.perf_counter()
        answer = await serve_frame(broker, produce.handle, frames[i % len(frames)])
        produce_times.append(time.perf_counter() - started)
        request = fetch_frame(i, i * count)
        started = time.perf_counter()
        await serve_frame(broker, fetch.handle, request)
        tail_times.append(time.perf_counter() - started)
        if i == 0:
            _, response = decode_response(0, 9, wire_bytes(answer)[4:])
            (result,) = response.responses[0].partition_responses
            if result.error_code:
                raise SystemExit(f"produce refused: {result.error_code!r} {result.error_message}")
    offset = 0
    fetch_times: list[float] = []
    while offset < requests * count:
        request = fetch_frame(len(fetch_times), offset)
        started = time.perf_counter()
        answer = await serve_frame(broker, fetch.handle, request)
        fetch_times.append(time.perf_counter() - started)
        offset = next_offset(answer)
        if offset < 0:
            raise SystemExit(f"fetch {len(fetch_times)} read nothing")
    topic = broker.topic(TOPIC)
    assert topic is not None
    broker.stage([delete_topic(topic, TOPIC)])
    broker.commit_now()
    return produce_times, tail_times, fetch_times


def _quantile(values: list[float], q: float) -> float:
    return sorted(values)[int(q * (len(values) - 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", default="1024:1000,100:8000", help="SIZE:COUNT per produce request, ...")
    parser.add_argument("--requests", type=int, default=200, help="produce requests per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--durability", default="wal", choices=[d.value for d in Durability])
    parser.add_argument("--tmp-root", type=Path, help="where the store goes (e.g. /dev/shm)")
    parser.add_argument("--gap-us", type=int, default=0,
                        help="sleep this long before each produce request (requests a client sends now and then)")
    args = parser.parse_args(argv)
    if args.gap_us < 0:
        parser.error("--gap-us must be 0 or more")
    with tempfile.TemporaryDirectory(prefix="logwright-hot-", dir=args.tmp_root) as tmp:
        store = RocksEventStore(Path(tmp) / "data", durability=args.durability)
        broker = Broker(store)
        try:
            for item in args.records.split(","):
                size, count = (int(part) for part in item.split(":"))
                times: dict[str, list[float]] = {"produce": [], "tail fetch": [], "fetch from 0": []}
                for _ in range(args.rounds):
                    for name, measured in zip(times, asyncio.run(measure(broker, count, size, args.requests,
                                                                             args.gap_us / 1e6)),
                                              strict=True):
                        times[name] += measured
                print(f"{size:5} B x {count:5}: " + "  ".join(
                    f"{name} p25 {_quantile(values, 0.25) * 1e6:5.0f} us, median {_quantile(values, 0.5) * 1e6:5.0f} us"
                    for name, values in times.items()), flush=True)
        finally:
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
