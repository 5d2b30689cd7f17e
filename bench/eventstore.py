"""Append throughput of `RocksEventStore` against the same writes as raw rocksdict WriteBatches.

One append is what a produce request costs the store: one `RecordsAppended` event (decided in advance, as
the broker decides it before calling the store) and one stored batch of
``--records`` records, round-robin over ``--partitions`` partitions; a commit covers ``--per-commit`` appends,
as one turn of the event loop would. The raw run writes the same keys and values (events, records, the
partitions' state rows, the projections' covered sequences) with pre-encoded bytes, in WriteBatches of the
same size, under the same durability: the floor the store is measured against (target: store >= 70%).

    .venv/bin/python bench/eventstore.py [--payloads 100,1024] [--durability wal,fsync] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import struct
import tempfile
import time
from dataclasses import dataclass, replace

from logwright.core import CORE_PROJECTIONS
from logwright.core.config.configs import default_registry as default_configs
from logwright.core.events import RecordsAppended
from logwright.core.log.catalog import COUNTER_KEY, create_topic, topic_key
from logwright.core.log.partition_log import PartitionState, append_batch, partition_key
from logwright.eventstore import keys
from logwright.eventstore.codec import default_registry
from logwright.eventstore.interface import Durability, StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore
from rich.console import Console
from rich.table import Table
from rocksdict import Options, Rdict, WriteBatch, WriteOptions

_HEADER = struct.Struct(">qiibIhiqqqhii")
RECORD_OVERHEAD = 8
"""Bytes a v2 record adds to its value when the key is null and there are no headers (about 8)."""
BUSY_PARTITION = PartitionState(0, 0, 1_000_000, 1 << 30, 10_000, 1_700_000_000_000)
"""A partition state of realistic encoded size for the raw run's state rows."""


@dataclass(frozen=True, slots=True)
class Case:
    payload: int
    records: int
    per_commit: int
    partitions: int
    durability: Durability
    megabytes: int

    @property
    def batch_size(self) -> int:
        return _HEADER.size + self.records * (self.payload + RECORD_OVERHEAD)

    @property
    def appends(self) -> int:
        appends = self.megabytes * 1_000_000 // self.batch_size
        return max(self.per_commit, appends - appends % self.per_commit)


@dataclass(frozen=True, slots=True)
class Result:
    seconds: float
    appends: int
    payload_bytes: int

    @property
    def appends_per_second(self) -> float:
        return self.appends / self.seconds

    @property
    def megabytes_per_second(self) -> float:
        return self.payload_bytes / self.seconds / 1_000_000


def batch_bytes(case: Case) -> bytes:
    """A RecordBatch v2 header and incompressible records, as a producer would send them."""
    body = os.urandom(case.records * (case.payload + RECORD_OVERHEAD))
    header = _HEADER.pack(0, _HEADER.size - 12 + len(body), 0, 2, 0, 0, case.records - 1, 0, 0, -1, -1, -1,
                          case.records)
    return header + body


def produce_requests(
    case: Case, data: bytes, partition_ids: tuple[int, ...]
) -> list[tuple[RecordsAppended, StoredBatch]]:
    """The appends of a run, decided in advance: the broker's decision is not the store's cost."""
    state = {pid: PartitionState(pid) for pid in partition_ids}
    requests = []
    for number in range(case.appends):
        partition_id = partition_ids[number % case.partitions]
        event = append_batch(state[partition_id], case.records, len(data), 0)
        state[partition_id] = PartitionState(partition_id, 0, event.base_offset + event.record_count)
        requests.append((event, StoredBatch(partition_id, event.base_offset, data)))
    return requests


def run_store(path: str, case: Case, data: bytes) -> Result:
    store = RocksEventStore(path, durability=case.durability)
    created = create_topic(store.state("catalog", topic_key("bench")), store.state("catalog", COUNTER_KEY), "bench",
                           case.partitions, (), b"\x00" * 16, default_configs())
    store.append([created])
    store.commit()
    requests = produce_requests(case, data, created.partition_ids)
    started = time.perf_counter()
    for number, (event, batch) in enumerate(requests):
        store.append([event], [batch])
        if number % case.per_commit == case.per_commit - 1:
            store.commit()
    store.commit()
    seconds = time.perf_counter() - started
    assert store.state("partitions", partition_key(created.partition_ids[0])).batch_count > 0
    store.close()
    return Result(seconds, case.appends, case.appends * len(data))


