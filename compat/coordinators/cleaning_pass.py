"""One compaction pass over one partition, as slices of bounded work: Kafka's `Cleaner.doClean`.

First the key map of the dirty range is built (the latest offset per key, aborted transactions left out);
then every batch from the log start to the pass's end is judged by `core.compaction.retention` and rewritten
or deleted. Each slice reads at most `SLICE_BYTES` of stored batches or works `SLICE_SECONDS`, whichever comes
first (one batch at least); a rewriting slice is one WriteBatch holding its batches and its `PartitionCompacted`
(`RocksEventStore.rewrite_batches`), so a crash keeps a slice whole or not at all, and between slices the event
loop serves produce and fetch. The last slice's event also carries the largest timestamp the pass kept and its
first batch (Kafka's cleaned segments recompute their ``maxTimestampSoFar``), for ListOffsets MAX_TIMESTAMP.
A crash mid-pass leaves some slices compacted and the checkpoint where it was: the next pass does the rest
again, which changes nothing already compacted.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from logwright.compat.aborted_transactions import aborted_between
from logwright.compat.wire.compacted_batch import delete_horizon_ms, rebuild
from logwright.compat.wire.compression import inflate
from logwright.compat.wire.record_batch import RecordBatchError, decode_records, parse_header
from logwright.core.compaction.cleanable import CleaningChoice
from logwright.core.compaction.offset_map import OffsetMap
from logwright.core.compaction.retention import BatchFacts, Outcome, TransactionTracker, Verdict, judge
from logwright.core.compaction.settings import CompactionSettings
from logwright.core.events.compaction import PartitionCompacted
from logwright.core.log.partition_log import PartitionState, partition_key
from logwright.core.log.record_keys import UnreadableRecords, record_key_columns
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore

log = logging.getLogger(__name__)

SLICE_BYTES = 1 << 20
"""Stored bytes one slice reads (and at most rewrites) before the event loop gets control back."""
SLICE_SECONDS = 0.02
"""Time after which a slice ends even below `SLICE_BYTES`."""


class SliceBudget:
    """One slice's allowance: `SLICE_BYTES` read or `SLICE_SECONDS` spent, whichever comes first."""

    __slots__ = ("started", "read")

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.read = 0

    def spend(self, size: int) -> bool:
        """Count ``size`` bytes read; ``True`` when the slice must end here."""
        self.read += size
        return self.read >= SLICE_BYTES or time.perf_counter() - self.started >= SLICE_SECONDS


@dataclass(slots=True)
class PassReport:
    """What a finished pass did, for the log line and tests."""

    partition_id: int
    first_dirty_offset: int
    cleaned_to: int = -1
    records_removed: int = 0
    batches_removed: int = 0
    bytes_removed: int = 0
    slices: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    keys: int = 0
    completed: bool = False


@dataclass(slots=True)
class _Rewrite:
    """A slice's staged changes before they become one WriteBatch."""

    rewritten: list[StoredBatch] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    records_removed: int = 0
    bytes_removed: int = 0


def _facts(data: bytes) -> BatchFacts:
    header = parse_header(data)
    return BatchFacts(header.base_offset, header.last_offset, header.producer_id, header.is_transactional,
                      header.is_control, delete_horizon_ms(header), *record_key_columns(data, inflate))


def _partition(store: RocksEventStore, partition_id: int) -> PartitionState | None:
    state = store.state("partitions", partition_key(partition_id))
    return state if isinstance(state, PartitionState) else None


def _aborted(store: RocksEventStore, partition_id: int, end: int) -> tuple[tuple[int, int, int], ...]:
    """The aborted transactions with records the pass reads (from the log start to ``end``, its first uncleanable
    offset): with 100,000 aborts kept, all of them took 78 ms to read."""
    state = _partition(store, partition_id)
    return tuple(aborted_between(store, partition_id, state.log_start_offset if state is not None else 0, end))


def run_pass(store: RocksEventStore, partition_id: int, choice: CleaningChoice, settings: CompactionSettings,
             map_capacity: int, now_ms: int, report: PassReport) -> Iterator[None]:
    """Clean ``partition_id`` over ``choice``; yields between slices, fills ``report`` as it goes (``seconds``
    from start to end, ``cpu_seconds`` the event loop thread's CPU time in the slices themselves)."""
    slices = _run_pass(store, partition_id, choice, settings, map_capacity, now_ms, report)
    while True:
        started = time.thread_time()
        try:
            next(slices)
        except StopIteration:
            return
        finally:
            report.cpu_seconds += time.thread_time() - started
        yield


