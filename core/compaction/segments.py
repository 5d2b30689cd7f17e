"""Kafka's log segments, as a model: where a compacted partition's active segment starts.

RocksDB has no segment files, but Kafka's cleaner semantics are stated in segments: only closed segments are
cleaned, ``min.compaction.lag.ms`` is judged per segment's largest timestamp and ``max.compaction.lag.ms`` by a
segment's first batch. So the cleaner keeps, per compacted partition, the segments from its first dirty offset
on, rolled exactly when Kafka rolls one at append (`rolls`): when the incoming batch would take the segment past
``segment.bytes``, or its timestamp is more than ``min(segment.ms, max.compaction.lag.ms)`` after the segment's
first batch. The model lives in memory and is rebuilt from the stored batch headers at start-up; it is a
deterministic function of those headers and the configs, so nothing of it needs storing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from logwright.core.compaction.settings import CompactionSettings


@dataclass(slots=True)
class Segment:
    """A modelled segment: ``base_offset`` up to (excluding) ``next_offset``."""

    base_offset: int
    next_offset: int
    first_batch_timestamp: int
    """The max timestamp of its first batch: Kafka's rolling-based timestamp, and what the max lag is judged by."""
    largest_timestamp: int
    byte_size: int
    maxima: list[tuple[int, int]] = field(default_factory=list)
    """``(max timestamp, base offset)`` of each batch that no later batch of the segment exceeds, in offset
    order (timestamps non-increasing): the first is the segment's largest and the first batch holding it
    (Kafka's ``maxTimestampSoFar``/``offsetOfMaxTimestampSoFar``, a tie keeping the earlier), and the first at
    or after an offset is the largest from there on, which is what is left to know of a segment a pass ended
    inside. Rising timestamps keep one entry; at most `MAXIMA_KEPT` (the oldest after the first dropped)."""

    def append_maximum(self, max_timestamp: int, base_offset: int) -> None:
        while self.maxima and self.maxima[-1][0] < max_timestamp:
            self.maxima.pop()
        self.maxima.append((max_timestamp, base_offset))
        if len(self.maxima) > MAXIMA_KEPT:
            del self.maxima[1]

    @property
    def largest(self) -> tuple[int, int] | None:
        """``(timestamp, base offset of the first batch with it)`` of what the model knows of this segment."""
        return self.maxima[0] if self.maxima else None


MAXIMA_KEPT = 256
"""Falling timestamps over more batches than this in one segment (a backfill) lose the oldest after the first:
a pass ending among them may leave ListOffsets MAX_TIMESTAMP a smaller maximum of that segment's rest."""


def rolls(active: Segment, byte_size: int, max_timestamp: int, settings: CompactionSettings) -> bool:
    """Whether Kafka rolls ``active`` before appending a batch of ``byte_size`` bytes and ``max_timestamp``."""
    if active.byte_size == 0:
        return False
    if active.byte_size > settings.segment_bytes - byte_size:
        return True
    if active.first_batch_timestamp < 0 or max_timestamp < 0:
        return False
    return max_timestamp - active.first_batch_timestamp > settings.roll_ms


@dataclass(slots=True)
class SegmentModel:
    """The segments of one partition from the first dirty offset on; the last one is the active segment."""

    segments: list[Segment] = field(default_factory=list)

    def append(self, base_offset: int, next_offset: int, byte_size: int, max_timestamp: int,
               settings: CompactionSettings) -> None:
        """A batch was appended at the end of the log (Produce, a transaction marker)."""
        active = self.segments[-1] if self.segments else None
        if active is None or rolls(active, byte_size, max_timestamp, settings):
            self.segments.append(Segment(base_offset, next_offset, max_timestamp, max_timestamp, byte_size,
                                         [(max_timestamp, base_offset)]))
            return
        active.next_offset = next_offset
        active.byte_size += byte_size
        active.largest_timestamp = max(active.largest_timestamp, max_timestamp)
        active.append_maximum(max_timestamp, base_offset)

    def forget_below(self, offset: int) -> None:
        """Drop the segments wholly below ``offset`` (cleaned, or below a new log start), and the maxima below it
        of the segment holding it (the pass that ended there recorded what it kept below)."""
        kept = [segment for segment in self.segments if segment.next_offset > offset]
        if len(kept) != len(self.segments):
            self.segments = kept
        if kept and kept[0].base_offset < offset and kept[0].maxima:
            above = [maximum for maximum in kept[0].maxima if maximum[1] >= offset]
            kept[0].maxima = above or kept[0].maxima[-1:]  # the last batch may hold ``offset`` (a new log start)

    @property
    def active_base_offset(self) -> int | None:
        return self.segments[-1].base_offset if self.segments else None

    @property
    def byte_size(self) -> int:
        return sum(segment.byte_size for segment in self.segments)

    def closed(self) -> list[Segment]:
        return self.segments[:-1]

    def base_of_segment_holding(self, offset: int) -> int:
        """The base offset of the segment holding ``offset`` (``offset`` itself when none does)."""
        for segment in self.segments:
            if segment.base_offset <= offset < segment.next_offset:
                return segment.base_offset
        return offset
