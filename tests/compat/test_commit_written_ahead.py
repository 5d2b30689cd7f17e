"""A scheduled commit holding `WRITE_AHEAD_FROM` or more of batch-file bytes writes them on the batch files' thread
and commits when they are written (`Broker._write_ahead`): meanwhile the event loop serves other requests, which it
could not while writev held it (session 51: a producer of 1 MB batches starved the consumers beside it). The
produce is answered only after the commit, and what it wrote reads back."""

from __future__ import annotations

import asyncio
import datetime
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.produce.v9 import request as produce_v9
from kio.static.primitive import i32Timedelta
from logwright.compat import broker_commits
from logwright.compat.broker import Broker
from logwright.compat.kafka import fetch, produce
from logwright.compat.registry import RequestContext
from logwright.compat.wire.messages import decode_request, decode_response, encode_request, encode_response_frame
from logwright.compat.wire.record_batch import Record, build_batch, iter_batches, parse_header
from logwright.eventstore import batch_files
from logwright.eventstore.file_ranges import FileRange
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import loopback_broker

TOPIC = "ahead"


@pytest.fixture(autouse=True)
def no_small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 0)


@pytest.fixture(autouse=True)
def writes_always_slow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every commit of `WRITE_AHEAD_FROM` or more goes ahead, whatever writes cost lately (pinned by its own test)."""
    monkeypatch.setattr(broker_commits, "WRITE_AHEAD_AFTER_NS", 0)


class Gate:
    """Holds the writer thread until opened, and counts the writes each thread made."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened = threading.Event()
        self.on_thread = 0
        self.on_loop = 0
        write_all = batch_files._write_all

        def gated(fd: int, buffers: list[bytes]) -> None:
            if threading.current_thread() is threading.main_thread():
                self.on_loop += 1
            else:
                self.on_thread += 1
                assert self.opened.wait(30), "the gate was never opened"
            write_all(fd, buffers)

        monkeypatch.setattr(batch_files, "_write_all", gated)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    held = Gate(monkeypatch)
    yield held
    held.opened.set()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with loopback_broker(tmp_path / "data") as served:
        yield served


def produce_frame(correlation_id: int, count: int, size: int, producer_id: int = -1) -> bytes:
    """A Produce of one batch; with ``producer_id`` an idempotent one (epoch 0, sequence 0)."""
    batch = build_batch([Record(offset=i, timestamp=1_700_000_000_000 + i, key=None, value=bytes([i % 251]) * size,
                                headers=()) for i in range(count)],
                        **({"producer_id": producer_id, "producer_epoch": 0, "base_sequence": 0}
                           if producer_id >= 0 else {}))
    request = produce_v9.ProduceRequest(
        transactional_id=None, acks=-1, timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(produce_v9.TopicProduceData(name=TOPIC, partition_data=(
            produce_v9.PartitionProduceData(index=0, records=batch),)),))
    return encode_request(request, correlation_id, "ahead")


def fetch_frame(correlation_id: int, offset: int) -> bytes:
    request = fetch_v12.FetchRequest(
        replica_id=-1, max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=0)), min_bytes=1,
        max_bytes=52_428_800, isolation_level=0, session_id=0, session_epoch=-1,
        topics=(fetch_v12.FetchTopic(topic=TOPIC, partitions=(fetch_v12.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=52_428_800),)),),
        forgotten_topics_data=(), rack_id="")
    return encode_request(request, correlation_id, "ahead")


async def serve(broker: Broker, handle: Any, frame: bytes) -> Any:
    """What the server does for one frame, minus the socket: the decoded answer a client reads."""
    header, request = decode_request(frame)
    context = RequestContext(broker, header.api_key, header.api_version, header.correlation_id, header.client_id,
                             1, "127.0.0.1")
    pieces = encode_response_frame(header.api_key, header.api_version, header.correlation_id,
                                   await handle(context, request))
    data = b"".join(piece.read() if isinstance(piece, FileRange) else piece for piece in pieces)
    for piece in pieces:
        if isinstance(piece, FileRange):
            piece.close()
    return decode_response(header.api_key, header.api_version, data[4:])[1]


