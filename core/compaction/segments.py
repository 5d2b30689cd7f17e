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
    largest_timestamp_offset: int = -1
    """The base offset of the first batch whose max timestamp is ``largest_timestamp`` (Kafka's
    ``offsetOfMaxTimestampSoFar``, by batch): where ListOffsets MAX_TIMESTAMP looks in this segment."""


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
                                         base_offset))
            return
        active.next_offset = next_offset
        active.byte_size += byte_size
        if max_timestamp > active.largest_timestamp:
            active.largest_timestamp = max_timestamp
            active.largest_timestamp_offset = base_offset

    def forget_below(self, offset: int) -> None:
        """Drop the segments wholly below ``offset`` (cleaned, or below a new log start)."""
        kept = [segment for segment in self.segments if segment.next_offset > offset]
        if len(kept) != len(self.segments):
            self.segments = kept

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
