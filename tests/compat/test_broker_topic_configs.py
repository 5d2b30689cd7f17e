"""`Broker.topic_configs`: what admission plugins see of a topic's configs, built once per set of overrides."""

from __future__ import annotations

import asyncio
from pathlib import Path

from logwright.core.config.configs import ConfigKey, default_registry
from logwright.core.events.log import ConfigChanged
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker


def test_topic_configs_follow_override_changes_and_newly_registered_keys(tmp_path: Path) -> None:
    asyncio.run(_topic_configs_follow_changes(tmp_path))


async def _topic_configs_follow_changes(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "store")
    registry = default_registry()
    broker = in_process_broker(store, configs=registry)
    try:
        broker.create_topic("t", 1, [("retention.ms", "1000")])
        broker.commit_now()
        topic = broker.topic("t")
        assert topic is not None
        first = broker.topic_configs(topic)
        assert first["retention.ms"] == "1000" and first["cleanup.policy"] == "delete"
        assert broker.topic_configs(topic) is first, "built once"
        broker.stage([ConfigChanged("topic", "t", (("retention.ms", "2000"),))])
        broker.commit_now()
        changed = broker.topic("t")
        assert changed is not None and broker.topic_configs(changed)["retention.ms"] == "2000"
        registry.register(ConfigKey("plugin.key", "topic", "on", lambda value: None, "a plugin's key"))
        assert broker.topic_configs(changed)["plugin.key"] == "on"
    finally:
        store.close()
