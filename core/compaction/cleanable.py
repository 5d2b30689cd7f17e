"""Which part of a compacted partition may be cleaned now, and when that changes: Kafka's `LogCleanerManager`.

The cleanable range runs from the first dirty offset (the last pass's end, at least the log start) to the
first uncleanable offset: the lowest of the last stable offset (no open transaction is ever cleaned), the
active segment's base, and the first closed segment whose largest timestamp is within
``min.compaction.lag.ms`` of now; rounded down to a segment's base. A partition is cleaned when its dirty
ratio, cleanable bytes over clean plus cleanable bytes, is above ``min.cleanable.dirty.ratio``, or when a dirty
closed segment's first batch is older than ``max.compaction.lag.ms`` (and there is something to clean).

One addition to Kafka: a partition is also cleaned once the earliest delete horizon of the tombstones and
transaction markers a pass kept has passed, so they go ``delete.retention.ms`` after that pass rather than at
whichever later pass new dirty data happens to start.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.core.compaction.segments import SegmentModel
from logwright.core.compaction.settings import CompactionSettings


@dataclass(frozen=True, slots=True)
class PartitionView:
    """What the decision needs of one compacted partition, from the store's state and the segment model."""

    log_start_offset: int
    log_end_offset: int
    byte_size: int
    last_stable_offset: int
    cleaned_to: int
    """The last pass's end (Kafka's cleaner checkpoint), 0 before the first pass."""
    next_delete_horizon_ms: int
    """The earliest delete horizon a pass left behind, -1 for none."""


@dataclass(frozen=True, slots=True)
class CleaningChoice:
    """A partition to clean now: the dirty range ``first_dirty_offset..first_uncleanable_offset - 1``."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    forced: bool
    """Due by ``max.compaction.lag.ms`` or by a passed delete horizon rather than by the dirty ratio."""

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0


def first_dirty_offset(view: PartitionView) -> int:
    """Kafka resets a checkpoint below the log start or past the log end to the log start."""
    if view.cleaned_to < view.log_start_offset or view.cleaned_to > view.log_end_offset:
        return view.log_start_offset
    return view.cleaned_to


def choose(view: PartitionView, model: SegmentModel, settings: CompactionSettings, now_ms: int
           ) -> CleaningChoice | None:
    """The range to clean now, or ``None`` while the partition is not due."""
    first_dirty = first_dirty_offset(view)
    candidates = [view.last_stable_offset]
    if model.active_base_offset is not None:
        candidates.append(model.active_base_offset)
    if settings.min_compaction_lag_ms > 0:
        too_new = now_ms - settings.min_compaction_lag_ms
        for segment in model.closed():
            if segment.next_offset > first_dirty and segment.largest_timestamp > too_new:
                candidates.append(segment.base_offset)
                break
    first_uncleanable = max(first_dirty, model.base_of_segment_holding(min(candidates)))
    cleanable_bytes = sum(segment.byte_size for segment in model.segments
                          if segment.base_offset >= first_dirty and segment.next_offset <= first_uncleanable)
    clean_bytes = max(view.byte_size - model.byte_size, 0)
    if clean_bytes + cleanable_bytes == 0:
        return None
    lag_due = cleanable_bytes > 0 and _max_lag_passed(model, first_dirty, settings, now_ms)
    horizon_due = 0 <= view.next_delete_horizon_ms <= now_ms
    choice = CleaningChoice(first_dirty, first_uncleanable, clean_bytes, cleanable_bytes, lag_due or horizon_due)
    if choice.forced or choice.dirty_ratio > settings.min_cleanable_dirty_ratio:
        return choice
    return None


def _max_lag_passed(model: SegmentModel, first_dirty: int, settings: CompactionSettings, now_ms: int) -> bool:
    earliest = _earliest_dirty_first_batch(model, first_dirty)
    return earliest is not None and earliest < now_ms - settings.max_compaction_lag_ms


def _earliest_dirty_first_batch(model: SegmentModel, first_dirty: int) -> int | None:
    stamps = [segment.first_batch_timestamp for segment in model.closed()
              if segment.next_offset > first_dirty and segment.first_batch_timestamp > 0]
    return min(stamps) if stamps else None


def due_at(view: PartitionView, model: SegmentModel, settings: CompactionSettings, now_ms: int) -> int | None:
    """The next time (ms, after ``now_ms``) at which `choose` may answer differently by time alone.

    New appends change the answer too; the caller asks again after them. ``None``: time alone changes nothing.
    """
    times: list[int] = []
    first_dirty = first_dirty_offset(view)
    earliest = _earliest_dirty_first_batch(model, first_dirty)
    if earliest is not None and settings.max_compaction_lag_ms < 2**62:
        times.append(earliest + settings.max_compaction_lag_ms + 1)
    if settings.min_compaction_lag_ms > 0:
        times += [segment.largest_timestamp + settings.min_compaction_lag_ms for segment in model.closed()
                  if segment.next_offset > first_dirty]
    if view.next_delete_horizon_ms >= 0:
        times.append(view.next_delete_horizon_ms)
    future = [time for time in times if time > now_ms]
    return min(future) if future else None
