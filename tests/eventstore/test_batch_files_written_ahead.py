"""Batch files written ahead of the commit on the writer thread (`RocksEventStore.write_records_ahead`): the pointers
go into the WriteBatch at once, the bytes are written off the calling thread, and the commit waits for them, fails
with them, and nothing closes a descriptor under them.

Each test reads through a freshly opened store, so nothing comes from the in-memory tail cache.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.core.events import TopicDeleted
from logwright.eventstore import batch_files
from logwright.eventstore.interface import Durability
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import StoreFailed

from .contract import BIG
from .support import deleted_and_kept_topics, new_topic, open_store, produce, reopen_store
from .test_batch_files import TestRocksEventStoreWithEveryBatchInFiles

PAYLOAD = 8_000


@pytest.fixture(autouse=True)
def no_small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 0)


class TestRocksEventStoreWritingEveryCommitAhead(TestRocksEventStoreWithEveryBatchInFiles):
    """The whole EventStore contract again, every batch in a file and every commit's files written ahead first, as
    the broker's scheduled commit writes large ones."""

    @pytest.fixture(autouse=True)
    def every_commit_written_ahead(self, monkeypatch: pytest.MonkeyPatch) -> None:
        commit = RocksEventStore.commit

        def written_ahead_first(store: RocksEventStore) -> None:
            if not store.read_only and store.failed is None:
                store.write_records_ahead()
            commit(store)

        monkeypatch.setattr(RocksEventStore, "commit", written_ahead_first)


class Gate:
    """Holds the writer thread's writes until opened; records which thread wrote and what."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened = threading.Event()
        self.writers: list[str] = []
        self.written = 0
        write_all = batch_files._write_all

        def gated(fd: int, buffers: list[bytes]) -> None:
            self.writers.append(threading.current_thread().name)
            if threading.current_thread() is not threading.main_thread():
                assert self.opened.wait(30), "the gate was never opened"
            write_all(fd, buffers)
            self.written += sum(map(len, buffers))

        monkeypatch.setattr(batch_files, "_write_all", gated)

    def open_when_waited_for(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Open the gate when the store first waits for the writes under way (`BatchFiles.wait_for_writes`), not
        before: a caller that did not wait would find them still held."""
        wait_for_writes = batch_files.BatchFiles.wait_for_writes

        def opening(files: batch_files.BatchFiles) -> None:
            self.opened.set()
            wait_for_writes(files)

        monkeypatch.setattr(batch_files.BatchFiles, "wait_for_writes", opening)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    held = Gate(monkeypatch)
    yield held
    held.opened.set()


def _offsets(store: RocksEventStore, partition_id: int = 0) -> list[int]:
    return [int.from_bytes(batch[:8], "big") for batch in store.read_batches(partition_id, 0, BIG)]


