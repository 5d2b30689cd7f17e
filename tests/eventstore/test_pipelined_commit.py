"""A pipelined commit (`RocksEventStore.write_records_ahead` with ``seal``): what was staged before the write ahead is
a WriteBatch of its own, written by `finish_sealed` once its files are; what is staged meanwhile goes into the next
one. On disk the first part is a whole commit (its events, their rows, their batches), so a crash between the two
leaves a consistent prefix; a failure of the first drops both.

`RocksEventStore.reopen` drops what is staged and reloads from disk: what it finds is what a crash would leave.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from logwright.core.events import OffsetCommitted, TopicDeleted
from logwright.core.groups.group_offsets import PROJECTION_NAME, offset_key
from logwright.eventstore import batch_files
from logwright.eventstore.check import check_store
from logwright.eventstore.interface import LoggedEvent
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import StoreFailed

from .contract import BIG
from .support import deleted_and_kept_topics, new_topic, open_store, partition_state, produce, reopen_store
from .test_batch_files import TestRocksEventStoreWithEveryBatchInFiles

PAYLOAD = 8_000


@pytest.fixture(autouse=True)
def no_small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 0)


class TestRocksEventStorePipeliningEveryCommit(TestRocksEventStoreWithEveryBatchInFiles):
    """The whole EventStore contract again, every commit sealed at a write ahead of its files and finished by the
    commit, as the broker's scheduled commit pipelines large ones."""

    @pytest.fixture(autouse=True)
    def every_commit_pipelined(self, monkeypatch: pytest.MonkeyPatch) -> None:
        commit = RocksEventStore.commit

        def pipelined(store: RocksEventStore) -> None:
            if not store.read_only and store.failed is None:
                store.write_records_ahead(seal=True)
            commit(store)

        monkeypatch.setattr(RocksEventStore, "commit", pipelined)


def _offsets(store: RocksEventStore, partition_id: int = 0) -> list[int]:
    return [int.from_bytes(batch[:8], "big") for batch in store.read_batches(partition_id, 0, BIG)]


def _sealed_with_more_staged(store: RocksEventStore) -> int:
    """A topic of two partitions, batch 0 of the first committed; its batch 10 sealed (the sequence returned); then
    staged after the seal, batch 0 of the second partition (another row of the same projection) and a committed
    offset."""
    new_topic(store, "t", 2)
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    produce(store, 0, payload_size=PAYLOAD)
    sealed_at = store.last_sequence
    assert store.write_records_ahead(seal=True) is not None
    assert store.sealed and store.file_bytes_staged == 0
    produce(store, 1, payload_size=PAYLOAD)
    store.append([OffsetCommitted("g", "t", 0, 20)])
    return sealed_at


def _assert_rows_match_the_events(store: RocksEventStore) -> None:
    """The rows on disk are what folding the event log gives (`logwright check`)."""
    report = check_store(store)
    assert report.consistent, report.differences


def test_the_sealed_part_is_a_whole_commit_on_disk_and_what_was_staged_after_it_is_not(
        opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    sealed_at = _sealed_with_more_staged(store)
    assert partition_state(store, 1).next_offset == 10, "what was staged after the seal is visible in memory"
    store.finish_sealed()
    assert not store.sealed and store.committed_sequence == sealed_at
    assert [logged.sequence for logged in store.read_events()][-1] == sealed_at
    assert store.reopen()  # what a crash now would leave
    _assert_rows_match_the_events(store)
    assert (partition_state(store, 0).next_offset, partition_state(store, 1).next_offset) == (20, 0)
    assert store.state(PROJECTION_NAME, offset_key("t", 0, "g")) is None
    assert (_offsets(store), _offsets(store, 1)) == ([0, 10], [])


def test_the_commit_writes_both_parts_in_order_and_the_rows_changed_after_the_seal_win(
        opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    _sealed_with_more_staged(store)
    store.commit()  # finishes the sealed part first
    assert not store.sealed and store.committed_sequence == store.last_sequence
    reopened = reopen_store(opened, store)
    _assert_rows_match_the_events(reopened)
    assert (partition_state(reopened, 0).next_offset, partition_state(reopened, 1).next_offset) == (20, 10)
    assert reopened.state(PROJECTION_NAME, offset_key("t", 0, "g")) is not None
    assert (_offsets(reopened), _offsets(reopened, 1)) == ([0, 10], [0])


def test_commit_listeners_hear_each_part_once_in_order(opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    heard: list[list[str]] = []

    def listener(events: Sequence[LoggedEvent]) -> None:
        heard.append([type(logged.event).__name__ for logged in events])

    new_topic(store, "t", 1)
    store.commit()
    store.add_commit_listener(listener)
    produce(store, 0, payload_size=PAYLOAD)
    store.write_records_ahead(seal=True)
    produce(store, 0, payload_size=PAYLOAD)
    store.append([OffsetCommitted("g", "t", 0, 20)])
    store.finish_sealed()
    store.finish_sealed()  # nothing sealed: nothing heard
    store.commit()
    assert heard == [["RecordsAppended"], ["RecordsAppended", "OffsetCommitted"]]
    assert _offsets(store) == [0, 10], "the tail cache holds both parts' batches"


def test_a_failed_sealed_write_drops_what_was_staged_after_it_too(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    monkeypatch.setattr(batch_files.os, "writev", lambda fd, buffers: (_ for _ in ()).throw(OSError(28, "ENOSPC")))
    produce(store, 0, payload_size=PAYLOAD)
    assert store.write_records_ahead(seal=True) is not None
    produce(store, 0, payload_size=PAYLOAD)
    with pytest.raises(StoreFailed):
        store.finish_sealed()
    monkeypatch.undo()
    assert store.failed is None and not store.sealed, "reopened for writing"
    assert partition_state(store, 0).next_offset == 10
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    reopened = reopen_store(opened, store)
    assert _offsets(reopened) == [0, 10]
    assert all(len(batch) > PAYLOAD for batch in reopened.read_batches(0, 0, BIG))


def test_a_commit_that_drops_files_is_not_sealed_and_commits_whole(
        opened: list[RocksEventStore], path: Path) -> None:
    """A topic deletion plans its files' removal after its commit: that commit is written whole, as without seal."""
    store = open_store(opened, path)
    created, kept = deleted_and_kept_topics(store, PAYLOAD)
    store.append([TopicDeleted("t", created.topic_id, created.partition_ids)])
    produce(store, kept.partition_ids[0], payload_size=PAYLOAD)
    assert store.write_records_ahead(seal=True) is not None
    assert not store.sealed
    store.commit()
    assert _offsets(reopen_store(opened, store), kept.partition_ids[0]) == [0, 10]


def test_a_truncation_of_a_partition_in_the_sealed_part_commits_it_first(
        opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    store.commit()
    produce(store, 0, payload_size=PAYLOAD)
    produce(store, 0, payload_size=PAYLOAD)
    store.write_records_ahead(seal=True)
    assert store.sealed
    assert store.truncate(0, 10) is not None  # reads committed rows: the sealed ones are written first
    assert not store.sealed
    store.commit()
    reopened = reopen_store(opened, store)
    assert _offsets(reopened) == [10]
    assert partition_state(reopened, 0).log_start_offset == 10


def test_closing_the_store_writes_the_sealed_part_and_the_rest(opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    _sealed_with_more_staged(store)
    opened.remove(store)
    store.close()
    reopened = open_store(opened, path)
    _assert_rows_match_the_events(reopened)
    assert (_offsets(reopened), _offsets(reopened, 1)) == ([0, 10], [0])
    assert reopened.state(PROJECTION_NAME, offset_key("t", 0, "g")) is not None
