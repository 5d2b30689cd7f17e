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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from logwright.compat.wire.compression import decompress
from logwright.compat.wire.record_batch import BatchHeader, build_batch, decode_records, parse_header
from logwright.core.errors import CorruptRecords
from logwright.core.events import Event
from logwright.core.events.keys import DedupKeysIndexed, DuplicateDropped
from logwright.core.keys.dedup import (
    RECORD_KEY,
    Classification,
    Deduplication,
    DroppedForStored,
    SeenKey,
    Verdict,
    classify_keys,
    entity_prefix,
)
from logwright.core.log.record_keys import UnreadableRecords, keyed_records, record_keys

__all__ = ["DedupPlan", "dedup_keys", "plan_deduplication"]


@dataclass(frozen=True, slots=True)
class DedupPlan:
    """What to store of one batch and the events that say why; offsets follow once the append numbers it."""

    partition_id: int
    header: BatchHeader
    classification: Classification
    stored: tuple[bytes | memoryview, BatchHeader] | None
    """The batch to append (the one received when nothing was dropped); ``None`` when every record was."""
    now_ms: int
    window_ms: int

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        return self.classification.verdicts()

    @property
    def dropped_any(self) -> bool:
        return bool(self.classification.dropped)

    def first_offset(self, base_offset: int) -> int:
        """The offset the produce is answered with: the first record's own, or its original's."""
        return self.offsets(base_offset)[0] if self.classification.dropped else base_offset

    def offsets(self, base_offset: int) -> list[int]:
        """The offset each record as sent ends up answered with: its own, or its original's."""
        dropped = self.classification.dropped
        if not dropped:
            return list(range(base_offset, base_offset + len(self.classification.digests)))
        own = base_offset
        offsets: list[int] = []
        for index in range(len(self.classification.digests)):
            verdict = dropped.get(index)
            if verdict is None:
                offsets.append(own)
                own += 1
            elif isinstance(verdict, DroppedForStored):
                offsets.append(verdict.offset)
            else:
                offsets.append(offsets[verdict.index])
        return offsets

    def events(self, base_offset: int) -> list[Event]:
        """The index entries of the stored records and, when any was dropped, the `DuplicateDropped`."""
        digests, dropped = self.classification.digests, self.classification.dropped
        events: list[Event] = []
        if not dropped:
            entries = tuple((digest, offset) for offset, digest in enumerate(digests, base_offset)
                            if digest is not None)
            if entries:
                events.append(DedupKeysIndexed(self.partition_id, self.now_ms, self.now_ms + self.window_ms, entries))
            return events
        offsets = self.offsets(base_offset)
        entries = tuple((digest, offsets[index]) for index, digest in enumerate(digests)
                        if digest is not None and index not in dropped)
        if entries:
            events.append(DedupKeysIndexed(self.partition_id, self.now_ms, self.now_ms + self.window_ms, entries))
        duplicates = tuple((index, verdict.digest, offsets[index]) for index, verdict in sorted(dropped.items()))
        header = self.header
        events.append(DuplicateDropped(self.partition_id, self.now_ms, offsets[0], header.record_count,
                                       duplicates, header.producer_id, header.producer_epoch, header.base_sequence))
        return events


def dedup_keys(data: memoryview | bytes, deduplication: Deduplication) -> list[bytes | None]:
    """Each record's dedup key (``None``: none); the record key through the keys-only reader, a header through
    the full one. Raises `CorruptRecords` when the records do not parse."""
    try:
        if deduplication.source == RECORD_KEY:
            return record_keys(data, decompress)
        key_of = deduplication.key_of
        return [key_of(record) for record in keyed_records(data, decompress)]
    except UnreadableRecords as error:
        raise CorruptRecords(f"the records' {deduplication.source} dedup keys cannot be read: {error}") from error


def plan_deduplication(partition_id: int, data: memoryview | bytes, header: BatchHeader, deduplication: Deduplication,
                       window: Mapping[str, object], now_ms: int, keys: Sequence[bytes | None] | None = None
                       ) -> DedupPlan:
    """Classify the batch's records against ``window`` (the ``dedup_window`` projection's rows by entity key),
    looked up once for the whole batch; ``keys`` when the caller has read them already (a compacted topic's
    keyless check). Raises `CorruptRecords` when the records do not parse."""
    if keys is None or deduplication.source != RECORD_KEY:
        keys = dedup_keys(data, deduplication)
    prefix, get = entity_prefix(partition_id), window.get

    def recall_many(digests: list[bytes]) -> list[SeenKey | None]:
        found = list(map(get, map(prefix.__add__, map(bytes.hex, digests))))
        if not any(found):  # the common case: no key of the batch in the window
            return cast(list[SeenKey | None], found)
        return [entry if isinstance(entry, SeenKey) else None for entry in found]

    classification = classify_keys(keys, recall_many, now_ms)
    stored: tuple[bytes | memoryview, BatchHeader] | None = (data, header)
    if classification.dropped:
        stored = _without_duplicates(data, header, classification)
    return DedupPlan(partition_id, header, classification, stored, now_ms, deduplication.window_ms)


def _without_duplicates(data: memoryview | bytes, header: BatchHeader, classification: Classification
                        ) -> tuple[bytes | memoryview, BatchHeader] | None:
    dropped = classification.dropped
    records = [record for index, record in enumerate(decode_records(data)) if index not in dropped]
    if not records:
        return None
    batch = build_batch(records, header.base_offset, header.compression, header.producer_id, header.producer_epoch,
                        header.base_sequence, partition_leader_epoch=header.partition_leader_epoch)
    return batch, parse_header(batch)