def test_the_bytes_are_written_off_the_calling_thread_and_the_commit_waits_for_them(
        opened: list[RocksEventStore], path: Path, gate: Gate,
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    store.commit()
    produce(store, 0, payload_size=PAYLOAD)
    produce(store, 0, payload_size=PAYLOAD)
    assert store.file_bytes_staged > 2 * PAYLOAD
    writing = store.write_records_ahead()
    assert writing is not None and not writing.done()
    assert store.file_bytes_staged == 0, "the pointers are in the WriteBatch, the bytes are the thread's"
    produce(store, 0, payload_size=PAYLOAD)  # staged meanwhile: the commit writes it itself, after the others
    gate.open_when_waited_for(monkeypatch)
    store.commit()
    assert writing.done(), "the commit returned before the bytes it names were written"
    assert gate.writers[0].startswith("logwright-batch-files") and gate.writers[1] == "MainThread"
    assert gate.written > 3 * PAYLOAD
    reopened = reopen_store(opened, store)
    assert _offsets(reopened) == [0, 10, 20]
    assert all(len(batch) > PAYLOAD for batch in reopened.read_batches(0, 0, BIG))


def test_nothing_to_write_ahead_starts_nothing(opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, payload_size=100)  # stays in RocksDB
    assert store.file_bytes_staged == 0
    assert store.write_records_ahead() is None
    store.commit()
    assert _offsets(reopen_store(opened, store)) == [0]


def test_a_failed_write_ahead_fails_the_commit_and_keeps_nothing_of_it(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()

    def full(fd: int, buffers: list[bytes]) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(batch_files.os, "writev", full)
    produce(store, 0, payload_size=PAYLOAD)
    writing = store.write_records_ahead()
    assert writing is not None
    with pytest.raises(StoreFailed):
        store.commit()
    monkeypatch.undo()
    assert store.reopen()
    assert store.state("partitions", "0").next_offset == 10
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    assert _offsets(reopen_store(opened, store)) == [0, 10]


def test_a_failed_write_ahead_the_store_discards_leaves_no_hole_in_the_next_files_offsets(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A write that failed short of its plan, then the staged changes dropped without a commit (a plugin failed to
    derive from them): the files are sealed, so the next pointers name bytes that are there."""
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    monkeypatch.setattr(batch_files.os, "writev", lambda fd, buffers: (_ for _ in ()).throw(OSError(5, "EIO")))
    produce(store, 0, payload_size=PAYLOAD)
    assert store.write_records_ahead() is not None
    monkeypatch.undo()
    assert store.reopen()
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    reopened = reopen_store(opened, store)
    assert _offsets(reopened) == [0, 10]
    assert all(len(batch) > PAYLOAD for batch in reopened.read_batches(0, 0, BIG))


def test_a_topic_deleted_while_its_files_are_written_ahead_closes_them_after_the_write(
        opened: list[RocksEventStore], path: Path, gate: Gate,
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(opened, path)
    gate.opened.set()
    created, kept = deleted_and_kept_topics(store, PAYLOAD)  # files open for appending in all three partitions
    gate.opened.clear()
    for partition_id in (*created.partition_ids, *kept.partition_ids):
        produce(store, partition_id, payload_size=PAYLOAD)
    writing = store.write_records_ahead()
    assert writing is not None
    store.append([TopicDeleted("t", created.topic_id, created.partition_ids)])  # closes two appending descriptors
    assert not writing.done()
    gate.open_when_waited_for(monkeypatch)
    store.commit()
    assert writing.exception() is None, "a descriptor was closed under the write"
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert sorted(os.listdir(path / "batches")) == [str(kept.partition_ids[0])]
    assert _offsets(reopen_store(opened, store), kept.partition_ids[0]) == [0, 10]


def test_a_synced_store_fdatasyncs_what_it_wrote_ahead_on_the_writer_thread(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[str] = []
    monkeypatch.setattr(batch_files.os, "fdatasync", lambda fd: synced.append(threading.current_thread().name))
    store = open_store(opened, path, durability=Durability.FSYNC)
    new_topic(store, "t", 2)
    store.commit()
    produce(store, 0, payload_size=PAYLOAD)
    produce(store, 1, payload_size=PAYLOAD)
    writing = store.write_records_ahead()
    assert writing is not None
    store.commit()
    assert len(synced) == 2 and all(name.startswith("logwright-batch-files") for name in synced)
    reopened = reopen_store(opened, store)
    assert _offsets(reopened, 0) == [0] and _offsets(reopened, 1) == [0]


def test_closing_the_store_waits_for_the_writes_and_stops_the_thread(
        opened: list[RocksEventStore], path: Path, gate: Gate,
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, payload_size=PAYLOAD)
    writing = store.write_records_ahead()
    assert writing is not None
    gate.open_when_waited_for(monkeypatch)
    opened.remove(store)
    store.close()  # commits what is staged: waits for the write first
    assert writing.done() and writing.exception() is None
    assert not any(thread.name.startswith("logwright-batch-files") for thread in threading.enumerate())
    assert _offsets(open_store(opened, path)) == [0]


def test_what_writes_cost_lately_follows_the_large_writes_on_either_thread(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    step = [0]
    now = [0]

    def clock() -> int:
        now[0] += step[0]
        return now[0]

    monkeypatch.setattr(batch_files, "_clock_ns", clock)
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    store.commit()
    step[0] = 10_000_000
    produce(store, 0, payload_size=100_000)
    store.commit()  # 100 KB on this thread in 10 ms
    assert store.file_write_ns_per_byte == pytest.approx(100 * batch_files.WRITE_COST_WEIGHT, rel=0.01)
    before = store.file_write_ns_per_byte
    produce(store, 0, payload_size=PAYLOAD)  # too small to say what a byte costs
    store.commit()
    assert store.file_write_ns_per_byte == before
    step[0] = 0
    produce(store, 0, payload_size=100_000)
    assert store.write_records_ahead() is not None
    store.commit()  # 100 KB on the writer thread in no time
    assert store.file_write_ns_per_byte == pytest.approx(before * (1 - batch_files.WRITE_COST_WEIGHT), rel=0.01)
