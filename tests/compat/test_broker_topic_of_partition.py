"""`Broker.topic_of_partition`: the topic and index of a partition id, as the index hooks' batch views carry them."""

from __future__ import annotations

import asyncio
from pathlib import Path

from logwright.core.log.catalog import COUNTER_KEY, create_partitions, delete_topic
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker


def test_ids_added_later_keep_their_index_and_a_deleted_topic_has_none(tmp_path: Path) -> None:
    asyncio.run(_ids_and_indexes(tmp_path))


async def _ids_and_indexes(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "store")
    broker = in_process_broker(store)
    try:
        broker.create_topic("a", 2)
        broker.create_topic("b", 1)
        broker.commit_now()
        assert broker.topic_of_partition(2) == (broker.topic("b"), 0)
        broker.stage([create_partitions(broker.topic("a"), store.state("catalog", COUNTER_KEY), "a", 4)])
        broker.commit_now()
        a = broker.topic("a")
        assert a is not None and a.partition_ids == (0, 1, 3, 4)
        assert [broker.topic_of_partition(pid) for pid in a.partition_ids] == [(a, 0), (a, 1), (a, 2), (a, 3)]
        broker.stage([delete_topic(a, "a")])
        broker.commit_now()
        assert broker.topic_of_partition(3) is None
        assert broker.topic_of_partition(2) == (broker.topic("b"), 0)
        broker.create_topic("a", 1)
        broker.commit_now()
        assert broker.topic_of_partition(0) is None, "a recreated topic's ids are new ones"
        assert broker.topic_of_partition(5) == (broker.topic("a"), 0)
    finally:
        store.close()
