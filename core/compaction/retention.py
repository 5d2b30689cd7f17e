"""Which records of a batch a compaction pass keeps: Kafka's cleaner filter, decided without touching bytes.

A record is kept when no later record of its key is in the pass's offset map and either
has a value or is a tombstone whose batch's delete horizon has not passed; a record without a key is dropped,
as Kafka's cleaner drops one. Records of aborted transactions go at once. A transaction marker stays until no
batch of its transaction is left and its delete horizon has passed (`TransactionTracker`). A batch that keeps
a tombstone, or a marker that may go later, gets a delete horizon (now + ``delete.retention.ms``) the first
time a pass keeps it; that horizon is stored in the batch (Kafka's base timestamp with attribute bit 6).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum

from logwright.core.compaction.offset_map import OffsetMap
from logwright.core.log.record_keys import KeyedRecord

ABORT_MARKER = 0
"""The type in a control record's key (version i16, type i16): 0 abort, 1 commit."""


@dataclass(frozen=True, slots=True)
class BatchFacts:
    """One stored batch as the filter sees it: its header fields and its records' offsets, keys and whether each
    value is null, as three columns (a pass reads every record of the log: no object per record)."""

    base_offset: int
    last_offset: int
    producer_id: int
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None
    offsets: Sequence[int]
    keys: Sequence[bytes | None]
    tombstones: Sequence[bool]

    @classmethod
    def of_records(cls, base_offset: int, last_offset: int, producer_id: int, is_transactional: bool,
                   is_control: bool, delete_horizon_ms: int | None, records: Sequence[KeyedRecord]) -> BatchFacts:
        return cls(base_offset, last_offset, producer_id, is_transactional, is_control, delete_horizon_ms,
                   [record.offset for record in records], [record.key for record in records],
                   [record.value_is_null for record in records])

    def marker_type(self) -> int | None:
        """The control record type of a transaction marker batch (``None`` for data or an unreadable key)."""
        if not self.is_control or not self.keys:
            return None
        key = self.keys[0]
        if key is None or len(key) < 4:
            return None
        return int.from_bytes(key[2:4], "big", signed=True)


class Outcome(Enum):
    KEEP = "keep"
    """The batch stays as stored."""
    REWRITE = "rewrite"
    """The batch is rebuilt with ``kept`` records (same base offset and last offset) and ``delete_horizon_ms``."""
    DELETE = "delete"
    """No record is left: the batch goes."""


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: Outcome
    kept: tuple[int, ...] = ()
    """Offsets of the records kept (REWRITE)."""
    delete_horizon_ms: int | None = None
    """The horizon the kept batch carries (KEEP: what it already had)."""
    removed_records: int = 0


@dataclass(slots=True)
class TransactionTracker:
    """Kafka's ``CleanedTransactionMetadata``: which transactions of the pass still have batches in the log.

    ``aborted`` are the partition's aborted transactions as (producer id, first offset, marker offset).
    """

    aborted: tuple[tuple[int, int, int], ...] = ()
    _committed_seen: set[int] = field(default_factory=set)
    _aborted_seen: set[int] = field(default_factory=set)

    def is_aborted(self, producer_id: int, offset: int) -> bool:
        return any(pid == producer_id and first <= offset <= marker for pid, first, marker in self.aborted)

    def on_data(self, batch: BatchFacts) -> bool:
        """A data batch was read; ``True`` when it belongs to an aborted transaction (discard it)."""
        if not batch.is_transactional:
            return False
        if self.is_aborted(batch.producer_id, batch.base_offset):
            self._aborted_seen.add(batch.producer_id)
            return True
        self._committed_seen.add(batch.producer_id)
        return False

    def on_marker(self, batch: BatchFacts) -> bool:
        """A marker was read; ``True`` when none of its transaction's batches was seen (it may go)."""
        marker = batch.marker_type()
        if marker is None:
            return not batch.keys
        if marker == ABORT_MARKER:
            seen = batch.producer_id in self._aborted_seen
            self._aborted_seen.discard(batch.producer_id)
            return not seen
        seen = batch.producer_id in self._committed_seen
        self._committed_seen.discard(batch.producer_id)
        return not seen


def judge(batch: BatchFacts, offsets: OffsetMap, transactions: TransactionTracker, now_ms: int,
          delete_retention_ms: int) -> Verdict:
    """What the pass does with ``batch`` (batches are judged in offset order: the tracker depends on it)."""
    count = len(batch.offsets)
    horizon_passed = batch.delete_horizon_ms is not None and batch.delete_horizon_ms <= now_ms
    if batch.is_control:
        may_go = transactions.on_marker(batch)
        if may_go and horizon_passed:
            return Verdict(Outcome.DELETE, removed_records=count)
        if may_go and batch.delete_horizon_ms is None:
            return Verdict(Outcome.REWRITE, tuple(batch.offsets), now_ms + delete_retention_ms)
        return Verdict(Outcome.KEEP, delete_horizon_ms=batch.delete_horizon_ms)
    if transactions.on_data(batch):
        return Verdict(Outcome.DELETE, removed_records=count)
    kept: list[int] = []
    keeps_tombstone = False
    latest = offsets.latest(batch.keys)
    for offset, key, newer, tombstone in zip(batch.offsets, batch.keys, latest, batch.tombstones, strict=True):
        if _retained(offset, key, newer, tombstone, horizon_passed):
            kept.append(offset)
            keeps_tombstone = keeps_tombstone or tombstone
    if not kept:
        return Verdict(Outcome.DELETE, removed_records=count)
    horizon = batch.delete_horizon_ms
    if keeps_tombstone and horizon is None:
        horizon = now_ms + delete_retention_ms
    if len(kept) == count and horizon == batch.delete_horizon_ms:
        return Verdict(Outcome.KEEP, delete_horizon_ms=horizon)
    return Verdict(Outcome.REWRITE, tuple(kept), horizon, count - len(kept))


def _retained(offset: int, key: bytes | None, latest: int | None, tombstone: bool, horizon_passed: bool) -> bool:
    """Kafka's ``shouldRetainRecord`` (``latest``: the key's offset in the map). Its "past the map's latest
    offset" case does not arise: a pass judges only batches below its end, and the map covers every keyed record
    of the dirty range up to that end."""
    if key is None:
        return False
    if latest is not None and offset < latest:
        return False
    return not tombstone or not horizon_passed
