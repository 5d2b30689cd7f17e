"""The broker's group commit: what handlers stage goes to disk once per event-loop turn, in one WriteBatch, and
`durable()` answers each request once the write holding its effects is done (or failed).

A mixin of `Broker`. Long stagings go a part per turn and still commit as one (`stage_over_turns`,
`stage_in_parts`); a commit with many changed rows puts them a slice per turn (`ROWS_PUT_PER_TURN`); large batch-file
writes go to the files' thread and pipeline the commit (`WRITE_AHEAD_FROM`). A failed commit fails every request it
carried and refuses writes until the store reopens (`STORE_RETRY_MS`); a store that cannot reopen stops the broker.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NoReturn

from logwright.compat.start_at_once import InTurnFuture
from logwright.compat.turns import TURNS_GIVEN_WAY, give_way
from logwright.core.clock import Clock
from logwright.core.events import Event
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import StoreFailed

if TYPE_CHECKING:
    from logwright.eventstore.interface import StoredBatch

log = logging.getLogger("logwright.compat.broker")  # the broker's messages, under the logger they always had

STORE_RETRY_MS = 1000
"""After a failed commit, how long (broker clock) writes are refused before the store is reopened again."""
WRITE_AHEAD_FROM = 256 * 1024
"""Batch-file bytes a scheduled commit writes on the batch files' thread (`RocksEventStore.write_records_ahead`)
rather than on the event loop, serving other connections meanwhile: a producer of 1 MB batches with the page cache
dropped kept the loop in writev 70% of the time, and the consumers beside it read a fifth of what it wrote
(session 51). Below this, handing the write to the thread and back costs more than writing it."""
WRITE_AHEAD_AFTER_NS = 1_000_000
"""A commit's batch files go to their thread only when writing them would hold the loop this long at what writes
cost lately (`RocksEventStore.file_write_ns_per_byte`). Handing them over costs the broker CPU: 500 KB records,
alternated, 1.50 s/GB written on the loop (7b509c6) against 1.67 with every commit of 256 KiB or more written ahead
(b40538d) and 1.83 pipelined (68d59b5), MB/s 598 / 592 / 547. A megabyte takes 0.2-0.4 ms here when the host has
the memory and 4-5 ms when it faults it back in (session 51), the stall the thread is for."""
WRITES_AHEAD_PER_COMMIT = 1
"""Writes ahead one commit waits for at most when it cannot be pipelined (`RocksEventStore.write_records_ahead`:
it holds files to drop, range deletes, staged aborts): what is staged during one joins the commit, so a steady
producer cannot put the commit off for ever, and the commit writes it itself. A pipelined commit writes only what was
staged before its write ahead; what is staged meanwhile is the next commit's, which writes ahead in turn."""
COMMIT_GIVES_WAY_FROM = 256 * 1024
"""Batch-file bytes staged from which a scheduled commit waits one more loop turn, so that the requests read while
they were (a ping beside a producer of 500 KB batches) go before its write: a request read during a long handler
is queued behind the commit that handler scheduled, and waited through both (the commit's writev of 500 KB took
0.4-0.5 ms here). One more epoll_wait(0) and callback a commit, nothing against writing that much."""
EVENTS_STAGED_PER_TURN = 200
"""Events `stage_over_turns` stages before it lets other tasks run (2-4 ms of folding on this machine)."""
ROWS_PUT_PER_TURN = 1_000
"""Changed rows a scheduled commit puts into its WriteBatch per turn when there are more than twice as many, letting
other tasks run in between (`RocksEventStore.put_changed_rows`): the 5,000 partition rows of a topic's creation or
deletion held the loop 15-30 ms in the commit at once. The commit is put off by at most as many turns as there were
slices at the first look, so what others stage meanwhile (and joins the same WriteBatch) cannot put it off for good."""
STAGED_SINCE_FAILURE: contextvars.ContextVar[int] = contextvars.ContextVar("staged_since_failure")
"""In a request's task: the broker's failed-commit count when it last staged (see `Broker.durable`)."""


