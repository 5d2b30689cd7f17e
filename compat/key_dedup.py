"""Business-key deduplication at append: one produced batch checked against its partition's window and rewritten.

`appends.stage_batch` calls `plan_deduplication` for partitions an admission plugin asked to deduplicate
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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from logwright.compat.wire.compression import inflate
from logwright.compat.wire.record_batch import BatchHeader, build_batch, decode_records, parse_header
from logwright.core.errors import CorruptRecords
from logwright.core.events import Event
from logwright.core.events.keys import DedupKeysIndexed, DuplicateDropped
from logwright.core.keys.dedup import (
    RECORD_KEY,
    Classification,
    Deduplication,
    DroppedForStored,
    Verdict,
    WindowIndex,
    classify_keys,
)
from logwright.core.log.record_keys import UnreadableRecords, keyed_records, record_keys

__all__ = ["DedupPlan", "dedup_keys", "plan_deduplication", "remember", "window_index"]

_INDEX = "key_dedup.window_index"


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
            return record_keys(data, inflate)
        key_of = deduplication.key_of
        return [key_of(record) for record in keyed_records(data, inflate)]
    except UnreadableRecords as error:
        raise CorruptRecords(f"the records' {deduplication.source} dedup keys cannot be read: {error}") from error


def window_index(memo: dict[str, Any], rows: Callable[[], Mapping[str, object]]) -> WindowIndex:
    """The broker's `WindowIndex`, kept in ``memo`` (the broker's plugin memo, emptied when the store reloads, so
    staged keys a failed commit dropped are forgotten) and built from the ``dedup_window`` rows when missing."""
    index = memo.get(_INDEX)
    if not isinstance(index, WindowIndex):
        index = memo[_INDEX] = WindowIndex.of_rows(rows().items())
    return index


def plan_deduplication(partition_id: int, data: memoryview | bytes, header: BatchHeader, deduplication: Deduplication,
                       window: WindowIndex, now_ms: int, keys: Sequence[bytes | None] | None = None
                       ) -> DedupPlan:
    """Classify the batch's records against ``window``, looked up once for the whole batch; ``keys`` when the
    caller has read them already (a compacted topic's keyless check). Raises `CorruptRecords` when the records
    do not parse. `remember` adds the stored keys to ``window`` once the plan's events are staged."""
    if keys is None or deduplication.source != RECORD_KEY:
        keys = dedup_keys(data, deduplication)
    window.prune(now_ms)
    get = window.partition(partition_id).get
    classification = classify_keys(keys, lambda digests: list(map(get, digests)), now_ms)
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


def remember(window: WindowIndex, staged: Sequence[Event]) -> None:
    """Index the keys a staged `DedupKeysIndexed` names (a plan's events, once staged)."""
    for event in staged:
        if isinstance(event, DedupKeysIndexed):
            window.add(event.partition_id, event.expires_at_ms, event.entries)
