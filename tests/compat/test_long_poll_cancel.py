"""A Fetch long poll cancelled in the same loop turn as data arrives still ends cancelled.

On Python 3.11 ``asyncio.wait_for`` returned normally in that case (the inner wait had finished, so
the cancellation was dropped): a broker shutting down could find a long poll carrying on instead of
stopping. The race is made deterministic here, no sleeps: the commit and the cancel happen back to back.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from logwright.compat.broker import Broker
from logwright.eventstore.rocksdb import RocksEventStore

from tests.eventstore.support import produce


def test_cancel_during_data_arrival_propagates(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path)
    broker = Broker(store)

    async def scenario() -> None:
        broker.create_topic("long-poll", 1)
        await broker.durable()
        partition_id = broker.partition_id("long-poll", 0)
        assert partition_id is not None
        poll = asyncio.create_task(broker.wait_for_data(600.0))
        await asyncio.sleep(0)
        assert not poll.done()
        produce(store, partition_id, record_count=1)
        store.commit()  # wakes the long poll ...
        poll.cancel()  # ... and, in the same turn, the shutdown cancels it
        with pytest.raises(asyncio.CancelledError):
            await poll

    try:
        asyncio.run(scenario())
    finally:
        store.close()