def _run_pass(store: RocksEventStore, partition_id: int, choice: CleaningChoice, settings: CompactionSettings,
              map_capacity: int, now_ms: int, report: PassReport) -> Iterator[None]:
    started = time.perf_counter()
    end = choice.first_uncleanable_offset
    transactions = TransactionTracker(_aborted(store, partition_id, end))
    offsets = OffsetMap(map_capacity)
    budget = SliceBudget()
    for base_offset, data in store.scan_batches(partition_id, choice.first_dirty_offset, end):
        facts = _readable(partition_id, data)
        if facts is not None and not facts.is_control and not (
                facts.is_transactional and transactions.is_aborted(facts.producer_id, facts.base_offset)):
            if not offsets.fits(len(facts.keys) - facts.keys.count(None)):
                end = base_offset
                break
            offsets.put_all(facts.keys, facts.offsets)
        if budget.spend(len(data)):
            yield
            budget = SliceBudget()
            state = _partition(store, partition_id)
            if state is None:
                return
    report.keys = len(offsets)
    yield from _rewrite(store, partition_id, end, offsets, transactions, settings, now_ms, report)
    report.seconds = time.perf_counter() - started


def _rewrite(store: RocksEventStore, partition_id: int, end: int, offsets: OffsetMap,
             transactions: TransactionTracker, settings: CompactionSettings, now_ms: int,
             report: PassReport) -> Iterator[None]:
    next_horizon, kept_max = -1, (-1, -1)
    state = _partition(store, partition_id)
    position = state.log_start_offset if state is not None else end
    while state is not None:
        slice_ = _Rewrite()
        slice_start, budget, last, cut = max(position, state.log_start_offset), SliceBudget(), None, False
        for base_offset, data in store.scan_batches(partition_id, slice_start, end):
            facts = _readable(partition_id, data)
            last = facts.last_offset if facts is not None else parse_header(data).last_offset
            stored: bytes | None = data
            if facts is not None:
                verdict = judge(facts, offsets, transactions, now_ms, settings.delete_retention_ms)
                stored = _apply(slice_, partition_id, base_offset, data, verdict)
                horizon = verdict.delete_horizon_ms
                if verdict.outcome is not Outcome.DELETE and horizon is not None and horizon > now_ms:
                    next_horizon = horizon if next_horizon < 0 else min(next_horizon, horizon)
            if stored is not None and (kept := parse_header(stored).max_timestamp) > kept_max[0]:
                kept_max = (kept, base_offset)
            if budget.spend(len(data)):
                cut = True
                break
        slice_end = min(last + 1, end) if cut and last is not None else end
        finished = slice_end >= end
        if slice_.rewritten or slice_.deleted or finished:
            event = PartitionCompacted(partition_id, slice_start, slice_end, slice_.records_removed,
                                       len(slice_.deleted), slice_.bytes_removed, end if finished else -1,
                                       next_horizon if finished else -1, *(kept_max if finished else (-1, -1)))
            store.rewrite_batches(event, slice_.rewritten, slice_.deleted)
            report.records_removed += slice_.records_removed
            report.batches_removed += len(slice_.deleted)
            report.bytes_removed += slice_.bytes_removed
        report.slices += 1
        if finished:
            report.cleaned_to = end
            report.completed = True
            return
        position = slice_end
        yield
        state = _partition(store, partition_id)


def _readable(partition_id: int, data: bytes) -> BatchFacts | None:
    """The batch's facts, or ``None`` (kept untouched, with a warning) when its records do not parse."""
    try:
        return _facts(data)
    except (UnreadableRecords, RecordBatchError) as error:
        log.warning("the cleaner keeps an unreadable batch of partition id %d as it is: %s", partition_id, error)
        return None


def _apply(slice_: _Rewrite, partition_id: int, base_offset: int, data: bytes, verdict: Verdict) -> bytes | None:
    """Stage the verdict; the batch as it is stored from now on (``None``: deleted)."""
    if verdict.outcome is Outcome.DELETE:
        slice_.deleted.append(base_offset)
        slice_.records_removed += verdict.removed_records
        slice_.bytes_removed += len(data)
        return None
    if verdict.outcome is Outcome.REWRITE:
        kept_offsets = set(verdict.kept)
        try:
            kept = [record for record in decode_records(data) if record.offset in kept_offsets]
        except RecordBatchError as error:
            log.warning("the cleaner keeps batch %d of partition id %d as it is: %s", base_offset, partition_id, error)
            return data
        rebuilt = rebuild(data, kept, verdict.delete_horizon_ms)
        slice_.rewritten.append(StoredBatch(partition_id, base_offset, rebuilt))
        slice_.records_removed += verdict.removed_records
        slice_.bytes_removed += len(data) - len(rebuilt)
        return rebuilt
    return data


def describe(report: PassReport) -> str:
    return (f"partition id {report.partition_id} compacted from {report.first_dirty_offset} to {report.cleaned_to}: "
            f"{report.records_removed} records, {report.batches_removed} batches and {report.bytes_removed} bytes "
            f"removed, {report.keys} keys, {report.slices} slices, {report.seconds * 1000:.1f} ms "
            f"({report.cpu_seconds * 1000:.1f} ms CPU)")
