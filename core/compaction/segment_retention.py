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

Kafka checks only every ``log.retention.check.interval.ms`` (5 min), so a record stamped 1970 stays readable for
a while after its produce there. Logwright acts when due but never earlier than Kafka could: a segment may go
only once the check interval has passed since the newest append to it (`AppendMarks`), so its due time is
``max(newest timestamp + retention.ms, last append + interval)``, by size likewise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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
        policy = effective("cleanup.policy")
        if "delete" not in policies(policy if policy is not None else "delete"):  # "": infinite retention
            return None
        own_ms = topic_override("retention.ms")
        retention_ms = int(own_ms) if own_ms is not None else broker_retention_ms(broker_config)
        own_bytes = topic_override("retention.bytes")
        broker_bytes = broker_config("log.retention.bytes")
        retention_bytes = int(own_bytes if own_bytes is not None else broker_bytes if broker_bytes is not None
                              else "-1")
        return cls(retention_ms if retention_ms >= 0 else FOREVER, retention_bytes if retention_bytes >= 0 else FOREVER,
                   CompactionSettings.read(effective))


CHECK_INTERVAL_MS = 300_000
"""Kafka's ``log.retention.check.interval.ms`` default."""


@dataclass(slots=True)
class AppendMarks:
    """When a partition's recent offsets were appended (broker clock), so no segment goes before Kafka could.

    Entries are ``(first offset, time)`` in offset order: offsets from that one up to the next entry's were
    appended at or before that time. Appends within ``interval // 64`` of the last entry extend it (its time may
    be late by that much: a segment is held at most that much longer, never shorter); entries older than the
    interval are dropped, so a partition holds at most about 65 entries.
    """

    interval_ms: int
    entries: list[tuple[int, int]] = field(default_factory=list)

    def note(self, first_offset: int, now_ms: int) -> None:
        """An append at ``first_offset`` on ``now_ms``."""
        self.prune(now_ms)
        if self.entries and now_ms - self.entries[-1][1] < max(1, self.interval_ms // 64):
            self.entries[-1] = (self.entries[-1][0], max(now_ms, self.entries[-1][1]))
        else:
            self.entries.append((first_offset, now_ms))

    def prune(self, now_ms: int) -> None:
        while self.entries and self.entries[0][1] + self.interval_ms <= now_ms:
            self.entries.pop(0)

    def release(self, next_offset: int) -> int | None:
        """The broker time from which offsets below ``next_offset`` may go (``None``: none was appended within the
        interval): the newest append to them plus the interval."""
        newest = None
        for first_offset, appended in self.entries:
            if first_offset >= next_offset:
                break
            newest = appended
        return None if newest is None else newest + self.interval_ms


@dataclass(slots=True)
class RetentionScan:
    """One partition's retention decision, fed batch headers from the log start in offset order.

    `feed` returns ``False`` once the decision is known (a segment that stays has been seen); `finish` is called
    at the log end (or after a ``False``). ``cut`` is then the new log start (``None``: nothing to delete) and
    ``due_at`` when the first kept segment may go by time, or by size once its appends are old enough (``None``:
    neither is known). ``marks`` holds back segments appended within the check interval.
    """

    settings: RetentionSettings
    now_ms: int
    log_bytes: int
    high_watermark: int
    marks: AppendMarks | None = None
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
        release = self._release(segment)
        if release is not None and release > self.now_ms:
            self._stop(segment)  # appended within the check interval: Kafka might not have looked yet
            self.due_at = release
            return False
        if by_size:
            self.size_excess -= segment.byte_size
        self.cut = segment.next_offset
        self.reason = "retention-ms" if by_time else "retention-bytes"
        if not closed:
            self._stopped = True
        return True

    def _release(self, segment: Segment) -> int | None:
        return None if self.marks is None else self.marks.release(segment.next_offset)

    def _stop(self, kept: Segment) -> None:
        self._stopped = True
        self.kept_bytes = kept.byte_size
        if self.settings.retention_ms >= 0 and kept.largest_timestamp >= 0:
            self.due_at = max(kept.largest_timestamp + self.settings.retention_ms + 1, self._release(kept) or 0)
