"""A topic key left unset takes its broker synonyms' value in every view of the topic's configs: the one the broker
acts on (`Broker.topic_config`) and the one admission plugins see (`Broker.topic_configs`), after a dynamic
broker change too."""

from __future__ import annotations

import asyncio
from pathlib import Path

from logwright.compat.broker import BrokerSettings
from logwright.core.events.log import ConfigChanged
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker


def test_unset_topic_keys_follow_static_and_dynamic_broker_synonyms(tmp_path: Path) -> None:
    asyncio.run(_follow(tmp_path))


async def _follow(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "store")
    settings = BrokerSettings(overrides={"log.cleanup.policy": "compact", "log.roll.hours": "2"})
    broker = in_process_broker(store, settings)
    try:
        broker.create_topic("t", 1, [("segment.bytes", "2097152")])
        broker.commit_now()
        topic = broker.topic("t")
        assert topic is not None
        seen = broker.topic_configs(topic)
        assert (seen["cleanup.policy"], seen["segment.ms"], seen["segment.bytes"]) == ("compact", "7200000", "2097152")
        assert [broker.topic_config(topic, name) for name in ("cleanup.policy", "segment.ms", "segment.bytes")] == [
            "compact", "7200000", "2097152"]
        broker.stage([ConfigChanged("broker", "", (("log.cleanup.policy", "compact,delete"),
                                                   ("log.segment.bytes", "4194304")))])
        broker.commit_now()
        seen = broker.topic_configs(topic)
        assert (seen["cleanup.policy"], seen["segment.bytes"]) == ("compact,delete", "2097152"), (
            "a broker change reaches the topics; the topic's own override stays first")
        assert broker.topic_config(topic, "cleanup.policy") == "compact,delete"
    finally:
        store.close()