async def until(condition: Callable[[], bool]) -> None:
    """Let the loop turn until ``condition`` holds (the writer thread has started), failing rather than hanging."""
    for _ in range(100_000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the commit's bytes were never handed to the writer thread")


def produced(answer: Any) -> tuple[int, int]:
    (partition,) = answer.responses[0].partition_responses
    return int(partition.error_code), int(partition.base_offset)


def fetched_offsets(answer: Any) -> list[int]:
    (partition,) = answer.responses[0].partitions
    return [parse_header(batch).base_offset for batch in iter_batches(partition.records or b"")]


def test_the_loop_serves_a_fetch_while_a_large_commit_is_written_and_answers_the_produce_after_it(
        broker: Broker, gate: Gate) -> None:
    async def scenario() -> None:
        broker.create_topic(TOPIC, 1)
        broker.commit_now()
        gate.opened.set()
        assert produced(await serve(broker, produce.handle, produce_frame(1, 40, 1024))) == (0, 0)
        assert (gate.on_thread, gate.on_loop) == (0, 1), "40 KB is written on the loop"
        gate.opened.clear()
        large = asyncio.ensure_future(serve(broker, produce.handle, produce_frame(2, 300, 1024)))
        await until(lambda: gate.on_thread > 0)
        reading = await serve(broker, fetch.handle, fetch_frame(3, 0))  # answered while the writer is held
        assert fetched_offsets(reading) == [0], "the fetch saw bytes no commit has made durable"
        for _ in range(20):
            await asyncio.sleep(0)
        assert not large.done(), "the produce was answered before its bytes were written"
        gate.opened.set()
        assert produced(await large) == (0, 40)
        assert fetched_offsets(await serve(broker, fetch.handle, fetch_frame(4, 0))) == [0, 40]
        assert gate.on_thread == 1

    asyncio.run(scenario())


def test_what_is_staged_during_the_write_is_the_next_commit_and_is_answered_after_the_first(
        broker: Broker, gate: Gate) -> None:
    async def scenario() -> None:
        broker.create_topic(TOPIC, 1)
        broker.commit_now()
        answered: list[int] = []
        first = asyncio.ensure_future(serve(broker, produce.handle, produce_frame(1, 300, 1024)))
        first.add_done_callback(lambda _: answered.append(1))
        await until(lambda: gate.on_thread > 0)
        second = asyncio.ensure_future(serve(broker, produce.handle, produce_frame(2, 10, 1024)))
        second.add_done_callback(lambda _: answered.append(2))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not first.done() and not second.done(), "the second was committed before the first's bytes"
        commits: list[int] = []
        broker.store.add_commit_listener(lambda events: commits.append(len(events)))
        gate.opened.set()
        assert produced(await first) == (0, 0)
        assert produced(await second) == (0, 300)
        await asyncio.sleep(0)  # the done callbacks' turn
        assert answered == [1, 2]
        assert commits == [1, 1], "the first commit held only what was staged before its write ahead"
        assert (gate.on_thread, gate.on_loop) == (1, 1), "the second's 10 KB is written on the loop"

    asyncio.run(scenario())


WRITE_ALL = batch_files._write_all


def failing_writes_ahead(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Batch files written on the writer thread (writes ahead) fail with a full disk once the returned event is set,
    and wait for it; those on the loop's thread are written."""
    permit = threading.Event()

    def failing_on_the_thread(fd: int, buffers: list[bytes]) -> None:
        if threading.current_thread() is not threading.main_thread():
            assert permit.wait(30), "never permitted"
            raise OSError(28, "No space left on device")
        WRITE_ALL(fd, buffers)

    monkeypatch.setattr(batch_files, "_write_all", failing_on_the_thread)
    return permit


def test_a_failed_write_ahead_fails_the_produce_staged_after_it_too_and_the_next_one_succeeds(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second produce's state was folded on top of the first's: when the first part fails the store reloads,
    dropping both, so both are answered KAFKA_STORAGE_ERROR and the offsets they took are given again."""
    permit = failing_writes_ahead(monkeypatch)

    async def scenario() -> None:
        broker.create_topic(TOPIC, 1)
        broker.commit_now()
        first = asyncio.ensure_future(serve(broker, produce.handle, produce_frame(1, 300, 1024)))
        for _ in range(20):
            await asyncio.sleep(0)
        assert broker.store.sealed
        second = asyncio.ensure_future(serve(broker, produce.handle, produce_frame(2, 10, 1024)))
        for _ in range(20):
            await asyncio.sleep(0)
        permit.set()
        assert produced(await first) == (56, -1)
        assert produced(await second) == (56, -1)
        assert produced(await serve(broker, produce.handle, produce_frame(3, 10, 1024))) == (0, 0)
        assert fetched_offsets(await serve(broker, fetch.handle, fetch_frame(4, 0))) == [0]

    try:
        asyncio.run(scenario())
    finally:
        permit.set()


def test_a_retry_answered_as_a_duplicate_of_a_write_that_then_fails_fails_with_it(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """An idempotent retry arriving while its original is still being written is a duplicate of a batch not yet
    durable (Pulsar's "unknown"): it is answered only with the original's commit, and when that write fails both
    are KAFKA_STORAGE_ERROR, the sequences they took are dropped with the store's reload, and the next send of the
    same batch is taken as new, stored once."""
    permit = failing_writes_ahead(monkeypatch)

    async def scenario() -> None:
        broker.create_topic(TOPIC, 1)
        broker.commit_now()
        first = asyncio.ensure_future(serve(broker, produce.handle, produce_frame(1, 300, 1024, producer_id=5)))
        for _ in range(20):
            await asyncio.sleep(0)
        assert broker.store.sealed
        retry = asyncio.ensure_future(serve(broker, produce.handle, produce_frame(2, 300, 1024, producer_id=5)))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not retry.done()  # a duplicate of a write under way waits for it
        permit.set()
        assert produced(await first) == (56, -1)
        assert produced(await retry) == (56, -1)
        monkeypatch.setattr(batch_files, "_write_all", WRITE_ALL)  # the disk has room again
        assert produced(await serve(broker, produce.handle, produce_frame(3, 300, 1024, producer_id=5))) == (0, 0)
        assert produced(await serve(broker, produce.handle, produce_frame(4, 300, 1024, producer_id=5))) == (0, 0)
        assert fetched_offsets(await serve(broker, fetch.handle, fetch_frame(5, 0))) == [0]

    try:
        asyncio.run(scenario())
    finally:
        permit.set()


def test_a_commit_forced_during_the_write_waits_for_it_and_the_write_ending_later_commits_nothing_twice(
        broker: Broker, gate: Gate, monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        broker.create_topic(TOPIC, 1)
        broker.commit_now()
        large = asyncio.ensure_future(serve(broker, produce.handle, produce_frame(1, 300, 1024)))
        await until(lambda: gate.on_thread > 0)
        wait_for_writes = batch_files.BatchFiles.wait_for_writes

        def opening(files: batch_files.BatchFiles) -> None:  # the gate opens only once the commit waits
            gate.opened.set()
            wait_for_writes(files)

        monkeypatch.setattr(batch_files.BatchFiles, "wait_for_writes", opening)
        broker.commit_now()  # as a truncation or a compaction slice forces one
        assert not broker.store.file_bytes_staged
        assert produced(await large) == (0, 0)
        for _ in range(20):
            await asyncio.sleep(0)
        assert fetched_offsets(await serve(broker, fetch.handle, fetch_frame(2, 0))) == [0]

    asyncio.run(scenario())


def _three_large_produces_each_staged_during_the_write_before(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[int], list[tuple[int, int]]]:
    """Which thread wrote each batch file write, the events of each commit, and the three answers."""
    permits = threading.Semaphore(0)
    writers: list[str] = []
    write_all = batch_files._write_all

    def one_at_a_time(fd: int, buffers: list[bytes]) -> None:
        on_thread = threading.current_thread() is not threading.main_thread()
        writers.append("thread" if on_thread else "loop")
        if on_thread:
            assert permits.acquire(timeout=30), "no permit was given"
        write_all(fd, buffers)

    monkeypatch.setattr(batch_files, "_write_all", one_at_a_time)
    commits: list[int] = []

    async def scenario() -> list[tuple[int, int]]:
        broker.create_topic(TOPIC, 1)
        broker.commit_now()
        broker.store.add_commit_listener(lambda events: commits.append(len(events)))
        answers = [asyncio.ensure_future(serve(broker, produce.handle, produce_frame(1, 300, 1024)))]
        for number in (2, 3):
            await until(lambda: len(writers) >= number - 1)  # noqa: B023 - awaited before the loop moves on
            answers.append(asyncio.ensure_future(serve(broker, produce.handle, produce_frame(number, 300, 1024))))
            for _ in range(20):  # staged while the write ahead before it is held
                await asyncio.sleep(0)
            assert not answers[-2].done(), "answered before its bytes were written"
            permits.release()
        permits.release()  # the third's, should it be written ahead
        return [produced(await answer) for answer in answers]

    try:
        return writers, commits, asyncio.run(scenario())
    finally:
        for _ in range(3):
            permits.release()


def test_a_steady_producers_commits_are_pipelined_each_written_ahead_while_the_next_is_staged(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    writers, commits, answers = _three_large_produces_each_staged_during_the_write_before(broker, monkeypatch)
    assert answers == [(0, 0), (0, 300), (0, 600)]
    assert writers == ["thread", "thread", "thread"], "a part of a commit was written on the loop"
    assert commits == [1, 1, 1], "each commit held what was staged before its write ahead"


def test_a_commit_that_cannot_be_pipelined_waits_for_a_bounded_number_of_writes_ahead(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a seal (the commit holds files to drop, range deletes, staged aborts) what is staged during a write ahead
    joins its commit; after `WRITES_AHEAD_PER_COMMIT` of them the commit writes the rest itself, so a steady producer
    cannot put it off."""
    monkeypatch.setattr(broker_commits, "WRITES_AHEAD_PER_COMMIT", 2)
    monkeypatch.setattr(RocksEventStore, "_can_seal", lambda store: False)
    writers, commits, answers = _three_large_produces_each_staged_during_the_write_before(broker, monkeypatch)
    assert answers == [(0, 0), (0, 300), (0, 600)]
    assert writers == ["thread", "thread", "loop"], "the third large produce waited for a third write ahead"
    assert commits == [3], "one commit for the three"


def test_a_large_commit_is_written_on_the_loop_while_writes_are_quick_and_ahead_once_they_are_slow(
        broker: Broker, gate: Gate, monkeypatch: pytest.MonkeyPatch) -> None:
    """Handing the files to the thread costs CPU; it pays only when writing them would hold the loop
    `WRITE_AHEAD_AFTER_NS` or more at what writes have cost lately."""
    monkeypatch.setattr(broker_commits, "WRITE_AHEAD_AFTER_NS", 1_000_000)
    step = [1_000]  # ns between two readings of the write clock: each write takes one step
    now = [0]

    def clock() -> int:
        now[0] += step[0]
        return now[0]

    monkeypatch.setattr(batch_files, "_clock_ns", clock)

    async def scenario() -> None:
        broker.create_topic(TOPIC, 1)
        broker.commit_now()
        gate.opened.set()
        assert produced(await serve(broker, produce.handle, produce_frame(1, 300, 1024))) == (0, 0)
        assert (gate.on_thread, gate.on_loop) == (0, 1), "300 KB written in a microsecond goes on the loop"
        step[0] = 20_000_000  # writes turn slow: 300 KB in 20 ms
        assert produced(await serve(broker, produce.handle, produce_frame(2, 300, 1024))) == (0, 300)
        assert (gate.on_thread, gate.on_loop) == (0, 2), "decided at what writes cost before this one"
        assert produced(await serve(broker, produce.handle, produce_frame(3, 300, 1024))) == (0, 600)
        assert (gate.on_thread, gate.on_loop) == (1, 2), "written ahead once the last writes were slow"
        step[0] = 1_000
        for number in range(4, 15):  # the thread's quick writes bring the estimate down again
            produced(await serve(broker, produce.handle, produce_frame(number, 300, 1024)))
        assert gate.on_loop > 2, "still written ahead though writes are quick again"

    asyncio.run(scenario())
