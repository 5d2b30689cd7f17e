"""Batch files deleted on a thread of their own, after the sync that makes deleting them safe.

Why: a commit that made files unreachable (a truncation, a topic deletion, a compaction slice) used to sync
RocksDB's log and unlink the files on the event loop before anyone was answered. The sync waits for the disk: on
this machine 5-35 ms, during which every connection waited, and a producer at 5,000 records/s beside a topic
deletion saw its end-to-end latency jump by that much (bench/results/history.md, session 53). Kafka deletes a
segment asynchronously too (``file.delete.delay.ms``).

Order is what keeps it safe. The log is synced first (``before``), so a power loss cannot bring back a pointer
into a deleted file; only then are the files unlinked. If the sync fails, nothing is deleted: a later truncation
of the partition dooms the files below its first kept batch again, and the next open deletes the directories of
deleted partitions (`BatchFiles.drop_orphans`), as after a crash between a commit and its deletions. Jobs run one
at a time, in the order they were handed over. Until a job has ended its paths are *pending*: the batch files
leave them out of every listing, so nothing counts, links or reuses a file that is about to go.

``db.flush_wal(True)`` and ``os.unlink`` release the GIL, so the loop serves other connections meanwhile.
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import os
import shutil
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)


class FileDrops:
    """Deletes files and directory trees on one thread, each job after its ``before`` (the log's sync) returned."""

    def __init__(self) -> None:
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._jobs: collections.deque[tuple[concurrent.futures.Future[None], frozenset[str]]] = collections.deque()

    def drop(self, files: Sequence[str], trees: Sequence[str], before: Callable[[], None] | None) -> None:
        """Delete ``files`` and the directories ``trees`` (with what they hold) once ``before`` has returned."""
        if not files and not trees:
            return
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="logwright-file-drops")
        job = self._executor.submit(_delete, tuple(files), tuple(trees), before)
        self._jobs.append((job, frozenset((*files, *trees))))

    def pending(self) -> frozenset[str] | set[str]:
        """The paths of the jobs not ended yet. Asked before a listing, so a path that goes after the listing is
        still named here: a job ended is forgotten only when it ended before this call."""
        jobs = self._jobs
        while jobs and jobs[0][0].done():
            jobs.popleft()
        if not jobs:
            return frozenset()
        if len(jobs) == 1:
            return jobs[0][1]
        return set().union(*(paths for _, paths in jobs))

    def wait(self) -> None:
        """Return once every job handed over has ended (at once when none is under way)."""
        while self._jobs:
            job, _ = self._jobs.popleft()
            job.result()  # _delete logs its failures: it does not raise

    def close(self) -> None:
        self.wait()
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None


def _delete(files: tuple[str, ...], trees: tuple[str, ...], before: Callable[[], None] | None) -> None:
    if before is not None:
        try:
            before()
        except Exception as error:  # noqa: BLE001 - a thread of our own: nothing above it to raise to
            log.warning("not deleting %d batch files: syncing the log before failed: %s", len(files) + len(trees),
                        error)
            return
    for path in files:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as error:
            log.warning("deleting %s failed: %s", path, error)
    for tree in trees:
        shutil.rmtree(tree, ignore_errors=True)
