"""Record batches kept in files beside RocksDB (`batch_files`): pointers in the WriteBatch, files Kafka-style.

Each test reads through a freshly opened store, so nothing comes from the in-memory tail cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from logwright.core.errors import CorruptState
from logwright.core.events import LogTruncated, TopicDeleted
from logwright.core.events.compaction import PartitionCompacted
from logwright.eventstore import batch_file_reads, batch_files, batch_pointers, file_ranges, keys
from logwright.eventstore.check import check_store
from logwright.eventstore.interface import Durability, StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import StoreFailed

from . import raw
from .contract import BIG
from .support import count_preads, deleted_and_kept_topics, fake_batch, new_topic, open_store, produce, reopen_store
from .test_rocksdb_store import TestRocksEventStore

PAYLOAD = 8_000
"""Above `INLINE_BELOW`: each produced batch goes to a file (`SMALL_PARTITION_BYTES` is 0 here but where a test
says otherwise)."""


@pytest.fixture(autouse=True)
def no_small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about the files: a partition's first batches go to one too."""
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 0)


class TestRocksEventStoreWithEveryBatchInFiles(TestRocksEventStore):
    """The whole EventStore contract again, every batch (the contract's are small) kept in a file."""

    @pytest.fixture(autouse=True)
    def every_batch_in_files(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(batch_files, "INLINE_BELOW", 0)


def _files(path: Path, partition_id: int = 0) -> list[str]:
    directory = path / "batches" / str(partition_id)
    return sorted(os.listdir(directory)) if directory.is_dir() else []


def _one_batch_stored(opened: list[RocksEventStore], path: Path) -> RocksEventStore:
    """A store with topic ``t`` (one partition) holding one committed batch of 10 records in a file."""
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    return store


def _offsets(store: RocksEventStore, partition_id: int = 0) -> list[int]:
    return [int.from_bytes(batch[:8], "big") for batch in store.read_batches(partition_id, 0, BIG)]


def test_a_large_batch_is_a_pointer_in_rocksdb_and_its_bytes_in_the_partitions_file(
        opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    produce(store, 0, record_count=10, payload_size=100)  # small: stays in RocksDB
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    expected = store.read_batches(0, 0, BIG)
    store = reopen_store(opened, store)
    assert store.read_batches(0, 0, BIG) == expected
    assert store.read_batches(0, 25, BIG) == expected[2:]
    store.close()
    opened.clear()
    values = list(raw.items(path, "records").values())
    assert [len(value) for value in values] == [20, len(expected[1]), 20]
    assert _files(path) == [f"{0:020d}.batches"]
    assert (path / "batches" / "0" / f"{0:020d}.batches").read_bytes() == expected[0] + expected[2]


def test_a_small_partitions_large_batches_go_to_the_shared_file_until_it_outgrows_them(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`SMALL_PARTITION_BYTES`: no directory or file for a partition that has held little (creating them cost more
    than the bytes; its batches go to the shared file), then a file once it holds more, and every later large batch
    goes to the file."""
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 3 * fake_size(PAYLOAD))
    store = open_store(opened, path)
    created = new_topic(store, "t", 2)
    for _ in range(2):
        produce(store, 0, record_count=10, payload_size=PAYLOAD)
        produce(store, 1, record_count=10, payload_size=PAYLOAD)
        store.commit()
    assert not (path / "batches" / "0").exists() and not (path / "batches" / "1").exists()
    produce(store, 0, record_count=10, payload_size=PAYLOAD)  # partition 0 holds 3 x PAYLOAD and more now
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    produce(store, 0, record_count=10, payload_size=100)  # small: RocksDB, as always
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    assert _files(path, 0) == [f"{30:020d}.batches"] and _files(path, 1) == []
    expected = [store.read_batches(partition_id, 0, BIG) for partition_id in created.partition_ids]
    store = reopen_store(opened, store)  # read back from RocksDB and the file, not from the tail cache
    assert [store.read_batches(partition_id, 0, BIG) for partition_id in created.partition_ids] == expected
    assert _offsets(store) == [0, 10, 20, 30, 40, 50]
    store.close()
    opened.clear()
    sizes = [len(value) for key, value in sorted(raw.items(path, "records").items())]
    pointer, shared = batch_pointers.POINTER.size, batch_pointers.SHARED_POINTER.size
    assert sizes[:6] == [shared] * 3 + [pointer, len(expected[0][4]), pointer], (
        "partition 0: three batches in the shared file, then pointers into its own file around the small one")
    assert sizes[6:] == [shared] * 2, "partition 1's batches stayed in the shared file"
    assert sorted(os.listdir(path / "batches" / "shared")) == [f"{1:020d}.batches"]


def test_a_partitions_shared_allowance_ends_with_it(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A topic deleted and created again starts its partitions' allowance afresh (ids are new ones anyway), and
    the deleted ones' counts are forgotten: what the store keeps per partition stays bounded."""
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 3 * fake_size(PAYLOAD))
    store = open_store(opened, path)
    created = new_topic(store, "t", 1)
    produce(store, created.partition_ids[0], record_count=10, payload_size=PAYLOAD)
    store.commit()
    assert store._files._small_bytes == {created.partition_ids[0]: fake_size(PAYLOAD)}
    store.append([TopicDeleted("t", created.topic_id, created.partition_ids)])
    store.commit()
    assert store._files._small_bytes == {}


def fake_size(payload: int) -> int:
    """The size of the batch `produce` builds for ten records of ``payload`` bytes in all."""
    return len(fake_batch(0, 10, b"x" * payload))


def test_a_file_rolls_and_truncation_deletes_the_files_wholly_below_the_log_start(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "FILE_ROLL_BYTES", 2 * PAYLOAD)
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    for _ in range(6):  # two batches per file: files at 0, 20, 40
        produce(store, 0, record_count=10, payload_size=PAYLOAD)
        store.commit()
    assert _files(path) == [f"{base:020d}.batches" for base in (0, 20, 40)]
    store.truncate(0, 25)
    store.commit()
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert _files(path) == [f"{base:020d}.batches" for base in (20, 40)], "file 20 still holds the batch at 20"
    assert _offsets(reopen_store(opened, store)) == [20, 30, 40, 50]


def test_truncating_past_the_end_deletes_every_file_and_later_batches_start_a_new_one(
        opened: list[RocksEventStore], path: Path) -> None:
    store = _one_batch_stored(opened, path)
    store.truncate(0, 10)
    produce(store, 0, record_count=10, payload_size=PAYLOAD)  # the same commit: a new file, not the doomed one
    store.commit()
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert _files(path) == [f"{10:020d}.batches"]
    assert _offsets(reopen_store(opened, store)) == [10]


def test_deleting_a_topic_deletes_its_partitions_files(opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    created, kept = deleted_and_kept_topics(store, PAYLOAD)
    store.append([TopicDeleted("t", created.topic_id, created.partition_ids)])
    store.commit()
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert sorted(os.listdir(path / "batches")) == [str(kept.partition_ids[0])]
    assert _offsets(reopen_store(opened, store), kept.partition_ids[0]) == [0]


def _open_descriptors_into(path: Path) -> set[str]:
    """The files of ``path`` this process holds open (from /proc: what a deleted file's descriptor still pins)."""
    targets = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(path)):
            targets.add(target.removesuffix(" (deleted)"))
    return targets


def test_deleting_a_topic_or_truncating_closes_the_descriptors_its_reads_opened(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "FILE_ROLL_BYTES", 2 * PAYLOAD)
    store = open_store(opened, path, tail_cache_bytes=0)
    created = new_topic(store, "t", 2)
    kept = new_topic(store, "kept", 1)
    for partition_id in (*created.partition_ids, *kept.partition_ids):
        for _ in range(4):  # two files each: at 0 and 20
            produce(store, partition_id, record_count=10, payload_size=PAYLOAD)
            store.commit()
    store = reopen_store(opened, store, tail_cache_bytes=0)  # nothing open for appending: only the reads' descriptors
    for partition_id in (*created.partition_ids, *kept.partition_ids):
        assert len(store.read_batches(partition_id, 0, BIG)) == 4
    batches = path / "batches"
    assert len(_open_descriptors_into(batches)) == 6
    store.append([TopicDeleted("t", created.topic_id, created.partition_ids)])
    store.commit()
    store.wait_for_dropped_files()  # the deleted partitions' trees go on a thread whose rmtree holds directory fds
    (kept_id,) = kept.partition_ids
    assert _open_descriptors_into(batches) == {str(batches / str(kept_id) / f"{base:020d}.batches") for base in (0, 20)}
    store.truncate(kept_id, 25)
    store.commit()
    store.wait_for_dropped_files()
    assert _open_descriptors_into(batches) == {str(batches / str(kept_id) / f"{20:020d}.batches")}
    assert [int.from_bytes(batch[:8], "big") for batch in store.read_batches(kept_id, 0, BIG)] == [20, 30]


def test_bytes_no_commit_reached_are_dropped_at_open_and_the_name_is_used_again(
        opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    created = new_topic(store, "t", 1)
    gone = new_topic(store, "gone", 1)
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    store.close()
    opened.clear()
    orphans = path / "batches" / "0"
    (orphans / f"{10:020d}.batches").write_bytes(b"x" * 100)  # a crash after the write, before the WriteBatch
    with open(orphans / f"{0:020d}.batches", "ab") as tail:
        tail.write(b"y" * 50)  # a torn append to the file that holds committed batches
    (path / "batches" / str(gone.partition_ids[0] + 7)).mkdir()  # a partition that does not exist
    store = open_store(opened, path)
    assert _files(path) == [f"{0:020d}.batches"]
    assert sorted(os.listdir(path / "batches")) == [str(created.partition_ids[0])]
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    assert _offsets(reopen_store(opened, store)) == [0, 10]


def test_a_checkpoint_links_the_files_and_neither_store_appends_to_an_inode_they_share(
        opened: list[RocksEventStore], path: Path, tmp_path: Path) -> None:
    store = _one_batch_stored(opened, path)
    store.checkpoint(str(tmp_path / "copy"))
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    copy = open_store(opened, tmp_path / "copy")
    assert _offsets(copy) == [0]
    produce(copy, 0, record_count=5, payload_size=PAYLOAD)  # the copy goes on from offset 10 on its own
    copy.commit()
    copied = copy.read_batches(0, 0, BIG)
    copy = reopen_store(opened, copy)
    assert _offsets(copy) == [0, 10]
    assert copy.read_batches(0, 0, BIG) == copied
    produced = store.read_batches(0, 0, BIG)
    assert _offsets(reopen_store(opened, store)) == [0, 10]
    shared = path / "batches" / "0" / f"{0:020d}.batches"
    assert os.stat(shared).st_nlink == 2 and os.stat(shared).st_size == len(produced[0]), "sealed at the checkpoint"
    assert _files(path) == _files(tmp_path / "copy") == [f"{base:020d}.batches" for base in (0, 10)]
    assert not os.path.samefile(path / "batches" / "0" / f"{10:020d}.batches",
                                tmp_path / "copy" / "batches" / "0" / f"{10:020d}.batches")


def test_a_compaction_slice_that_takes_a_files_last_pointer_deletes_the_file(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "FILE_ROLL_BYTES", PAYLOAD)
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    for _ in range(3):  # one batch per file: 0, 10, 20
        produce(store, 0, record_count=10, payload_size=PAYLOAD)
        store.commit()
    rewritten = fake_batch(10, 10, b"k" * 100)
    store.rewrite_batches(PartitionCompacted(0, 0, 20, 10, 1, PAYLOAD), [StoredBatch(0, 10, rewritten)], [0])
    store.commit()
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert _files(path) == [f"{20:020d}.batches"]
    store = reopen_store(opened, store)
    assert store.read_batches(0, 0, BIG)[0] == rewritten
    assert _offsets(store) == [10, 20]


def test_a_secondary_skips_batches_whose_file_the_primary_deleted(
        opened: list[RocksEventStore], path: Path, tmp_path: Path) -> None:
    store = _one_batch_stored(opened, path)
    secondary = open_store(opened, path, secondary=tmp_path / "secondary", load_state=False, projections=())
    reading = open_store(opened, path, secondary=tmp_path / "reading", load_state=False, projections=())
    stored = reading.read_batches(0, 0, BIG)
    assert [len(batch) for batch in stored] == [PAYLOAD + 61]
    store.truncate(0, 10)
    store.commit()
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert secondary.read_batches(0, 0, BIG) == [], "the primary truncated it: gone, not an error"
    assert reading.read_batches(0, 0, BIG) == stored, "a file it holds open stays readable until it catches up"
    reading.catch_up()
    assert reading.read_batches(0, 0, BIG) == []


def test_a_pointer_past_the_end_of_its_file_is_corrupt_state(opened: list[RocksEventStore], path: Path) -> None:
    store = _one_batch_stored(opened, path)
    store.close()
    opened.clear()
    os.truncate(path / "batches" / "0" / f"{0:020d}.batches", 100)
    with pytest.raises(CorruptState, match="ends before the batch"):
        open_store(opened, path).read_batches(0, 0, BIG)


def test_a_synced_store_writes_files_before_its_log(opened: list[RocksEventStore], path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    monkeypatch.setattr(batch_files.os, "fdatasync", lambda fd: synced.append(fd))
    store = open_store(opened, path, durability=Durability.FSYNC)
    new_topic(store, "t", 1)
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    assert len(synced) == 1
    assert _offsets(reopen_store(opened, store)) == [0]


def test_a_failed_file_write_fails_the_commit_and_keeps_nothing_of_it(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _one_batch_stored(opened, path)

    def full(fd: int, buffers: list[bytes]) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(batch_files.os, "writev", full)
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    with pytest.raises(StoreFailed):
        store.commit()
    monkeypatch.undo()
    assert store.reopen()
    assert store.state("partitions", "0").next_offset == 10
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    assert _offsets(reopen_store(opened, store)) == [0, 10]


def test_the_record_key_layout_is_unchanged() -> None:
    """Pointers live under the same keys as inline batches: readers of older stores find both."""
    assert batch_pointers.POINTER.size == 20 < 61
    assert keys.record_key(1, 2) == b"\x00\x00\x00\x01" + (2).to_bytes(8, "big")



def test_check_reports_a_pointer_its_file_does_not_hold(opened: list[RocksEventStore], path: Path) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 2)
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    produce(store, 1, record_count=10, payload_size=PAYLOAD)
    store.commit()
    assert check_store(store).consistent
    store.close()
    opened.clear()
    os.truncate(path / "batches" / "0" / f"{0:020d}.batches", 100)
    os.unlink(path / "batches" / "1" / f"{0:020d}.batches")
    report = check_store(open_store(opened, path, read_only=True))
    assert report.differences == [
        f"records/0/0: the batch file 0 ends at 100, before {PAYLOAD + 61}",
        "records/1/0: the batch file 0 is missing"]


def test_batches_that_follow_each_other_in_a_file_are_read_with_one_pread(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    for _ in range(10):
        produce(store, 0, record_count=10, payload_size=PAYLOAD)
        store.commit()
    expected = store.read_batches(0, 0, BIG)
    store = reopen_store(opened, store)
    reads = count_preads(monkeypatch)
    assert store.read_batches(0, 0, BIG) == expected
    assert reads == [sum(map(len, expected))]
    reads.clear()
    assert store.read_batches(0, 30, 3 * len(expected[0])) == expected[3:6]
    assert reads == [3 * len(expected[0])], "a run stops at the caller's budget"


def _as_bytes(pieces: list[bytes | file_ranges.FileRange]) -> bytes:
    data = b"".join(piece.read() if isinstance(piece, file_ranges.FileRange) else piece for piece in pieces)
    for piece in pieces:
        if isinstance(piece, file_ranges.FileRange):
            piece.close()
    return data


def _runs_split_by_a_small_batch(opened: list[RocksEventStore], path: Path) -> RocksEventStore:
    """Ten large batches, a small one (it stays in RocksDB and splits the runs), three large ones; committed."""
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    for _ in range(10):
        produce(store, 0, record_count=10, payload_size=PAYLOAD)
    produce(store, 0, record_count=10, payload_size=100)
    for _ in range(3):
        produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    return store


def test_pieces_for_a_socket_name_long_runs_in_files_and_hold_the_same_bytes(
        opened: list[RocksEventStore], path: Path) -> None:
    store = reopen_store(opened, _runs_split_by_a_small_batch(opened, path))
    expected = store.read_batches(0, 0, BIG)
    size = len(expected[0])
    pieces = store.read_batch_pieces(0, 0, BIG, ranges_from=5 * size)
    kinds = [type(piece).__name__ for piece in pieces]
    assert kinds == ["FileRange", "bytes", "bytearray"], "ten adjacent batches: one range; the small one inline; "\
        "the three after it, shorter than ranges_from, read into one buffer"
    assert _as_bytes(pieces) == b"".join(expected)
    assert _as_bytes(store.read_batch_pieces(0, 35, 3 * size, ranges_from=size)) == b"".join(expected[3:6])
    assert _as_bytes(store.read_batch_pieces(0, 0, BIG, end_offset=49, ranges_from=size)) == b"".join(expected[:5])


def test_pieces_from_the_tail_cache_are_the_same_ranges_and_bytes(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _runs_split_by_a_small_batch(opened, path)
    assert store._tail.stored(0, 0) is not None, "the batches just committed are cached"
    expected = store.read_batches(0, 0, BIG)
    size = len(expected[0])
    pieces = store.read_batch_pieces(0, 0, BIG, ranges_from=5 * size)
    assert [type(piece).__name__ for piece in pieces] == ["FileRange", "bytes", "bytes", "bytes", "bytes"], \
        "the cache knows which batches its files hold: a long run still goes by sendfile"
    assert _as_bytes(pieces) == b"".join(expected)

    def no_pread(*_: object) -> None:
        raise AssertionError("a short run of cached batches was read from its file again")

    monkeypatch.setattr(batch_files.BatchFiles, "read_run", no_pread)
    short = store.read_batch_pieces(0, 110, BIG, ranges_from=5 * size)
    assert short == expected[11:], "a short run is the cached bytes themselves"
    assert _as_bytes(store.read_batch_pieces(0, 35, 3 * size, ranges_from=size)) == b"".join(expected[3:6])
    assert _as_bytes(store.read_batch_pieces(0, 0, BIG, end_offset=49, ranges_from=size)) == b"".join(expected[:5])


def test_a_file_range_keeps_its_bytes_when_retention_deletes_the_file(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "FILE_ROLL_BYTES", 3 * (PAYLOAD + 61))
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    for _ in range(9):
        produce(store, 0, record_count=10, payload_size=PAYLOAD)
        store.commit()
    store = reopen_store(opened, store)
    expected = store.read_batches(0, 0, BIG)
    (first,) = store.read_batch_pieces(0, 0, 3 * len(expected[0]), ranges_from=1)
    assert isinstance(first, file_ranges.FileRange) and len(first) == 3 * len(expected[0])
    store.append([LogTruncated(0, 90)])
    store.commit()
    store.wait_for_dropped_files()  # deleted on their own thread, after the answer
    assert f"{0:020d}.batches" not in _files(path), "the file was deleted"
    assert first.read() == b"".join(expected[:3]), "the range reads what it named through its own descriptor"
    first.close()
    first.close()  # closing twice is harmless


def test_a_dropped_file_range_closes_its_descriptor(opened: list[RocksEventStore], path: Path) -> None:
    store = _one_batch_stored(opened, path)
    store = reopen_store(opened, store)
    before = file_ranges.FileRange.open_now
    pieces = store.read_batch_pieces(0, 0, BIG, ranges_from=1)
    (piece,) = pieces
    assert isinstance(piece, file_ranges.FileRange) and file_ranges.FileRange.open_now == before + 1
    fd, name = piece.fd, os.readlink(f"/proc/self/fd/{piece.fd}")
    assert name.endswith(".batches")
    del pieces, piece
    assert file_ranges.FileRange.open_now == before
    try:  # counting /proc/self/fd would race RocksDB's threads; the range's own number must not name the file
        assert os.readlink(f"/proc/self/fd/{fd}") != name, "the range's descriptor is still open"
    except FileNotFoundError:
        pass


def test_past_the_open_ranges_bound_batches_are_read_instead(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = _one_batch_stored(opened, path)
    store = reopen_store(opened, store)
    monkeypatch.setattr(batch_file_reads, "RANGES_OPEN", file_ranges.FileRange.open_now + 1)
    held = store.read_batch_pieces(0, 0, BIG, ranges_from=1)
    assert [type(piece) for piece in held] == [file_ranges.FileRange]
    assert [type(piece) for piece in store.read_batch_pieces(0, 0, BIG, ranges_from=1)] == [bytearray]
    held[0].close()
    assert [type(piece) for piece in store.read_batch_pieces(0, 0, BIG, ranges_from=1)] == [file_ranges.FileRange]


@pytest.mark.parametrize("cached", [True, False], ids=["tail cache", "rocksdb"])
def test_a_first_batch_longer_than_first_within_reads_nothing(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch, cached: bool) -> None:
    """A Fetch whose budget ran low asks the partitions after it whether their first batch fits: one lookup answers
    (the tail cache, else the row of the batch the read starts at), and a batch too long opens no range and reads no
    file; one that fits is read as without the bound, as is a read from the middle of a batch RocksDB holds (no row
    starts there: the read itself finds its batch, and the caller judges it)."""
    store = _runs_split_by_a_small_batch(opened, path)
    if not cached:
        store = reopen_store(opened, store)
    assert (store._tail.stored(0, 0) is not None) is cached
    expected = store.read_batches(0, 0, BIG)
    size = len(expected[0])
    for fits in (size, 5 * size):
        assert _as_bytes(store.read_batch_pieces(0, 0, fits, first_within=fits)) == \
            _as_bytes(store.read_batch_pieces(0, 0, fits))
    small = expected[10]
    assert _as_bytes(store.read_batch_pieces(0, 100, len(small), first_within=len(small))) == small

    def nothing_opened(*_: object) -> None:
        raise AssertionError("a batch that does not fit was opened or read")

    monkeypatch.setattr(file_ranges.FileRange, "__init__", nothing_opened)
    monkeypatch.setattr(os, "preadv", nothing_opened)
    assert store.read_batch_pieces(0, 0, BIG, first_within=size - 1) == []
    assert store.read_batch_pieces(0, 110, BIG, first_within=size - 1) == [], "the batch after the small one"
    monkeypatch.undo()
    inside = store.read_batch_pieces(0, 5, size, first_within=size - 1)  # offset 5 is inside the first batch
    assert _as_bytes(inside) == (b"" if cached else expected[0]), "the cache knows the batch holding it; RocksDB's "\
        "rows start at batches: read, the caller judges"
