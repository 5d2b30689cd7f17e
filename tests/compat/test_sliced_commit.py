"""A scheduled commit of many changed rows puts them into its WriteBatch a slice per turn
(`broker_commits.ROWS_PUT_PER_TURN`), letting other tasks run in between, and still writes them all at once (issue 18:
the 5,000 partition rows of a topic's creation held the event loop 15-30 ms in one commit)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from logwright.compat import broker_commits
from logwright.compat.broker import Broker
from logwright.compat.turns import TURNS_GIVEN_WAY
from logwright.core.events import Event, OffsetCommitted
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker

PER_TURN = 2


@pytest.fixture(autouse=True)
def _small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker_commits, "ROWS_PUT_PER_TURN", PER_TURN)


def _offset_rows_on_disk(path: Path) -> int:
    reader = RocksEventStore(path, read_only=True)
    try:
        return len(reader.entities("committed_offsets"))
    finally:
        reader.close()


def _commit_twelve_partitions(broker: Broker) -> None:
    """12 committed-offset rows and the group's head: over twice a slice (a topic's creation writes no partition
    rows any more, only its catalog row)."""
    broker.create_topic("t", 12)
    broker.commit_now()
    broker.stage([OffsetCommitted("g", "t", index, 1, -1, "", 0) for index in range(12)])


def test_the_rows_go_in_a_slice_a_turn_and_the_commit_writes_them_all_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = RocksEventStore(tmp_path / "store")
        broker = in_process_broker(store)
        commits: list[list[Event]] = []
        store.add_commit_listener(lambda events: commits.append([logged.event for logged in events]))
        _commit_twelve_partitions(broker)
        commits.clear()
        durable = broker.durable()
        left: list[int] = []
        while not durable.done():
            left.append(store.changed_rows)
            assert _offset_rows_on_disk(tmp_path / "store") == 0, "nothing written before the commit"
            await asyncio.sleep(0)
        await durable
        assert len(left) >= 12 // PER_TURN * TURNS_GIVEN_WAY - TURNS_GIVEN_WAY, f"others ran between the slices: {left}"
        assert left == sorted(left, reverse=True) and left[-1] <= 2 * PER_TURN
        assert len(commits) == 1, "one commit wrote every row"
        assert _offset_rows_on_disk(tmp_path / "store") == 13
        store.close()

    asyncio.run(scenario())


def test_rows_others_change_meanwhile_cannot_put_the_commit_off(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = RocksEventStore(tmp_path / "store")
        broker = in_process_broker(store)
        broker.create_topic("t", 1)
        broker.commit_now()
        first = [OffsetCommitted(f"g{index}", "t", 0, 1, -1, "", 0) for index in range(10)]
        broker.stage(first)
        slices = store.changed_rows // PER_TURN
        durable = broker.durable()
        turns = 0
        while True:
            await asyncio.sleep(0)
            if durable.done():
                break
            turns += 1
            assert turns <= slices * TURNS_GIVEN_WAY, "the commit waited on the rows staged after it was scheduled"
            # another connection changes more rows than a slice every turn
            broker.stage([OffsetCommitted(f"h{turns}-{index}", "t", 0, 1, -1, "", 0) for index in range(PER_TURN * 2)])
        await durable
        assert turns >= (slices - 1) * TURNS_GIVEN_WAY, "a slice, then way given for some turns, and so on"
        store.close()

    asyncio.run(scenario())


def test_a_few_rows_are_committed_in_the_turn_after_they_changed(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = RocksEventStore(tmp_path / "store")
        broker = in_process_broker(store)
        broker.create_topic("t", 1)
        durable = broker.durable()
        await asyncio.sleep(0)
        assert durable.done(), "under twice a slice: no slicing, the commit runs in the next turn as ever"
        store.close()

    asyncio.run(scenario())


def test_a_slice_that_cannot_be_put_hands_over_to_the_commit_and_no_waiter_is_left(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Should putting a slice raise (a row that does not encode), the rows stay changed and the commit that follows at
    once meets them: its waiters get its answer, never an endless wait."""
    async def scenario() -> None:
        store = RocksEventStore(tmp_path / "store")
        broker = in_process_broker(store)
        put = store.put_changed_rows
        calls: list[int | None] = []

        def failing_once(limit: int | None = None) -> None:
            calls.append(limit)
            if len(calls) == 1:
                raise RuntimeError("a row that does not encode")
            put(limit)

        _commit_twelve_partitions(broker)
        monkeypatch.setattr(store, "put_changed_rows", failing_once)
        durable = broker.durable()
        for _ in range(3):
            await asyncio.sleep(0)
        assert durable.done(), "the commit ran in the turn the slice failed"
        assert calls == [PER_TURN] and store.changed_rows == 0 and store.committed_sequence == store.last_sequence
        assert _offset_rows_on_disk(tmp_path / "store") == 13, "the rows the slice held were written by the commit"
        store.close()

    asyncio.run(scenario())
