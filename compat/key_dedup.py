"""Business-key deduplication at append: one produced batch checked against its partition's window and rewritten.

`produce.stage_batch` calls `plan_deduplication` for partitions an admission plugin asked to deduplicate
(`Admission.deduplicate`), after the producer-sequence check and before the append. The batch's keys are
decoded once (`core.log.record_keys`) and classified (`core.keys.dedup.classify`); records whose key the
window holds, or an earlier record of the same batch, are not stored. With none dropped the batch is stored
as received; with some, the rest are written as a new batch (same codec, producer id, epoch and base
sequence, timestamps kept, offsets contiguous, CRC computed anew); with all, nothing is stored. The index
entries and the `DuplicateDropped` event go in the append's WriteBatch.

Transactional batches are never deduplicated (`stage_batch` does not ask): their records may yet be aborted,
so they could neither be an original nor be dropped for one without losing data, and a transaction is
already its own unit of exactly-once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from logwright.compat.wire.compression import decompress
from logwright.compat.wire.record_batch import BatchHeader, build_batch, decode_records, parse_header
from logwright.core.errors import CorruptRecords
from logwright.core.events import Event
from logwright.core.events.keys import DedupKeysIndexed, DuplicateDropped
from logwright.core.keys.dedup import (
    Deduplication,
    DroppedForEarlier,
    DroppedForStored,
    Kept,
    SeenKey,
    Verdict,
    classify,
    entity_key,
)
from logwright.core.log.record_keys import UnreadableRecords, keyed_records

__all__ = ["DedupPlan", "plan_deduplication"]


@dataclass(frozen=True, slots=True)
class DedupPlan:
    """What to store of one batch and the events that say why; offsets follow once the append numbers it."""

    partition_id: int
    header: BatchHeader
    verdicts: tuple[Verdict, ...]
    stored: tuple[bytes | memoryview, BatchHeader] | None
    """The batch to append (the one received when nothing was dropped); ``None`` when every record was."""
    now_ms: int
    window_ms: int

    @property
    def dropped_any(self) -> bool:
        return any(not isinstance(verdict, Kept) for verdict in self.verdicts)

    def offsets(self, base_offset: int) -> list[int]:
        """The offset each record as sent ends up answered with: its own, or its original's."""
        own: list[int] = []
        offsets: list[int] = []
        for verdict in self.verdicts:
            if isinstance(verdict, Kept):
                offsets.append(base_offset + len(own))
                own.append(offsets[-1])
            elif isinstance(verdict, DroppedForStored):
                offsets.append(verdict.offset)
            else:
                offsets.append(offsets[verdict.index])
        return offsets

    def events(self, base_offset: int) -> list[Event]:
        """The index entries of the stored records and, when any was dropped, the `DuplicateDropped`."""
        offsets = self.offsets(base_offset)
        entries = tuple((verdict.digest, offset) for verdict, offset in zip(self.verdicts, offsets, strict=True)
                        if isinstance(verdict, Kept) and verdict.digest is not None)
        events: list[Event] = []
        if entries:
            events.append(DedupKeysIndexed(self.partition_id, self.now_ms, self.now_ms + self.window_ms, entries))
        if self.dropped_any:
            duplicates = tuple((index, verdict.digest, offsets[index]) for index, verdict in enumerate(self.verdicts)
                               if isinstance(verdict, DroppedForStored | DroppedForEarlier))
            header = self.header
            events.append(DuplicateDropped(self.partition_id, self.now_ms, offsets[0], header.record_count,
                                           duplicates, header.producer_id, header.producer_epoch,
                                           header.base_sequence))
        return events


def plan_deduplication(partition_id: int, data: memoryview | bytes, header: BatchHeader, deduplication: Deduplication,
                       recall: Callable[[str], object], now_ms: int) -> DedupPlan:
    """Classify the batch's records against ``recall`` (the ``dedup_window`` projection's state by entity key);
    raises `CorruptRecords` when the records do not parse."""
    try:
        keyed = keyed_records(data, decompress)
    except UnreadableRecords as error:
        raise CorruptRecords(f"the records' {deduplication.source} dedup keys cannot be read: {error}") from error

    def seen(digest: bytes) -> SeenKey | None:
        state = recall(entity_key(partition_id, digest))
        return state if isinstance(state, SeenKey) else None

    verdicts = classify(keyed, deduplication, seen, now_ms)
    stored: tuple[bytes | memoryview, BatchHeader] | None = (data, header)
    if any(not isinstance(verdict, Kept) for verdict in verdicts):
        stored = _without_duplicates(data, header, verdicts)
    return DedupPlan(partition_id, header, verdicts, stored, now_ms, deduplication.window_ms)


def _without_duplicates(data: memoryview | bytes, header: BatchHeader, verdicts: tuple[Verdict, ...]
                        ) -> tuple[bytes | memoryview, BatchHeader] | None:
    records = [record for record, verdict in zip(decode_records(data), verdicts, strict=True)
               if isinstance(verdict, Kept)]
    if not records:
        return None
    batch = build_batch(records, header.base_offset, header.compression, header.producer_id, header.producer_epoch,
                        header.base_sequence, partition_leader_epoch=header.partition_leader_epoch)
    return batch, parse_header(batch)
