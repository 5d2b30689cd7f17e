"""Small partitions' batches in the shared batch files (`batch_files`): one file many partitions append to, rows
saying which partitions hold batches there (`shared_refs`), the file deleted once the last row goes.

Reads go through a freshly opened store where the test says so, so nothing comes from the tail cache.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from logwright.core.events import TopicDeleted
from logwright.core.events.compaction import PartitionCompacted
from logwright.eventstore import batch_file_reads, batch_files, batch_pointers, file_ranges, keys, shared_refs
from logwright.eventstore.check import check_store
from logwright.eventstore.interface import Durability, StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import StoreFailed

from . import raw
from .contract import BIG
from .support import count_preads, deleted_and_kept_topics, fake_batch, new_topic, open_store, produce, reopen_store
from .test_rocksdb_store import TestRocksEventStore

PAYLOAD = 8_000
"""Above `INLINE_BELOW`: each produced batch goes to the shared file (the partitions stay small here)."""


@pytest.fixture(autouse=True)
def every_partition_small(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 2**40)


class TestRocksEventStoreWithEveryBatchShared(TestRocksEventStore):
    """The whole EventStore contract again, every batch (the contract's are small) kept in the shared file."""

    @pytest.fixture(autouse=True)
    def every_batch_shared(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(batch_files, "INLINE_BELOW", 0)


def _shared(path: Path) -> list[int]:
    """The numbers of the shared files on disk."""
    directory = path / "batches" / "shared"
    return sorted(int(name.removesuffix(".batches")) for name in os.listdir(directory)) if directory.is_dir() else []


def _shared_path(path: Path, number: int) -> Path:
    return path / "batches" / "shared" / f"{number:020d}.batches"


def _rows(store: RocksEventStore) -> list[tuple[int, int, int, int]]:
    """(file, partition, first base offset, last base offset) of every committed `shared_refs` row (RocksDB's, not
    the store's memory of them)."""
    return [shared_refs.parse_ref(key, value) for key, value in store._views["index"].items()
            if key.startswith(shared_refs.SHARED_REF_KIND)]


def _offsets(store: RocksEventStore, partition_id: int = 0) -> list[int]:
    return [int.from_bytes(batch[:8], "big") for batch in store.read_batches(partition_id, 0, BIG)]


def _two_partitions_in_one_shared_file(opened: list[RocksEventStore], path: Path) -> RocksEventStore:
    """Topic ``t`` of two partitions, one committed batch each in shared file 1; reopened, so file 1 is sealed."""
    store = open_store(opened, path)
    new_topic(store, "t", 2)
    produce(store, 0, payload_size=PAYLOAD)
    produce(store, 1, payload_size=PAYLOAD)
    store.commit()
    return reopen_store(opened, store)


def test_small_partitions_share_one_file_written_with_one_writev_a_commit(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(opened, path)
    created = new_topic(store, "t", 3)
    writes: list[int] = []
    real_writev = os.writev

    def counted(fd: int, buffers: list[bytes]) -> int:
        writes.append(len(buffers))
        return real_writev(fd, buffers)

    monkeypatch.setattr(batch_files.os, "writev", counted)
    for partition_id in (0, 1, 0, 2):
        produce(store, partition_id, payload_size=PAYLOAD)
    store.commit()
    assert writes == [4], "every partition's batches in one writev"
    expected = [store.read_batches(partition_id, 0, BIG) for partition_id in created.partition_ids]
    assert _rows(store) == [(1, 0, 0, 10), (1, 1, 0, 0), (1, 2, 0, 0)]
    store = reopen_store(opened, store)
    assert [store.read_batches(partition_id, 0, BIG) for partition_id in created.partition_ids] == expected
    assert sorted(os.listdir(path / "batches")) == ["shared"], "no partition has a directory of its own"
    assert _shared_path(path, 1).read_bytes() == b"".join(expected[0] + expected[1] + expected[2]), \
        "a partition's batches of one commit lie together"
    assert {len(value) for value in store._views["records"].values()} == {batch_pointers.SHARED_POINTER.size}
    reads = count_preads(monkeypatch)
    assert reopen_store(opened, store).read_batches(0, 0, BIG) == expected[0]
    assert reads == [sum(map(len, expected[0]))], "adjacent shared batches are read with one pread"


def test_pieces_for_a_socket_hold_the_shared_batches_bytes(opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 2)
    for _ in range(3):
        produce(store, 0, payload_size=PAYLOAD)
        produce(store, 1, payload_size=PAYLOAD)
        produce(store, 0, payload_size=50)  # small: RocksDB
        store.commit()
    expected = store.read_batches(0, 0, BIG)
    for fresh in (False, True):
        if fresh:
            store = reopen_store(opened, store)
        pieces = store.read_batch_pieces(0, 0, BIG, ranges_from=1)
        kinds = [type(piece).__name__ for piece in pieces]
        assert kinds == ["FileRange", "bytes"] * 3
        data = b"".join(piece.read() if isinstance(piece, file_ranges.FileRange) else piece for piece in pieces)
        for piece in pieces:
            if isinstance(piece, file_ranges.FileRange):
                piece.close()
        assert data == b"".join(expected)


def _interleaved(opened: list[RocksEventStore], path: Path, rounds: int) -> tuple[RocksEventStore, list[bytes]]:
    """A store whose partitions 0 and 1 appended ``rounds`` batches each in turn to the shared file, reopened (no tail
    cache), and partition 0's batches."""
    store = open_store(opened, path)
    new_topic(store, "t", 2)
    for _ in range(rounds):
        produce(store, 0, payload_size=PAYLOAD)
        produce(store, 1, payload_size=PAYLOAD)
        store.commit()
    expected = store.read_batches(0, 0, BIG)
    return reopen_store(opened, store), expected


@pytest.mark.parametrize("unfilled_from", [0, 2**40], ids=["buffer-unzeroed", "buffer-zeroed"])
def test_short_runs_spread_through_the_shared_file_are_read_into_one_buffer(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch, unfilled_from: int) -> None:
    """A partition's batches in the shared file lie between other partitions': each run is read straight into its
    place in one buffer (one read a run, none joined afterwards), and a long run between them still goes by
    sendfile, the buffer before it ending there. The same whether the buffer starts zeroed or as malloc left it."""
    monkeypatch.setattr(batch_file_reads, "UNFILLED_FROM", unfilled_from)
    store, expected = _interleaved(opened, path, 4)
    reads: list[int] = []
    real_preadv = os.preadv

    def counted(fd: int, buffers: list[memoryview], position: int) -> int:
        reads.append(sum(map(len, buffers)))
        return real_preadv(fd, buffers, position)

    monkeypatch.setattr(batch_files.os, "preadv", counted)
    (gathered,) = store.read_batch_pieces(0, 0, BIG, ranges_from=BIG)
    assert isinstance(gathered, bytearray) and gathered == b"".join(expected), "four runs, one buffer, in order"
    assert reads == [len(batch) for batch in expected], "one read a run, each into its place"
    assert store.read_batch_pieces(0, 10, BIG, ranges_from=BIG) == [b"".join(expected[1:])], "from the second batch"
    pieces = store.read_batch_pieces(0, 0, BIG, ranges_from=len(expected[0]))
    assert [type(piece).__name__ for piece in pieces] == ["FileRange"] * 4, "runs long enough go by sendfile"
    for piece in pieces:
        assert isinstance(piece, file_ranges.FileRange)
        piece.close()


def test_a_run_whose_file_is_gone_leaves_no_unread_bytes_in_the_buffer(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gathered buffer starts as malloc left it (`batch_file_reads.unfilled`): a run left out because its file went
    (a reader finds none) must not leave its share of those bytes in the answer, which holds the other runs only."""
    monkeypatch.setattr(batch_file_reads, "UNFILLED_FROM", 0)
    store, expected = _interleaved(opened, path, 3)
    files = store._files
    real_reader = files._reader
    asked: list[int] = []

    def second_gone(owner: int, base_offset: int) -> int | None:
        asked.append(owner)
        return None if len(asked) == 2 else real_reader(owner, base_offset)

    monkeypatch.setattr(files, "_reader", second_gone)
    (gathered,) = store.read_batch_pieces(0, 0, BIG, ranges_from=BIG)
    assert len(asked) == 3
    assert gathered == expected[0] + expected[2], "the first and third runs, nothing where the second would be"


def test_unfilled_buffers_have_the_size_asked_on_both_sides_of_the_threshold() -> None:
    threshold = batch_file_reads.UNFILLED_FROM
    for size in (0, 1, threshold - 1, threshold, 5 * threshold):
        buffer = batch_file_reads.unfilled(size)
        assert type(buffer) is bytearray and len(buffer) == size
        buffer[-1:] = b"x" if size else b""  # writable, resizable as any bytearray
        assert len(buffer) == size


def test_a_shared_file_goes_once_every_partition_in_it_truncated_past_its_batches(
        opened: list[RocksEventStore], path: Path) -> None:
    store = _two_partitions_in_one_shared_file(opened, path)
    produce(store, 1, payload_size=PAYLOAD)  # after a restart: a new shared file, 2
    store.commit()
    assert _shared(path) == [1, 2]
    store.truncate(0, 5)
    store.commit()
    assert _rows(store) == [(1, 0, 0, 0), (1, 1, 0, 0), (2, 1, 10, 10)], "the batch at 0 still holds offset 5"
    store.truncate(0, 10)
    store.commit()
    assert _rows(store) == [(1, 1, 0, 0), (2, 1, 10, 10)]
    assert _shared(path) == [1, 2], "partition 1 still holds a batch in file 1"
    store.truncate(1, 10)
    store.commit()
    assert _rows(store) == [(2, 1, 10, 10)]
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert _shared(path) == [2]
    store = reopen_store(opened, store)
    assert _offsets(store, 0) == [] and _offsets(store, 1) == [10]


def test_the_shared_file_open_for_appending_goes_once_it_rolls(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "SHARED_ROLL_BYTES", PAYLOAD)  # full after one batch
    store = open_store(opened, path)
    new_topic(store, "t", 2)
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    store.truncate(0, 10)
    store.commit()
    assert _rows(store) == [] and _shared(path) == [1], "kept while it is open for appending"
    produce(store, 1, payload_size=PAYLOAD)  # file 1 is full: file 2, and file 1 (no row names it) goes
    store.commit()
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert _shared(path) == [2] and _rows(store) == [(2, 1, 0, 0)]
    produce(store, 1, payload_size=PAYLOAD)  # file 2 is full, but partition 1 holds a batch there: kept
    store.commit()
    assert _shared(path) == [2, 3] and _rows(store) == [(2, 1, 0, 0), (3, 1, 10, 10)]
    assert _offsets(reopen_store(opened, store), 1) == [0, 10]


def test_deleting_a_topic_drops_its_rows_and_the_shared_files_they_emptied(
        opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    created, kept = deleted_and_kept_topics(store, PAYLOAD)
    store = reopen_store(opened, store)
    solo = new_topic(store, "solo", 1)
    produce(store, solo.partition_ids[0], payload_size=PAYLOAD)  # file 2
    store.commit()
    store = reopen_store(opened, store)
    store.append([TopicDeleted("t", created.topic_id, created.partition_ids)])
    store.append([TopicDeleted("solo", solo.topic_id, solo.partition_ids)])
    store.commit()
    (kept_id,) = kept.partition_ids
    assert _rows(store) == [(1, kept_id, 0, 0)]
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert _shared(path) == [1], "file 1 still holds the kept topic's batch; file 2 held only solo's"
    assert _offsets(reopen_store(opened, store), kept_id) == [0]


def test_a_restart_appends_to_a_new_shared_file_and_deletes_the_ones_no_row_names(
        opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    store.close()
    opened.clear()
    _shared_path(path, 7).write_bytes(b"x" * 100)  # a crash after the write, before the WriteBatch
    with open(_shared_path(path, 1), "ab") as tail:
        tail.write(b"y" * 50)  # a torn append to the file that holds committed batches
    size = _shared_path(path, 1).stat().st_size
    store = open_store(opened, path)
    assert _shared(path) == [1]
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    assert _shared(path) == [1, 8], "never appended to again after a restart: numbered past every file seen"
    assert _shared_path(path, 1).stat().st_size == size
    assert _offsets(reopen_store(opened, store)) == [0, 10]


def test_a_compaction_slice_that_rewrites_a_partitions_shared_batches_drops_its_row(
        opened: list[RocksEventStore], path: Path) -> None:
    store = _two_partitions_in_one_shared_file(opened, path)
    rewritten = fake_batch(0, 10, b"k" * 100)
    store.rewrite_batches(PartitionCompacted(0, 0, 10, 10, 1, PAYLOAD), [StoredBatch(0, 0, rewritten)], [])
    store.commit()
    assert _rows(store) == [(1, 1, 0, 0)] and _shared(path) == [1]
    store.rewrite_batches(PartitionCompacted(1, 0, 10, 10, 1, PAYLOAD), [], [0])
    store.commit()
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert _rows(store) == [] and _shared(path) == []
    store = reopen_store(opened, store)
    assert store.read_batches(0, 0, BIG) == [rewritten] and _offsets(store, 1) == []


def test_a_compaction_slice_that_leaves_a_shared_batch_keeps_the_row(
        opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, payload_size=PAYLOAD)
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    store = reopen_store(opened, store)
    store.rewrite_batches(PartitionCompacted(0, 0, 10, 10, 1, PAYLOAD), [], [0])
    store.commit()
    assert _rows(store) == [(1, 0, 0, 10)] and _shared(path) == [1]
    assert _offsets(reopen_store(opened, store)) == [10]


def test_a_checkpoint_links_the_shared_files_and_neither_store_appends_to_them(
        opened: list[RocksEventStore], path: Path, tmp_path: Path) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    store.checkpoint(str(tmp_path / "copy"))
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()
    copy = open_store(opened, tmp_path / "copy")
    assert _offsets(copy) == [0]
    produce(copy, 0, record_count=5, payload_size=PAYLOAD)
    copy.commit()
    assert _offsets(reopen_store(opened, copy)) == [0, 10]
    assert _offsets(reopen_store(opened, store)) == [0, 10]
    assert os.stat(_shared_path(path, 1)).st_nlink == 2, "sealed at the checkpoint, linked"
    assert _shared(path) == _shared(tmp_path / "copy") == [1, 2]
    assert not os.path.samefile(_shared_path(path, 2), _shared_path(tmp_path / "copy", 2))


def test_a_failed_shared_write_fails_the_commit_and_the_rows_are_read_again(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 2)
    produce(store, 0, payload_size=PAYLOAD)
    store.commit()

    def full(fd: int, buffers: list[bytes]) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(batch_files.os, "writev", full)
    produce(store, 1, payload_size=PAYLOAD)
    with pytest.raises(StoreFailed):
        store.commit()
    monkeypatch.undo()
    assert store.reopen()
    assert len(store._files.shared_refs) == 1, "only the committed batch's row"
    produce(store, 1, payload_size=PAYLOAD)
    store.commit()
    assert _rows(store) == [(1, 0, 0, 0), (2, 1, 0, 0)]
    store = reopen_store(opened, store)
    assert _offsets(store, 0) == [0] and _offsets(store, 1) == [0]
    assert check_store(store).consistent


def test_a_synced_store_syncs_the_shared_file_before_its_log(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(batch_files.os, "fdatasync", lambda fd: synced.append(fd))
    store = open_store(opened, path, durability=Durability.FSYNC)
    new_topic(store, "t", 2)
    produce(store, 0, payload_size=PAYLOAD)
    produce(store, 1, payload_size=PAYLOAD)
    store.commit()
    assert len(synced) == 1, "one shared file, one fdatasync"
    assert _offsets(reopen_store(opened, store)) == [0]


def test_check_reports_a_shared_batch_no_row_covers_and_a_file_cut_short(
        opened: list[RocksEventStore], path: Path) -> None:
    store = _two_partitions_in_one_shared_file(opened, path)
    assert check_store(store).consistent
    store.close()
    opened.clear()
    raw.delete(path, "index", [shared_refs.ref_key(1, 0)])
    raw.put(path, "index", shared_refs.ref_key(1, 1), struct.pack(">QQ", 5, 5))  # a row not spanning offset 0
    os.truncate(_shared_path(path, 1), 100)
    report = check_store(open_store(opened, path, read_only=True))
    assert report.differences == [
        f"records/0/0: the shared batch file 1 ends at 100, before {PAYLOAD + 61}",
        f"records/1/0: the shared batch file 1 ends at 100, before {2 * (PAYLOAD + 61)}"]
    opened.clear()
    os.truncate(_shared_path(path, 1), 2 * (PAYLOAD + 61))
    report = check_store(open_store(opened, path, read_only=True))
    assert report.differences == [f"records/{partition_id}/0: the shared batch file 1 holds it, but no row says so"
                                  for partition_id in (0, 1)]


def test_an_older_store_is_marked_with_the_format_that_writes_shared_files(
        opened: list[RocksEventStore], path: Path) -> None:
    """Format 1 had no shared pointers: once this logwright may have written one, an older one refuses the store
    (it would read a 24-byte pointer as a batch)."""
    open_store(opened, path).close()
    opened.clear()
    raw.put(path, "meta", keys.META_FORMAT_VERSION, keys.encode_sequence(1))
    open_store(opened, path, read_only=True).close()
    opened.clear()
    assert keys.decode_sequence(raw.items(path, "meta")[keys.META_FORMAT_VERSION]) == 1, "a reader changes nothing"
    open_store(opened, path).close()
    opened.clear()
    assert keys.decode_sequence(raw.items(path, "meta")[keys.META_FORMAT_VERSION]) == keys.FORMAT_VERSION == 2