def run_raw(path: str, case: Case, data: bytes) -> Result:
    """The store's writes with every value encoded in advance: what RocksDB alone costs."""
    families = {name: Options(raw_mode=True) for name in keys.COLUMN_FAMILIES}
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    options.create_missing_column_families(True)
    db = Rdict(path, options, column_families=families)
    handles = {name: db.get_column_family_handle(name) for name in keys.COLUMN_FAMILIES}
    events, records, state, meta = handles["events"], handles["records"], handles["state"], handles["meta"]
    write_options = WriteOptions()
    write_options.sync = case.durability is Durability.FSYNC
    sample = append_batch(BUSY_PARTITION, case.records, len(data), 0)
    types = default_registry()
    event_value = types.encode_event(1_700_000_000_000, sample)
    state_value = keys.encode_sequence(1) + types.encode(BUSY_PARTITION)
    meta_keys = [keys.META_STATE_SEQUENCE + b"." + projection.name.encode() for projection in CORE_PROJECTIONS]
    state_keys = [keys.state_key("partitions", partition_key(pid)) for pid in range(case.partitions)]
    started = time.perf_counter()
    batch = WriteBatch(raw_mode=True)
    for number in range(case.appends):
        partition_id = number % case.partitions
        batch.put(keys.event_key(number + 1), event_value, events)
        batch.put(keys.record_key(partition_id, number), data, records)
        if number % case.per_commit == case.per_commit - 1:
            for key in state_keys[: min(case.per_commit, case.partitions)]:
                batch.put(key, state_value, state)
            sequence = keys.encode_sequence(number + 1)
            for key in meta_keys:
                batch.put(key, sequence, meta)
            db.write(batch, write_options)
            batch = WriteBatch(raw_mode=True)
    seconds = time.perf_counter() - started
    del handles, events, records, state, meta
    db.close()
    return Result(seconds, case.appends, case.appends * len(data))


def measure(repeats: int, case: Case, data: bytes, root: str) -> tuple[Result, Result]:
    """Best of ``repeats`` for raw and store, alternating so that load from elsewhere hits both alike."""
    raw: list[Result] = []
    store: list[Result] = []
    for _ in range(repeats):
        for run, results in ((run_raw, raw), (run_store, store)):
            path = tempfile.mkdtemp(dir=root)
            try:
                results.append(run(path, case, data))
            finally:
                shutil.rmtree(path, ignore_errors=True)
    return min(raw, key=lambda r: r.seconds), min(store, key=lambda r: r.seconds)


def profile(case: Case, data: bytes, root: str) -> None:
    path = tempfile.mkdtemp(dir=root)
    profiler = cProfile.Profile()
    try:
        profiler.runcall(run_store, path, case, data)
    finally:
        shutil.rmtree(path, ignore_errors=True)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--payloads", default="100,1024", help="record payload sizes in bytes")
    parser.add_argument("--records", type=int, default=100, help="records per stored batch (one append)")
    parser.add_argument("--per-commit", type=int, default=10, help="appends per commit (one event-loop turn)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--durability", default="wal,fsync")
    parser.add_argument("--megabytes", type=int, default=100, help="batch bytes written per measurement")
    parser.add_argument("--repeats", type=int, default=5, help="best of this many runs")
    parser.add_argument("--dir", default=None, help="where the temporary databases go")
    parser.add_argument("--profile", action="store_true", help="cProfile one store run per case")
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="logwright-bench-", dir=args.dir)
    table = Table(title=f"RocksEventStore append vs raw rocksdict WriteBatch ({args.records} records per append, "
                        f"{args.per_commit} appends per commit, {args.partitions} partitions, best of {args.repeats})")
    for column in ("durability", "payload", "batch", "raw appends/s", "raw MB/s", "store appends/s", "store MB/s",
                   "store/raw"):
        table.add_column(column, justify="right")
    console = Console(width=max(Console().width, 130))
    try:
        for durability in args.durability.split(","):
            for payload in (int(size) for size in args.payloads.split(",")):
                case = Case(payload, args.records, args.per_commit, args.partitions, Durability(durability),
                            args.megabytes)
                data = batch_bytes(case)
                measure(1, replace(case, megabytes=5), data, root)
                raw, store = measure(args.repeats, case, data, root)
                ratio = store.appends_per_second / raw.appends_per_second
                table.add_row(durability, f"{payload} B", f"{len(data) / 1024:.1f} KiB",
                              f"{raw.appends_per_second:,.0f}", f"{raw.megabytes_per_second:,.0f}",
                              f"{store.appends_per_second:,.0f}", f"{store.megabytes_per_second:,.0f}",
                              f"[{'green' if ratio >= 0.7 else 'red'}]{ratio:.0%}[/]")
                if args.profile:
                    console.print(f"profile: {durability}, {payload} B")
                    profile(case, data, root)
        console.print(table)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