class BrokerCommits:
    """Group commit and durability (`Broker` inherits them)."""

    store: RocksEventStore
    clock: Clock
    _commit_waiters: list[InTurnFuture[None]]
    _commit_scheduled: bool
    _commits_held: bool
    _commit_handle: asyncio.Handle | None
    _row_slices_left: int | None
    _writing_ahead: bool
    _sealed_waiters: list[InTurnFuture[None]]
    _writes_ahead_left: int
    _staging_over_turns: asyncio.Lock | None
    _commits_released: asyncio.Event | None
    _failed_commits: int
    _store_retry_at_ms: int

    if TYPE_CHECKING:  # the broker's own, which these call
        def stage(self, events: Sequence[Event], batches: Sequence[StoredBatch] = (),
                  index_entries: Sequence[tuple[bytes, bytes]] = ()) -> int: ...

    def durable(self) -> asyncio.Future[None]:
        """A future that resolves when everything staged so far is written (or fails with the error).

        An `InTurnFuture`: a handler started at once continues right after the write, in the commit's turn
        (`start_at_once`), when the commit runs as a loop callback of its own (`_scheduled_commit`).

        A task that staged before a commit failed and only now asks gets the failure too: that commit
        dropped what it staged, so a later empty commit must not answer it as written.
        """
        future: InTurnFuture[None] = InTurnFuture(asyncio.get_running_loop())
        staged_at = STAGED_SINCE_FAILURE.get(self._failed_commits)
        if staged_at != self._failed_commits:
            STAGED_SINCE_FAILURE.set(self._failed_commits)
            future.set_exception(StoreFailed(f"a commit failed after this request staged its effects: "
                                             f"{self.store.failed or 'the store was reopened since'}"))
            return future
        self._commit_waiters.append(future)
        self._schedule_commit()
        return future

    async def stage_over_turns(self, events: Sequence[Event]) -> None:
        """`stage` a long list of events a part at a time, letting other tasks run in between, and commit them in one
        WriteBatch all the same: the scheduled commit waits until the last part is staged.

        Folding 5,000 `OffsetCommitted` held the event loop 35-49 ms in one stretch, and the commit after it 15-31
        (`RocksEventStore.put_changed_rows` now encodes each part's rows in its own turn). A row every part changes (a
        group's head, listing each partition it has committed) is encoded once, in a turn of its own after the last
        part: encoded after each part it grew from 2.4 to 10 ms a turn, and with the last part it made that turn 10-12
        ms. The commit comes `TURNS_GIVEN_WAY` turns after that, as each part after the one before.
        One such staging runs at a time, so commits wait for at most one of them; what others stage meanwhile joins
        the same WriteBatch. Their state is visible part by part, as any staged event is. What would force a store
        commit in between (a compaction slice, a retention or DeleteRecords truncation of a partition with staged
        records) waits for the end first (`commits_free`); were one forced anyway, it would write the parts staged so
        far, each event whole, never torn. Should the store fail in between, the parts
        staged so far are dropped with the rest of their WriteBatch and the later ones are not staged (`StoreFailed`).
        """
        if len(events) <= EVENTS_STAGED_PER_TURN:
            self.stage(events)
            return
        await self.stage_in_parts(functools.partial(self.stage, events[start : start + EVENTS_STAGED_PER_TURN])
                                  for start in range(0, len(events), EVENTS_STAGED_PER_TURN))

    async def stage_in_parts(self, parts: Iterable[Callable[[], object]]) -> None:
        """Run each of ``parts`` (each stages something, synchronously) in a turn of its own, and commit all they
        staged in one WriteBatch, as `stage_over_turns` does with a list of events: a transaction's end stages its
        markers this way."""
        if self._staging_over_turns is None:
            self._staging_over_turns = asyncio.Lock()
        async with self._staging_over_turns:
            self._commits_held = True
            failures_before = self._failed_commits
            try:
                encoding = True  # rows encoded ahead, a part at a time, until one fails to encode
                for number, part in enumerate(parts):
                    if number:
                        await self._give_way_staging(failures_before)
                    part()
                    encoding = encoding and self._put_rows_ahead(defer_rows_changed_again=True)
                if encoding and self.store.changed_rows:
                    await self._give_way_staging(failures_before)
                    self._put_rows_ahead()
                # The commit is a stretch of its own too: right after the last part, a request read meanwhile waited
                # for both (a ping during a 5,000-partition OffsetCommit: 22 ms). Still inside the lock, so the next
                # long staging cannot hold this one's commit back.
                await self._give_way_staging(failures_before)
            finally:
                self._commits_held = False
                if self._commits_released is not None:
                    self._commits_released.set()
                self._schedule_commit()

    def _put_rows_ahead(self, defer_rows_changed_again: bool = False) -> bool:
        """Encode changed rows into the WriteBatch ahead of the commit; ``False`` if a row would not encode. The
        commit meets that row again and fails, with its waiters told (`StoreFailed`), as any failed commit."""
        try:
            self.store.put_changed_rows(defer_rows_changed_again=defer_rows_changed_again)
        except Exception:  # noqa: BLE001 - not raised here, to a request that did not stage the row: at the commit
            return False
        return True

    @property
    def commits_held(self) -> bool:
        """A staging over turns is between two of its parts (`stage_in_parts`): its commit waits for its end."""
        return self._commits_held

    async def commits_free(self) -> None:
        """Wait until no staging over turns holds commits back. Whatever forces a store commit (a compaction slice,
        a retention or DeleteRecords truncation of a partition with staged records) waits here first: a commit
        between two parts would write only some of them, and a crash then would leave a transaction's end half
        written."""
        while self._commits_held:
            if self._commits_released is None or self._commits_released.is_set():
                self._commits_released = asyncio.Event()
            await self._commits_released.wait()

    async def _give_way_staging(self, failures_before: int) -> None:
        await give_way()
        if self._failed_commits != failures_before:  # the parts staged so far were dropped
            raise StoreFailed("the store failed while a long staging was under way; its later parts were not staged")

    def _schedule_commit(self) -> None:
        if not self._commit_scheduled:
            self._commit_scheduled = True
            turns_to_wait = 1 if self.store.file_bytes_staged >= COMMIT_GIVES_WAY_FROM else 0
            self._commit_handle = asyncio.get_running_loop().call_soon(self._scheduled_commit, turns_to_wait)

    def _scheduled_commit(self, turns_to_wait: int = 0) -> None:
        if turns_to_wait:  # giving way between two slices of rows, as `turns.give_way` does
            self._commit_handle = asyncio.get_running_loop().call_soon(self._scheduled_commit, turns_to_wait - 1)
            return
        self._commit_handle = None
        if self._commits_held:  # `stage_over_turns` schedules it again when its last part is staged
            self._commit_scheduled = False
            self._row_slices_left = None
            return
        rows = self.store.changed_rows
        if rows > 2 * ROWS_PUT_PER_TURN and self._row_slices_left != 0 and self.store.failed is None:
            if self._row_slices_left is None:  # bounded: what others change meanwhile cannot put the commit off
                self._row_slices_left = rows // ROWS_PUT_PER_TURN
            self._row_slices_left -= 1
            try:
                self.store.put_changed_rows(ROWS_PUT_PER_TURN)
            except Exception:  # noqa: BLE001 - the commit below meets it again and fails its waiters, never leaves them
                self._row_slices_left = None
                self._commit()
                return
            self._commit_handle = asyncio.get_running_loop().call_soon(self._scheduled_commit, TURNS_GIVEN_WAY - 1)
            return
        self._row_slices_left = None
        if self._writing_ahead:  # a pipelined commit's first part is being written: this one follows it
            return  # still scheduled: `_written_ahead` runs it
        if self._write_ahead():
            return
        self._commit(continue_now=True)

    def _write_ahead(self) -> bool:
        """Start writing the staged batch files' bytes on their thread when there are `WRITE_AHEAD_FROM` of them and
        they would take `WRITE_AHEAD_AFTER_NS` or more;
        ``True`` when started: the commit runs once they are written (`_written_ahead`), other requests meanwhile."""
        staged = self.store.file_bytes_staged
        if (self._writing_ahead or not self._writes_ahead_left or self.store.failed is not None
                or staged < WRITE_AHEAD_FROM or staged * self.store.file_write_ns_per_byte < WRITE_AHEAD_AFTER_NS):
            return False
        writing = self.store.write_records_ahead(seal=True)
        if writing is None:
            return False
        if self.store.sealed:  # pipelined: the waiters so far wait for the sealed part, later ones for a new commit
            self._sealed_waiters, self._commit_waiters = self._commit_waiters, []
            self._commit_scheduled = False
        else:
            self._writes_ahead_left -= 1
        self._writing_ahead = True
        loop = asyncio.get_running_loop()

        def written(_: object) -> None:  # on the writer thread
            try:
                loop.call_soon_threadsafe(self._written_ahead)
            except RuntimeError:  # the loop is closed (shutdown): the store's close waits for the writes
                pass

        writing.add_done_callback(written)
        return True

    def _written_ahead(self) -> None:
        """The writes ahead ended: a pipelined commit's sealed part is written now, and the commit waiting for them
        runs, unless one ran meanwhile (`commit_now` waited for them) and none is scheduled, or one is scheduled to
        run anyway (a pipelined commit's next part then writes ahead in turn, or commits)."""
        self._writing_ahead = False
        self._finish_sealed(continue_now=True)
        if self._commit_scheduled and self._commit_handle is None:
            self._scheduled_commit()

    def _finish_sealed(self, continue_now: bool) -> None:
        """Write the sealed first part of a pipelined commit (waiting for its files' writes if they have not ended) and
        answer those waiting for it. Should it fail, the store reloads and `_reloaded` fails them, and the waiters of
        what was staged since."""
        try:
            self.store.finish_sealed()
        except StoreFailed as error:
            self._store_retry_at_ms = self.clock.now_ms() + STORE_RETRY_MS
            log.error("%s; the requests waiting for it were answered KAFKA_STORAGE_ERROR", error)
            return
        except Exception as error:
            self._fail_waiters(self._sealed_waiters, error)
            self._store_lost(error)
        waiters, self._sealed_waiters = self._sealed_waiters, []
        for waiter in waiters:
            waiter.settle(None, now=continue_now)

    def _commit(self, continue_now: bool = False) -> None:
        """Write what is staged and settle the waiters; ``continue_now``: called as a loop callback of its own, so
        the handlers waiting (`InTurnFuture.then`) continue here rather than a turn later."""
        self._commit_scheduled = False
        self._row_slices_left = None
        self._writes_ahead_left = WRITES_AHEAD_PER_COMMIT
        if self._commit_handle is not None:  # committed now (`commit_now`): the scheduled one has nothing left to do
            self._commit_handle.cancel()
            self._commit_handle = None
        self._finish_sealed(continue_now)  # first: a failure there drops this commit's staging too
        waiters, self._commit_waiters = self._commit_waiters, []
        try:
            self.store.commit()
        except StoreFailed as error:
            self._failed_commits += 1
            self._store_retry_at_ms = self.clock.now_ms() + STORE_RETRY_MS
            log.error("%s; %d waiting requests answered KAFKA_STORAGE_ERROR", error, len(waiters))
            self._fail_waiters(waiters, error)
            return
        except Exception as error:
            self._failed_commits += 1
            self._fail_waiters(waiters, error)
            self._store_lost(error)
        for waiter in waiters:
            waiter.settle(None, now=continue_now)

    @staticmethod
    def _fail_waiters(waiters: list[InTurnFuture[None]], error: BaseException) -> None:
        """Fail the waiters; their continuations run a turn later (this may run inside a request's own step)."""
        for waiter in waiters:
            waiter.settle(None, error, now=False)

    def _reopen_store(self) -> None:
        """Try to make a failed store writable again (the next `stage` learns from `store.failed`)."""
        try:
            self.store.reopen()
        except Exception as error:
            self._store_lost(error)

    def _store_lost(self, error: BaseException) -> NoReturn:
        """The store cannot be reloaded, so memory may disagree with the disk: stop rather than serve.

        SystemExit leaves the event loop from a callback or a task alike; the wiring's shutdown still runs.
        """
        log.critical("the store at %s is lost, the broker stops: %s", self.store.path, error)
        raise SystemExit(f"logwright stopped: the store at {self.store.path} failed and cannot be opened "
                         f"again: {error}") from error

    def commit_now(self) -> None:
        """Flush at shutdown or from synchronous code paths."""
        self._commit()
