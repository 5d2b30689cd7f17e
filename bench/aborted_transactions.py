"""What a transaction costs on a partition that keeps many aborted transactions.

Before session 42's index, a partition's open and aborted transactions were one row of the `partition_transactions`
projection, so the first transactional batch of a transaction (its producer joins the open list) and its marker each
rewrote the whole row, aborted list included, until retention or DeleteRecords moved the log start past those
markers. Now an abort is a row of the store's index of aborted transactions (`RocksEventStore.aborted`, as Kafka's
segment transaction index), written once. This seeds a fresh store (the default broker's projections, real RocksDB)
with N aborted transactions on one partition through the store's own append, the `RecordsAppended` and
`TransactionMarkerWritten` events the broker stages (``--kept-in-row``: markers as they were written before the
index, which the row keeps), then times, as the broker commits them, the start of a transaction (its first batch,
one commit) and its end (the marker, another commit), committed and aborted, and reports the row's stored size.

    .venv/bin/python bench/aborted_transactions.py [--aborted 0,10000,50000,100000] [--transactions 40]
        [--kept-in-row]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from logwright.core.events import RecordsAppended
from logwright.core.events.transactions import TransactionMarkerWritten
from logwright.core.transactions.partition_transactions import ending_abort
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import PluginHost

PARTITION = 7
SEED_PER_COMMIT = 2_000


def _begin(store: RocksEventStore, offset: int, producer_id: int, sequence: int) -> None:
    store.append([RecordsAppended(PARTITION, offset, 1, 100, 0, producer_id, 0, sequence, True)])


def _end(store: RocksEventStore, offset: int, producer_id: int, committed: bool, kept_in_row: bool) -> None:
    store.append([RecordsAppended(PARTITION, offset, 1, 70, 0, producer_id, 0, -1, True)])  # the marker's batch
    ending = None if committed or kept_in_row else ending_abort(
        store.state("partition_transactions", str(PARTITION)), producer_id, offset)
    first_offset, last_stable_offset = ending or (-1, -1)  # as the transaction coordinator writes it
    store.append([TransactionMarkerWritten(PARTITION, offset, producer_id, 0, committed, first_offset,
                                           last_stable_offset)])


def measure(path: Path, aborted: int, transactions: int, kept_in_row: bool = False) -> dict[str, float]:
    host = PluginHost.for_broker({})
    store = RocksEventStore(path, projections=host.projections(), types=host.type_registry())
    try:
        offset = 0
        for index in range(aborted):
            _begin(store, offset, 1_000 + index % 7, index)
            _end(store, offset + 1, 1_000 + index % 7, committed=False, kept_in_row=kept_in_row)
            offset += 2
            if index % SEED_PER_COMMIT == SEED_PER_COMMIT - 1:
                store.commit()
        store.commit()
        timings: dict[str, list[float]] = {"begin": [], "commit": [], "abort": []}
        for index in range(transactions):
            started = time.perf_counter()
            _begin(store, offset, 42, index)
            store.commit()
            timings["begin"].append(time.perf_counter() - started)
            started = time.perf_counter()
            _end(store, offset + 1, 42, committed=index % 2 == 0, kept_in_row=kept_in_row)
            store.commit()
            timings["commit" if index % 2 == 0 else "abort"].append(time.perf_counter() - started)
            offset += 2
        row = next((len(raw) for _, entity, _, raw in store.stored_states("partition_transactions")
                    if entity == str(PARTITION)), 0)
        return {**{name: statistics.median(values) * 1e3 for name, values in timings.items()}, "row KB": row / 1e3}
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--aborted", default="0,10000,50000,100000", help="aborted transactions kept, comma-separated")
    parser.add_argument("--transactions", type=int, default=40, help="transactions timed at each size")
    parser.add_argument("--kept-in-row", action="store_true", help="markers as written before the index")
    args = parser.parse_args(argv)
    print("| aborted transactions kept | a transaction's first batch, ms | its commit marker, ms "
          "| its abort marker, ms | the row, KB |\n|---|---|---|---|---|")
    for aborted in (int(item) for item in args.aborted.split(",")):
        with tempfile.TemporaryDirectory(prefix="logwright-aborted-") as tmp:
            result = measure(Path(tmp) / "data", aborted, args.transactions, args.kept_in_row)
        print(f"| {aborted:,} | {result['begin']:.2f} | {result['commit']:.2f} | {result['abort']:.2f} "
              f"| {result['row KB']:,.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
