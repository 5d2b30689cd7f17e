"""Time and size retention (the ``delete`` of ``cleanup.policy``), decided over modelled segments as Kafka does.

Kafka deletes whole segments from the oldest on (``UnifiedLog.deleteOldSegments``), stopping at the first one
that may stay: by time, a segment goes once ``now - largest timestamp > retention.ms``; by size, while the log
less that segment is still at least ``retention.bytes``. Only segments below the high watermark qualify; when
every segment, the active one included, qualifies, Kafka rolls an empty active segment first and deletes them
all, so an idle topic whose records all expired ends up empty. The log start then moves to the first kept
segment's base offset (the log end when none is kept).

Segments are rolled over the stored batch headers from the log start with the compaction model's rule
(`core.compaction.segments.rolls`: ``segment.bytes``, ``segment.ms``). Kafka's segments were rolled from the
first offset ever written, so after a DeleteRecords inside a segment their bases can differ from the model's;
the deleted amounts are whole segments either way. Everything here is pure: the caller feeds the headers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from logwright.core.compaction.segments import Segment, rolls
from logwright.core.compaction.settings import CompactionSettings, policies

FOREVER = -1
"""``retention.ms`` / ``retention.bytes`` of -1: no limit."""


def broker_retention_ms(broker_config: Callable[[str], str | None]) -> int:
    """Kafka's ``log.retention.ms``, else ``log.retention.minutes``, else ``log.retention.hours`` (168): the default
    of a topic's ``retention.ms``. A negative value means forever."""
    synonyms = (("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000))
    for name, factor in synonyms:
        value = broker_config(name)
        if value is not None:
            number = int(value)
            return FOREVER if number < 0 else number * factor
    return 168 * 3_600_000


@dataclass(frozen=True, slots=True)
class RetentionSettings:
    """What retention needs of one topic: its limits (``FOREVER`` for none) and how its segments roll."""

    retention_ms: int
    retention_bytes: int
    segments: CompactionSettings

    @property
    def unlimited(self) -> bool:
        return self.retention_ms < 0 and self.retention_bytes < 0

    @classmethod
    def read(cls, topic_override: Callable[[str], str | None], broker_config: Callable[[str], str | None],
             effective: Callable[[str], str | None]) -> RetentionSettings | None:
        """The topic's settings, or ``None`` when its ``cleanup.policy`` has no ``delete`` (compact only: Kafka
        applies no time or size retention). A topic's own ``retention.ms`` / ``retention.bytes`` win over the
        broker's ``log.retention.*`` (Kafka's synonyms); validated values only."""
        if "delete" not in policies(effective("cleanup.policy") or "delete"):
            return None
        own_ms = topic_override("retention.ms")
        retention_ms = int(own_ms) if own_ms is not None else broker_retention_ms(broker_config)
        own_bytes = topic_override("retention.bytes")
        broker_bytes = broker_config("log.retention.bytes")
        retention_bytes = int(own_bytes if own_bytes is not None else broker_bytes if broker_bytes is not None
                              else "-1")
        return cls(retention_ms if retention_ms >= 0 else FOREVER, retention_bytes if retention_bytes >= 0 else FOREVER,
                   CompactionSettings.read(effective))


@dataclass(slots=True)
class RetentionScan:
    """One partition's retention decision, fed batch headers from the log start in offset order.

    `feed` returns ``False`` once the decision is known (a segment that stays has been seen); `finish` is called
    at the log end (or after a ``False``). ``cut`` is then the new log start (``None``: nothing to delete) and
    ``due_at`` when the first kept segment may expire by time (``None``: not by time).
    """

    settings: RetentionSettings
    now_ms: int
    log_bytes: int
    high_watermark: int
    size_excess: int = 0
    cut: int | None = None
    reason: str = ""
    due_at: int | None = None
    kept_bytes: int = 0
    """The size seen of the first segment that stays (a lower bound if the scan stopped inside it)."""
    _segment: Segment | None = None
    _stopped: bool = False

    def __post_init__(self) -> None:
        limit = self.settings.retention_bytes
        self.size_excess = self.log_bytes - limit if limit >= 0 else -1

    def feed(self, base_offset: int, next_offset: int, byte_size: int, max_timestamp: int) -> bool:
        """The next stored batch; ``False`` when the scan may stop."""
        if self._stopped:
            return False
        active = self._segment
        if active is None or rolls(active, byte_size, max_timestamp, self.settings.segments):
            if active is not None and not self._judge(active, closed=True):
                return False
            self._segment = Segment(base_offset, next_offset, max_timestamp, max_timestamp, byte_size)
            return True
        active.next_offset = next_offset
        active.byte_size += byte_size
        active.largest_timestamp = max(active.largest_timestamp, max_timestamp)
        if self._time_keeps(active) and not self._size_breached(active):
            self._stop(active)  # a record within retention.ms: this segment stays whatever else it holds
            return False
        return True

    def finish(self) -> None:
        """The log end was reached: judge the last (active) segment, which Kafka rolls and deletes if it qualifies."""
        if not self._stopped and self._segment is not None and self._segment.byte_size > 0:
            self._judge(self._segment, closed=False)

    def _time_keeps(self, segment: Segment) -> bool:
        retention = self.settings.retention_ms
        return retention < 0 or self.now_ms - segment.largest_timestamp <= retention

    def _size_breached(self, segment: Segment) -> bool:
        return self.size_excess >= 0 and self.size_excess - segment.byte_size >= 0

    def _judge(self, segment: Segment, closed: bool) -> bool:
        """Delete ``segment`` if it qualifies (``True``), else stop here."""
        if segment.next_offset > self.high_watermark:
            self._stop(segment)
            return False
        by_time = not self._time_keeps(segment)
        by_size = self._size_breached(segment)
        if not (by_time or by_size):
            self._stop(segment)
            return False
        if by_size:
            self.size_excess -= segment.byte_size
        self.cut = segment.next_offset
        self.reason = "retention-ms" if by_time else "retention-bytes"
        if not closed:
            self._stopped = True
        return True

    def _stop(self, kept: Segment) -> None:
        self._stopped = True
        self.kept_bytes = kept.byte_size
        if self.settings.retention_ms >= 0 and kept.largest_timestamp >= 0:
            self.due_at = kept.largest_timestamp + self.settings.retention_ms + 1
