"""The broker's record lock settings are checked when the broker starts, as Kafka's ShareGroupConfig does."""

from __future__ import annotations

from pathlib import Path

import pytest
from logwright.compat.broker import BrokerSettings
from logwright.core.errors import InvalidConfig
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker


@pytest.mark.parametrize(("overrides", "message"), [
    ({"group.share.partition.max.record.locks": "5000"},
     "group.share.max.partition.max.record.locks must be greater than or equal to "
     "group.share.partition.max.record.locks"),
    ({"group.share.min.partition.max.record.locks": "1500", "group.share.partition.max.record.locks": "1000"},
     "group.share.partition.max.record.locks must be greater than or equal to "
     "group.share.min.partition.max.record.locks"),
    ({"group.share.partition.max.record.locks": "99"}, "must be between 100 and 10000"),
    ({"group.share.max.partition.max.record.locks": "lots"}, "must be an integer"),
])
def test_settings_kafka_refuses_stop_the_broker_from_starting(tmp_path: Path, overrides: dict[str, str],
                                                              message: str) -> None:
    store = RocksEventStore(tmp_path / "data")
    try:
        with pytest.raises(InvalidConfig, match=message):
            in_process_broker(store, BrokerSettings(overrides=overrides))
    finally:
        store.close()


def test_a_broker_limit_within_its_bounds_is_the_default_of_every_group(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "data")
    try:
        broker = in_process_broker(store, BrokerSettings(overrides={
            "group.share.partition.max.record.locks": "6000", "group.share.max.partition.max.record.locks": "8000"}))
        assert broker.coordinators.share_groups.record_lock_limit("any") == 6000
        broker.coordinators.close()
    finally:
        store.close()
