"""Each partition's open and aborted transactions, known from appends and markers, never from reading batches.

A transactional batch's producer id and first offset are known when it is appended, so READ_COMMITTED
needs no decoding: the last stable offset (LSO) is the first offset of the earliest transaction still
open on the partition (the high watermark when none is), and a Fetch returns the aborted transactions
(producer id, first offset) overlapping what it reads, so clients drop their records. Aborted ranges
below the log start are forgotten when the log is truncated.

Aborts are kept here only from markers written before the store indexed them (`TransactionMarkerWritten.
indexed_abort`): kept in this row, every transaction of the partition rewrote all of them (15 ms a transaction
at 100,000, bench/aborted_transactions.py). Newer ones are rows of the store's index, as Kafka's segment
transaction index (`RocksEventStore.aborted`); readers ask both.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from logwright.core.errors import InvalidTxnState
from logwright.core.events import Event, LogTruncated, RecordsAppended, TopicDeleted
from logwright.core.events.transactions import TransactionMarkerWritten
from logwright.core.flat_sequence import FlatSequence
from logwright.core.projection import Projection


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    producer_id: int
    first_offset: int


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """An aborted transaction's records on the partition span ``first_offset..last_offset`` (its marker)."""

    producer_id: int
    first_offset: int
    last_offset: int


class AbortedTransactions(FlatSequence[AbortedTransaction]):
    """A partition's aborted transactions in the order of their markers, stored as flat integers (producer id,
    first offset, marker offset, ...): every transaction on the partition writes the row again, aborted list included
    (50,000 entries: 64 ms as dataclasses, 7 ms flat, 2 ms with the flat form kept and extended; the list still grows
    with every abort until retention moves the log start past it, bench/aborted_transactions.py)."""

    ENTRY = AbortedTransaction
    __slots__ = ()

    def with_entry(self, entry: AbortedTransaction) -> AbortedTransactions:
        return AbortedTransactions._built(*self._with(entry))


NO_ABORTED = AbortedTransactions()


@dataclass(frozen=True, slots=True)
class PartitionTransactions:
    open: tuple[OpenTransaction, ...] = ()
    aborted: AbortedTransactions = NO_ABORTED

    def __post_init__(self) -> None:
        if not isinstance(self.aborted, AbortedTransactions):  # decoded from a store, or written in a test
            object.__setattr__(self, "aborted", AbortedTransactions(self.aborted))

    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset of the earliest open transaction, capped by the high watermark."""
        return min([high_watermark, *(entry.first_offset for entry in self.open)])

    def aborted_between(self, start_offset: int, end_offset: int) -> tuple[AbortedTransaction, ...]:
        """The aborted transactions with records in ``start_offset..end_offset - 1`` (what a Fetch returns). They are
        kept in the order of their markers, so the first whose marker is at ``start_offset`` or later is found by
        bisection; a transaction's records may start long before its marker, so the rest are looked at."""
        if start_offset >= end_offset:
            return ()
        first = bisect_left(self.aborted, start_offset, key=_marker_offset)
        return tuple(entry for entry in self.aborted[first:] if entry.first_offset < end_offset)


def check_idempotent_append(transactions: object, producer_id: int) -> None:
    """A batch that is not transactional may not come from a producer whose transaction is open on the partition
    (``transactions``: the partition's `PartitionTransactions` row, if any): Kafka 4.4 refuses it with
    INVALID_TXN_STATE ("expected a transactional write"), which keeps a transaction's records all of one kind."""
    if isinstance(transactions, PartitionTransactions) and any(
            entry.producer_id == producer_id for entry in transactions.open):
        raise InvalidTxnState(f"producer id {producer_id} has a transaction open on the partition: its batches "
                              "there must be transactional")



def _marker_offset(entry: AbortedTransaction) -> int:
    return entry.last_offset


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, RecordsAppended):
        return (str(event.partition_id),) if event.transactional and event.base_sequence >= 0 else ()
    if isinstance(event, TransactionMarkerWritten | LogTruncated):
        return (str(event.partition_id),)
    if isinstance(event, TopicDeleted):
        return tuple(str(partition_id) for partition_id in event.partition_ids)
    return ()


def _nonempty(state: PartitionTransactions) -> PartitionTransactions | None:
    return state if state.open or state.aborted else None


def _unchanged(event: Event, state: PartitionTransactions | None) -> PartitionTransactions | None:
    return state


def _on_records_appended(event: RecordsAppended, state: PartitionTransactions | None) -> PartitionTransactions | None:
    current = state or PartitionTransactions()
    if any(entry.producer_id == event.producer_id for entry in current.open):
        return state
    return PartitionTransactions((*current.open, OpenTransaction(event.producer_id, event.base_offset)),
                                 current.aborted)


def ending_abort(state: PartitionTransactions | None, producer_id: int, marker_offset: int
                 ) -> tuple[int, int] | None:
    """The first offset of ``producer_id``'s transaction on the partition and the partition's last stable offset once
    its ABORT marker at ``marker_offset`` ends it, as `TransactionMarkerWritten` carries them; ``None`` when the
    producer has no transaction open there (no records to abort)."""
    if state is None:
        return None
    ending = [entry.first_offset for entry in state.open if entry.producer_id == producer_id]
    if not ending:
        return None
    still_open = [entry.first_offset for entry in state.open if entry.producer_id != producer_id]
    return ending[0], min(still_open, default=marker_offset + 1)


def _on_transaction_marker_written(event: TransactionMarkerWritten,
                                   state: PartitionTransactions | None) -> PartitionTransactions | None:
    current = state or PartitionTransactions()
    ending = [entry for entry in current.open if entry.producer_id == event.producer_id]
    still_open = tuple(entry for entry in current.open if entry.producer_id != event.producer_id)
    aborted = current.aborted
    if ending and not event.committed and not event.indexed_abort:  # a marker written before the store's index
        aborted = aborted.with_entry(AbortedTransaction(event.producer_id, ending[0].first_offset, event.offset))
    return _nonempty(PartitionTransactions(still_open, aborted))


def _on_log_truncated(event: LogTruncated, state: PartitionTransactions | None) -> PartitionTransactions | None:
    if state is None:
        return None
    first = bisect_left(state.aborted, event.log_start_offset, key=_marker_offset)
    kept = state.aborted if not first else AbortedTransactions(state.aborted[first:])
    return _nonempty(PartitionTransactions(state.open, kept))


def _on_topic_deleted(event: TopicDeleted, state: PartitionTransactions | None) -> PartitionTransactions | None:
    return None


_Evolve = Callable[[Any, PartitionTransactions | None], PartitionTransactions | None]
_EVOLVE: dict[type[Event], _Evolve] = {
    RecordsAppended: _on_records_appended,
    TransactionMarkerWritten: _on_transaction_marker_written,
    LogTruncated: _on_log_truncated,
    TopicDeleted: _on_topic_deleted,
}
"""By the event's exact type (`partition_log._EVOLVE` says why not singledispatch)."""


PARTITION_TRANSACTIONS: Projection[PartitionTransactions] = Projection(
    name="partition_transactions", entity_keys=_keys,
    evolve=lambda state, event, key: _EVOLVE.get(type(event), _unchanged)(event, state),
    handles=frozenset({RecordsAppended, TransactionMarkerWritten, LogTruncated, TopicDeleted}),
    removed_by=frozenset({TopicDeleted}),
)
