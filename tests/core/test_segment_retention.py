"""Retention decided over modelled segments (pure): Kafka's time and size predicates, the high-watermark bound,
the active segment rolled and deleted only when every record expired, and the broker's log.retention.* synonyms."""

from __future__ import annotations

from logwright.core.compaction.segment_retention import (
    FOREVER,
    AppendMarks,
    RetentionScan,
    RetentionSettings,
    broker_retention_ms,
)
from logwright.core.compaction.settings import CompactionSettings

SEGMENTS = CompactionSettings(segment_bytes=300, segment_ms=10_000, min_compaction_lag_ms=0,
                              max_compaction_lag_ms=2**63 - 1, min_cleanable_dirty_ratio=0.5,
                              delete_retention_ms=0)


def scan(batches: list[tuple[int, int]], now: int, retention_ms: int = FOREVER, retention_bytes: int = FOREVER,
         high_watermark: int | None = None, marks: AppendMarks | None = None) -> RetentionScan:
    """``batches``: (bytes, max timestamp), one offset each."""
    settings = RetentionSettings(retention_ms, retention_bytes, SEGMENTS)
    result = RetentionScan(settings, now, sum(size for size, _ in batches),
                           len(batches) if high_watermark is None else high_watermark, marks)
    for offset, (size, timestamp) in enumerate(batches):
        if not result.feed(offset, offset + 1, size, timestamp):
            return result
    result.finish()
    return result


def test_time_deletes_closed_segments_whose_newest_record_is_older_than_retention() -> None:
    batches = [(100, 0), (100, 1_000), (100, 20_000), (100, 20_500), (100, 40_000)]  # segments 0-1, 2-3, 4
    assert scan(batches, now=61_000).cut is None  # 61,000 - 1,000 is not more than 60,000
    decided = scan(batches, now=61_001, retention_ms=60_000)
    assert (decided.cut, decided.reason, decided.due_at) == (2, "retention-ms", 80_501)
    assert scan(batches, now=80_501, retention_ms=60_000).cut == 4
    assert scan(batches, now=100_000, retention_ms=60_000).cut == 4  # the active segment holds a young record
    assert scan(batches, now=100_001, retention_ms=60_000).cut == 5  # all expired: rolled and deleted too


def test_size_deletes_oldest_segments_while_the_rest_stays_at_least_retention_bytes() -> None:
    batches = [(100, 0)] * 9  # segments of three batches: 0-2, 3-5, 6-8 (900 bytes)
    assert scan(batches, now=0, retention_bytes=600).cut == 3
    assert scan(batches, now=0, retention_bytes=601).cut is None
    decided = scan(batches, now=0, retention_bytes=300)
    # the scan stops inside the kept segment once it is too big to go: its size seen is a lower bound
    assert (decided.cut, decided.reason, decided.kept_bytes) == (6, "retention-bytes", 200)
    assert scan(batches, now=0, retention_bytes=0).cut == 9


def test_nothing_at_or_above_the_high_watermark_goes() -> None:
    batches = [(100, 0)] * 9
    assert scan(batches, now=0, retention_bytes=0, high_watermark=5).cut == 3


def test_the_broker_resolves_retention_ms_from_ms_then_minutes_then_hours() -> None:
    assert broker_retention_ms({"log.retention.hours": "2"}.get) == 7_200_000
    assert broker_retention_ms({"log.retention.hours": "2", "log.retention.minutes": "3"}.get) == 180_000
    assert broker_retention_ms({"log.retention.minutes": "3", "log.retention.ms": "-1"}.get) == FOREVER
    assert broker_retention_ms({}.get) == 168 * 3_600_000


def test_a_topic_override_wins_and_compact_alone_has_no_retention() -> None:
    effective = {"cleanup.policy": "delete"}.get
    own = {"retention.bytes": "500"}.get
    settings = RetentionSettings.read(own, {"log.retention.ms": "1000", "log.retention.bytes": "9"}.get, effective)
    assert settings is not None and (settings.retention_ms, settings.retention_bytes) == (1000, 500)
    assert RetentionSettings.read(own, {}.get, {"cleanup.policy": "compact"}.get) is None
    both = RetentionSettings.read({}.get, {}.get, {"cleanup.policy": "compact,delete"}.get)
    assert both is not None and both.retention_ms == 168 * 3_600_000
    assert RetentionSettings.read(own, {}.get, {"cleanup.policy": ""}.get) is None  # empty: infinite retention
    assert RetentionSettings.read(own, {}.get, {}.get) is not None  # unset: Kafka's default, delete


def test_a_segment_goes_no_sooner_than_the_check_interval_after_its_newest_append() -> None:
    batches = [(100, 0), (100, 1_000), (100, 20_000), (100, 20_500), (100, 40_000)]  # segments 0-1, 2-3, 4
    marks = AppendMarks(300_000)
    for offset, appended in enumerate([500_000, 500_000, 510_000, 600_000, 600_000]):
        marks.note(offset, appended)
    # due by time since 61,001 (1970-style timestamps), but segment 0-1 was appended at 500,000
    held = scan(batches, now=799_999, retention_ms=60_000, marks=marks)
    assert (held.cut, held.due_at) == (None, 800_000)
    first = scan(batches, now=800_000, retention_ms=60_000, marks=marks)
    assert (first.cut, first.due_at) == (2, 900_000)  # 2-3 last appended at 600,000 (3 within 510,000's mark)
    assert scan(batches, now=900_000, retention_ms=60_000, marks=marks).cut == 5
    # size alike: the oldest segment is over the limit at once but waits for its interval
    by_size = scan(batches, now=0, retention_bytes=200, marks=marks)
    assert (by_size.cut, by_size.due_at) == (None, 800_000)
    assert scan(batches, now=800_000, retention_bytes=200, marks=marks).cut == 2
    # the due time is the later of newest timestamp + retention.ms and newest append + interval
    fresh = AppendMarks(300_000, [(0, 900_000)])
    assert scan([(100, 850_000)], now=900_000, retention_ms=60_000, marks=fresh).due_at == 1_200_000
    assert scan([(100, 850_000)], now=900_000, retention_ms=600_000, marks=fresh).due_at == 1_450_001
    assert scan([(100, 0)], now=1_199_999, retention_ms=60_000, marks=fresh).cut is None
    assert scan([(100, 0)], now=1_200_000, retention_ms=60_000, marks=fresh).cut == 1


def test_append_marks_coalesce_within_a_64th_of_the_interval_and_expire() -> None:
    marks = AppendMarks(64_000)
    marks.note(0, 1_000)
    marks.note(10, 1_999)  # within 1 s of the last mark: offsets 0-10 count as appended at 1,999
    marks.note(20, 3_000)
    assert marks.entries == [(0, 1_999), (20, 3_000)]
    assert (marks.release(10), marks.release(21), marks.release(0)) == (65_999, 67_000, None)
    marks.prune(65_999)
    assert marks.entries == [(20, 3_000)]
    assert marks.release(15) is None  # appended long enough ago
