"""A long poll waiting on given partitions (Fetch, ShareFetch) wakes for appends to those partitions only.

Before, every waiting Fetch woke on every commit that appended anywhere and re-read all its partitions: 20
consumers idle at the tail of a 100-partition topic doubled the broker's CPU per GB for a producer of another
topic (issue 18). No sleeps: each commit runs its listeners before the test looks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from logwright.compat.broker import Broker
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker
from tests.eventstore.support import produce


async def _turns(count: int = 5) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


def test_a_partition_long_poll_sleeps_through_other_partitions_and_wakes_for_its_own(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path)
    broker = Broker(store)

    async def scenario() -> None:
        broker.create_topic("quiet", 2)
        broker.create_topic("busy", 1)
        await broker.durable()
        quiet = [broker.partition_id("quiet", index) for index in range(2)]
        busy = broker.partition_id("busy", 0)
        assert busy is not None and None not in quiet
        waiting = [pid for pid in quiet if pid is not None]
        poll = asyncio.create_task(broker.wait_for_data(600.0, waiting))
        anywhere = asyncio.create_task(broker.wait_for_data(600.0))
        await _turns()
        produce(store, busy, record_count=3)
        store.commit()
        await _turns()
        assert anywhere.done()
        assert not poll.done()
        produce(store, waiting[1], record_count=1)
        store.commit()
        await asyncio.wait_for(poll, 5.0)
        assert broker._partition_waiters == {}  # noqa: SLF001 - nothing left registered once woken

    try:
        asyncio.run(scenario())
    finally:
        store.close()


def test_a_timed_out_or_cancelled_partition_long_poll_leaves_nothing_registered(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path)
    broker = Broker(store)

    async def scenario() -> None:
        broker.create_topic("quiet", 1)
        await broker.durable()
        partition_id = broker.partition_id("quiet", 0)
        assert partition_id is not None
        await broker.wait_for_data(0.01, [partition_id])
        assert broker._partition_waiters == {}  # noqa: SLF001
        poll = asyncio.create_task(broker.wait_for_data(600.0, [partition_id]))
        await _turns()
        assert partition_id in broker._partition_waiters  # noqa: SLF001
        poll.cancel()
        await asyncio.gather(poll, return_exceptions=True)
        assert poll.cancelled()
        assert broker._partition_waiters == {}  # noqa: SLF001

    try:
        asyncio.run(scenario())
    finally:
        store.close()


def test_a_share_fetch_long_poll_sleeps_through_appends_to_partitions_outside_its_session(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path)
    broker = in_process_broker(store)
    coordinator = share_coordinator(broker)

    async def scenario() -> None:
        broker.create_topic("shared", 1)
        broker.create_topic("busy", 1)
        await broker.durable()
        shared, busy = broker.partition_id("shared", 0), broker.partition_id("busy", 0)
        assert shared is not None and busy is not None
        poll = asyncio.create_task(coordinator.wait_for_records(600.0, [shared]))
        await _turns()
        produce(store, busy, record_count=3)
        store.commit()
        await _turns()
        assert not poll.done()
        produce(store, shared, record_count=1)
        store.commit()
        await asyncio.wait_for(poll, 5.0)

    try:
        asyncio.run(scenario())
    finally:
        store.close()
