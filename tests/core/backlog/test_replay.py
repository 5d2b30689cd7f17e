"""`logwright check` for backlog state: given a log and stored state, the differences the refold reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from logwright.core.backlog.batch_index import BatchExtent
from logwright.core.backlog.replay import appended_batches, differences, watched_partitions
from logwright.core.cursors.cursor import CURSORS
from logwright.core.events import (
    ConfigChanged,
    Event,
    LogTruncated,
    OffsetCommitted,
    RecordsAppended,
    TopicCreated,
)
from logwright.core.events.compaction import PartitionCompacted
from logwright.core.groups.group_offsets import GROUP_OFFSETS, CommittedOffset, offset_key
from logwright.core.log.catalog import CATALOG
from logwright.core.log.partition_log import PARTITIONS
from logwright.core.projection import fold

QUOTA = (("logwright.backlog.quota.records", "100"),)


def log(configs: tuple[tuple[str, str], ...] = QUOTA) -> list[Event]:
    """A topic ``t`` (partition id 0) of three batches of 10 records; ``slow`` at 5, ``fast`` at 25."""
    return [TopicCreated("t", b"\0" * 16, (0,), configs),
            *(RecordsAppended(0, base, 10, 700 + base, 1000 + base) for base in (0, 10, 20)),
            OffsetCommitted("slow", "t", 0, 5), OffsetCommitted("fast", "t", 0, 25)]


def states(events: Sequence[Event]) -> dict[str, dict[str, Any]]:
    return {projection.name: fold(projection, events) for projection in (CATALOG, PARTITIONS, GROUP_OFFSETS, CURSORS)}


def batches_of(events: Sequence[Event]) -> list[BatchExtent]:
    return [BatchExtent(e.base_offset, e.record_count, e.byte_size, e.max_timestamp)
            for e in events if isinstance(e, RecordsAppended)]


def check(events: Sequence[Event], stored: dict[str, dict[str, Any]] | None = None,
          on_disk: list[BatchExtent] | None = None) -> list[str]:
    stored = states(events) if stored is None else stored
    disk = batches_of(events) if on_disk is None else on_disk
    watched = watched_partitions(stored)
    appended = fold(appended_batches(watched), events)
    return differences(watched, appended, states(events), stored,
                       lambda partition_id, start: [batch for batch in disk if batch.end_offset > start])


def test_a_consistent_log_and_store_have_no_differences_and_topics_without_quota_are_not_read() -> None:
    assert watched_partitions(states(log()))[0].from_offset == 5, "from the slowest position"
    assert check(log()) == []
    assert watched_partitions(states(log(configs=()))) == {}
    with_default = [*log(configs=()), ConfigChanged("broker", "1", (("logwright.backlog.quota.default.bytes", "9"),))]
    assert list(watched_partitions(states(with_default))) == [0], "a stored broker default counts"


def test_a_stored_batch_that_differs_from_its_append_is_reported() -> None:
    events = log()
    on_disk = batches_of(events)
    on_disk[1] = replace(on_disk[1], byte_size=1)
    [batch, slow] = check(events, on_disk=on_disk)
    assert batch.startswith("backlog/t-0: batch 1: replay gives BatchExtent(base_offset=10")
    assert "byte_size=1," in batch
    assert slow.startswith("backlog/t-0/group slow: replay gives Backlog(records=25, bytes=2130")
    assert "bytes=1421" in slow
    assert check(events, on_disk=batches_of(events)[:2])[0] == \
        "backlog/t-0: replay gives 3 batches from the slowest position, 2 are stored"


def test_a_stored_position_that_differs_from_the_refold_is_reported_as_a_backlog_difference() -> None:
    events = log()
    stored = states(events)
    stored[GROUP_OFFSETS.name] = {**stored[GROUP_OFFSETS.name], offset_key("t", 0, "fast"): CommittedOffset(15)}
    assert check(events, stored) == [
        "backlog/t-0/group fast: replay gives Backlog(records=5, bytes=720, oldest_timestamp=1020), "
        "state holds Backlog(records=15, bytes=1430, oldest_timestamp=1010)"]


def test_truncated_and_compacted_partitions() -> None:
    truncated = [*log(), LogTruncated(0, 10, 1, 700)]
    assert watched_partitions(states(truncated))[0].from_offset == 10
    assert check(truncated, on_disk=batches_of(truncated)[1:]) == []
    compacted = [*log(), PartitionCompacted(0, 0, 20, 4, 0, 300, 20)]
    smaller = [replace(batch, byte_size=batch.byte_size - 150) for batch in batches_of(compacted)[:2]]
    assert check(compacted, on_disk=[*smaller, batches_of(compacted)[2]]) == [], \
        "rewritten batches are taken as stored"


def test_without_a_watched_partition_the_fold_asks_for_no_event() -> None:
    assert not appended_batches({}).may_fold(RecordsAppended)
    assert appended_batches(watched_partitions(states(log()))).may_fold(RecordsAppended)
