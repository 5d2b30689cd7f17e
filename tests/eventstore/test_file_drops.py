"""Batch files deleted on a thread of their own, after the log's sync (`eventstore.file_drops`).

The power-cut side (a truncation's files gone, its log synced) is tests/integration/test_power_loss.py.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from logwright.eventstore import batch_files, file_drops
from logwright.eventstore.file_drops import FileDrops
from logwright.eventstore.rocksdb import RocksEventStore

from .support import new_topic, open_store, produce

PAYLOAD = 8_000
"""Above `INLINE_BELOW`: the batch goes to the partition's own file (`SMALL_PARTITION_BYTES` is 0 here)."""
WAIT_S = 10.0


@pytest.fixture(autouse=True)
def no_small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 0)


class Gate:
    """Holds every deletion job before its sync until `open` (the sync of a slow disk), and says which ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened = threading.Event()
        self.reached = threading.Event()
        real = file_drops._delete

        def held(files: tuple[str, ...], trees: tuple[str, ...], before: Callable[[], None] | None) -> None:
            self.reached.set()
            assert self.opened.wait(WAIT_S), "the gate was never opened"
            real(files, trees, before)

        monkeypatch.setattr(file_drops, "_delete", held)

    def open(self) -> None:
        self.opened.set()

    def open_when_waited_for(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Open as soon as someone waits for the jobs (`FileDrops.wait`): before that, they are held."""
        real = FileDrops.wait

        def wait(drops: FileDrops) -> None:
            self.open()
            real(drops)

        monkeypatch.setattr(FileDrops, "wait", wait)


def _files(tmp: Path, *names: str) -> list[str]:
    paths = []
    for name in names:
        path = tmp / name
        path.write_bytes(b"x")
        paths.append(str(path))
    return paths


def test_files_go_after_the_sync_returns_and_stay_pending_until_then(tmp_path: Path) -> None:
    drops = FileDrops()
    files = _files(tmp_path, "a", "b")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "c").write_bytes(b"x")
    seen_at_sync: list[bool] = []
    syncing, release = threading.Event(), threading.Event()

    def sync() -> None:
        seen_at_sync.append(all(os.path.exists(path) for path in [*files, str(tree)]))
        syncing.set()
        assert release.wait(WAIT_S)

    drops.drop(files, [str(tree)], sync)
    assert syncing.wait(WAIT_S)
    assert drops.pending() == {*files, str(tree)}, "named until the job ends"
    release.set()
    drops.wait()
    assert seen_at_sync == [True], "nothing is deleted before the sync"
    assert not any(os.path.exists(path) for path in [*files, str(tree)])
    assert drops.pending() == frozenset()
    drops.close()


def test_a_failed_sync_deletes_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    drops = FileDrops()
    files = _files(tmp_path, "a")

    def failing_sync() -> None:
        raise OSError("the disk went away")

    with caplog.at_level(logging.WARNING, logger=file_drops.__name__):
        drops.drop(files, [], failing_sync)
        drops.wait()
    assert os.path.exists(files[0]), "the deletion might not be durable: the file stays"
    assert "syncing the log before failed" in caplog.text
    drops.drop(files, [], None)  # a later job, its own sync fine, deletes it
    drops.close()
    assert not os.path.exists(files[0])


def test_jobs_run_in_the_order_handed_over(tmp_path: Path) -> None:
    drops = FileDrops()
    order: list[str] = []
    for name in ("first", "second", "third"):
        drops.drop(_files(tmp_path, name), [], lambda name=name: order.append(name))  # type: ignore[misc]
    drops.close()
    assert order == ["first", "second", "third"]


def test_a_truncation_is_answered_before_its_files_go_and_listings_leave_them_out(
        opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = Gate(monkeypatch)
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    for _ in range(2):
        produce(store, 0, record_count=10, payload_size=PAYLOAD)
        store.commit()
    store.truncate(0, 20)  # past the end: every file of the partition is doomed
    store.commit()  # returns with the deletion held at the gate, its sync not even begun
    assert gate.reached.wait(WAIT_S)
    doomed = path / "batches" / "0" / f"{0:020d}.batches"
    assert doomed.exists(), "still on disk while its job waits"
    assert store._files.file_bases(0) == [], "but no listing names it"  # noqa: SLF001 - what the store counts on
    produce(store, 0, record_count=10, payload_size=PAYLOAD)  # served meanwhile: a new file
    store.commit()
    assert store._files.file_bases(0) == [20]  # noqa: SLF001
    gate.open()
    store.wait_for_dropped_files()
    assert sorted(os.listdir(path / "batches" / "0")) == [f"{20:020d}.batches"]


def _truncation_held(opened: list[RocksEventStore], path: Path, monkeypatch: pytest.MonkeyPatch) -> RocksEventStore:
    """A store whose truncation's files wait at a gate that opens only when someone waits for them."""
    gate = Gate(monkeypatch)
    store = open_store(opened, path)
    new_topic(store, "t", 1)
    produce(store, 0, record_count=10, payload_size=PAYLOAD)
    store.commit()
    store.truncate(0, 10)
    store.commit()
    assert gate.reached.wait(WAIT_S)
    gate.open_when_waited_for(monkeypatch)
    return store


def test_close_waits_for_the_files_being_dropped(opened: list[RocksEventStore], path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    store = _truncation_held(opened, path, monkeypatch)
    store.close()  # the job syncs this database's log: close must not pull it away first
    opened.clear()
    assert not (path / "batches" / "0" / f"{0:020d}.batches").exists()


def test_a_reopen_waits_for_the_files_being_dropped(opened: list[RocksEventStore], path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    store = _truncation_held(opened, path, monkeypatch)
    assert store.reopen()
    assert not (path / "batches" / "0" / f"{0:020d}.batches").exists()
    assert store.read_batches(0, 0, 1 << 20) == []
