"""Whatever makes the store drop what is staged and reload from disk fails every request still waiting for any of it
(`Broker._reloaded`), not only a failure of the broker's own commit: here a truncation's commit (the store commits a
partition's staged batches before it truncates it) fails, and a produce staged in the same turn must not be answered
as written by the next, empty, commit."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.compat.broker import Broker
from logwright.compat.kafka import fetch, produce
from logwright.eventstore import batch_files
from logwright.eventstore.store_errors import StoreFailed

from tests.compat.brokers import loopback_broker
from tests.compat.test_commit_written_ahead import TOPIC, fetch_frame, fetched_offsets, produce_frame, produced, serve


@pytest.fixture(autouse=True)
def no_small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_files, "SMALL_PARTITION_BYTES", 0)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with loopback_broker(tmp_path / "data") as served:
        yield served


def test_a_produce_staged_before_a_truncations_failed_commit_is_answered_storage_error(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    failing = threading.Event()
    write_all = batch_files._write_all

    def full_when_failing(fd: int, buffers: list[bytes]) -> None:
        if failing.is_set():
            raise OSError(28, "No space left on device")
        write_all(fd, buffers)

    monkeypatch.setattr(batch_files, "_write_all", full_when_failing)

    async def scenario() -> None:
        broker.create_topic(TOPIC, 1)
        broker.commit_now()
        (partition_id,) = broker.topic(TOPIC).partition_ids  # type: ignore[union-attr]
        assert produced(await serve(broker, produce.handle, produce_frame(1, 10, 1024))) == (0, 0)
        failing.set()
        waiting = asyncio.ensure_future(serve(broker, produce.handle, produce_frame(2, 10, 1024)))
        for _ in range(1_000):  # until the produce has staged, before the commit it scheduled runs
            await asyncio.sleep(0)
            if broker.store.file_bytes_staged:
                break
        assert broker.store.file_bytes_staged and not waiting.done()
        with pytest.raises(StoreFailed):
            broker.store.truncate(partition_id, 5)  # commits the staged batch first: that write fails
        failing.clear()
        assert produced(await waiting) == (56, -1), "answered as written though the reload dropped it"
        assert produced(await serve(broker, produce.handle, produce_frame(3, 10, 1024))) == (0, 10)
        assert fetched_offsets(await serve(broker, fetch.handle, fetch_frame(4, 0))) == [0, 10]

    asyncio.run(scenario())
