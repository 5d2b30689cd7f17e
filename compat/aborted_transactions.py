"""A partition's aborted transactions as Fetch, pop and the log cleaner read them: from the store's index of aborted
transactions (`RocksEventStore.aborted`, rows written with their ABORT markers, as Kafka's segment transaction index)
and, for markers written before that index, from the partition's `PartitionTransactions.aborted` row.

Kept in the row, every transaction of the partition rewrote every abort it kept until retention dropped them (15 ms a
transaction at 100,000 kept); indexed, an abort is one row written once.
"""

from __future__ import annotations

from logwright.core.transactions.partition_transactions import PartitionTransactions
from logwright.eventstore.rocksdb import RocksEventStore


def aborted_between(store: RocksEventStore, partition_id: int, start_offset: int, end_offset: int
                    ) -> list[tuple[int, int, int]]:
    """(producer id, first offset, marker offset) of the aborted transactions with records in ``start_offset..
    end_offset - 1``: the ones kept in the partition's row first (older markers), then the indexed ones. An empty
    range has none, asked of neither: a read_committed Fetch asks for every partition it reads, and an idle
    consumer's reads are all empty."""
    if start_offset >= end_offset:
        return []
    state = store.state("partition_transactions", str(partition_id))
    kept = [(entry.producer_id, entry.first_offset, entry.last_offset)
            for entry in state.aborted_between(start_offset, end_offset)] if isinstance(
        state, PartitionTransactions) and state.aborted else []
    return kept + store.aborted(partition_id, start_offset, end_offset)
