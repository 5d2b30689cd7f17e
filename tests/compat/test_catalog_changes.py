"""What changed in the topic catalog since a version (`Broker.catalog_changes_since`), so the KIP-848 coordinator's
`TopicCatalog` is carried over with the changed topics read again, not rebuilt over every topic at each change."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.compat import broker_catalog
from logwright.compat.broker import Broker
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    store = RocksEventStore(tmp_path / "data")
    yield in_process_broker(store)
    store.close()


def test_the_topics_changed_since_a_version_or_none_after_a_reload_or_too_many(
        broker: Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    async def run() -> None:
        start = broker.catalog_version
        assert broker.catalog_changes_since(start) == set()
        broker.create_topic("a", 1)
        broker.create_topic("b", 2)
        middle = broker.catalog_version
        broker.create_topic("c", 1)
        await broker.durable()
        assert broker.catalog_changes_since(start) == {"a", "b", "c"}
        assert broker.catalog_changes_since(middle) == {"c"}
        assert broker.catalog_changes_since(broker.catalog_version + 1) is None, "a version not reached yet"
        broker.store.reopen()
        assert broker.catalog_changes_since(middle) is None, "a reload may have changed anything"
        assert broker.catalog_changes_since(broker.catalog_version) == set()
        monkeypatch.setattr(broker_catalog, "CATALOG_CHANGES_KEPT", 2)
        since = broker.catalog_version
        for index in range(6):
            broker.create_topic(f"t{index}", 1)
        assert broker.catalog_changes_since(since) is None, "further behind than the changes kept"
        assert broker.catalog_changes_since(broker.catalog_version - 1) == {"t5"}
        await broker.durable()

    asyncio.run(run())
