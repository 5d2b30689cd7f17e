"""`Broker.stage_over_turns`: a long list of events is staged a part at a time, other tasks running in between, and
still reaches the disk in one WriteBatch (issue 18: an OffsetCommit of 5,000 partitions held the event loop 154 ms,
Kafka's 7)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from pathlib import Path

import pytest
from logwright.compat import broker_commits
from logwright.compat.broker import Broker
from logwright.compat.turns import TURNS_GIVEN_WAY, give_way
from logwright.core.events import Event, OffsetCommitted
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import StoreFailed

from tests.compat.brokers import in_process_broker
from tests.compat.test_group_handlers import turns_during

PER_TURN = 4


def _commits(offset: int, partitions: int = 10) -> list[OffsetCommitted]:
    return [OffsetCommitted("g", "t", partition, offset, -1, "", 0) for partition in range(partitions)]


def _open(tmp_path: Path) -> tuple[RocksEventStore, Broker, list[list[Event]]]:
    store = RocksEventStore(tmp_path / "store")
    broker = in_process_broker(store)
    broker.create_topic("t", 10)
    broker.commit_now()
    commits: list[list[Event]] = []
    store.add_commit_listener(lambda events: commits.append([logged.event for logged in events]))
    return store, broker, commits


@pytest.fixture(autouse=True)
def _small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(broker_commits, "EVENTS_STAGED_PER_TURN", PER_TURN)


def test_other_tasks_run_between_the_parts_and_one_commit_writes_them_all(tmp_path: Path) -> None:
    async def scenario() -> None:
        store, broker, commits = _open(tmp_path)
        seen: list[int] = []

        async def meanwhile() -> None:
            """Another connection's work: it stages too, and sees what the parts staged so far."""
            for _ in range(3):
                seen.append(sum(1 for row in store.entities("committed_offsets") if row.endswith("/g")))
                broker.stage([OffsetCommitted("other", "t", 0, len(seen), -1, "", 0)])
                await give_way()  # as many turns as the staging waits between its parts

        other = asyncio.create_task(meanwhile())
        await broker.stage_over_turns(_commits(7))
        await broker.durable()
        await other
        await broker.durable()
        assert seen == [4, 8, 10], "the loop ran between the parts, each part visible once staged"
        assert len(commits) >= 1
        first = commits[0]
        ours = [event for event in first if isinstance(event, OffsetCommitted) and event.group == "g"]
        assert [event.partition for event in ours] == list(range(10)), "all ten in the first commit"
        assert any(isinstance(event, OffsetCommitted) and event.group == "other" for event in first), (
            "what others staged meanwhile joined the same WriteBatch")
        store.close()

    asyncio.run(scenario())


async def _turns_during(staging: Awaitable[None]) -> int:
    """How many turns another task got while the staging ran (`turns_during`, uncapped)."""
    turns = 0
    done = False

    async def count_turns() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    counting = asyncio.create_task(count_turns())
    await staging
    done = True
    await counting
    return turns


def test_a_short_list_is_staged_at_once(tmp_path: Path) -> None:
    async def scenario() -> None:
        store, broker, commits = _open(tmp_path)
        _, turns = await turns_during(broker.stage_over_turns(_commits(1, PER_TURN)))
        assert turns == 0, "no yield for a list that fits one part"
        turns = await _turns_during(broker.stage_over_turns(_commits(2, PER_TURN + 1)))
        assert turns == 2 * TURNS_GIVEN_WAY, (
            "a pause between the two parts and one before the commit, each as long as `give_way` makes it")
        await broker.durable()
        assert [len(batch) for batch in commits] == [PER_TURN, PER_TURN + 1]
        fresh_group = [OffsetCommitted("h", "t", partition, 1, -1, "", 0) for partition in range(PER_TURN + 1)]
        turns = await _turns_during(broker.stage_over_turns(fresh_group))
        assert turns == 3 * TURNS_GIVEN_WAY, (
            "the head of a group new to the staging changes in both parts: encoded once, after a pause of its own")
        await broker.durable()
        assert [len(batch) for batch in commits][-1] == PER_TURN + 1
        store.close()

    asyncio.run(scenario())


def test_one_long_staging_at_a_time_with_a_commit_between_them(tmp_path: Path) -> None:
    """Commits wait for at most one long staging: two at once take turns, and the first is written before the second
    begins (otherwise a steady stream of them would hold every acknowledgement back)."""

    async def scenario() -> None:
        store, broker, commits = _open(tmp_path)
        await asyncio.gather(broker.stage_over_turns(_commits(1)), broker.stage_over_turns(_commits(2)))
        await broker.durable()
        offsets = [[event.offset for event in batch if isinstance(event, OffsetCommitted)] for batch in commits]
        assert offsets == [[1] * 10, [2] * 10], offsets
        store.close()

    asyncio.run(scenario())


def test_a_store_failure_between_the_parts_stops_the_staging(tmp_path: Path) -> None:
    async def scenario() -> None:
        store, broker, commits = _open(tmp_path)

        async def fail_meanwhile() -> None:
            await asyncio.sleep(0)
            broker._failed_commits += 1  # what a failed commit or a plugin failing to derive leaves behind

        failing = asyncio.create_task(fail_meanwhile())
        with pytest.raises(StoreFailed):
            await broker.stage_over_turns(_commits(3))
        await failing
        assert not broker._commits_held, "the hold ends with the staging, however it ends"
        store.close()

    asyncio.run(scenario())


def test_commit_now_does_not_wait_for_a_long_staging(tmp_path: Path) -> None:
    """Shutdown flushes whatever is staged, held or not."""

    async def scenario() -> None:
        store, broker, commits = _open(tmp_path)

        async def flush_meanwhile() -> None:
            await asyncio.sleep(0)
            broker.commit_now()

        flushing = asyncio.create_task(flush_meanwhile())
        await broker.stage_over_turns(_commits(4))
        await flushing
        await broker.durable()
        assert sum(len(batch) for batch in commits) == 10
        store.close()

    asyncio.run(scenario())
