"""The broker's index of topic names by metric form ('.' as '_'), which CreateTopics checks collisions against."""

from __future__ import annotations

import asyncio
from pathlib import Path

from logwright.core.log.catalog import delete_topic
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker


def test_a_name_deleted_and_created_again_in_one_commit_still_collides(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = RocksEventStore(str(tmp_path / "store"))
        try:
            broker = in_process_broker(store)
            broker.create_topic("orders.eu", 1)
            broker.commit_now()
            assert broker.topic_colliding_with("orders_eu") == "orders.eu"
            broker.stage([delete_topic(broker.topic("orders.eu"), "orders.eu")])
            assert broker.topic_colliding_with("orders_eu") is None
            broker.create_topic("orders.eu", 2)  # staged after the deletion, committed with it
            broker.commit_now()
            assert broker.topic_colliding_with("orders_eu") == "orders.eu"
            assert broker.topic_colliding_with("orders_eu", ignoring={"orders.eu"}) is None
            assert broker.topic_colliding_with("orders.eu") is None  # itself is not a collision
            broker.stage([delete_topic(broker.topic("orders.eu"), "orders.eu")])
            broker.commit_now()
            assert broker.topic_colliding_with("orders_eu") is None
        finally:
            store.close()

    asyncio.run(scenario())
