"""The broker's defaults and bounds of group configs (record locks, lock duration, delivery count limit, session
timeouts, heartbeat intervals) are checked when the broker starts, as Kafka's ShareGroupConfig and GroupConfig do,
and are every group's defaults."""

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
    ({"group.share.record.lock.duration.ms": "10000"},
     "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
    ({"group.share.max.delivery.count.limit": "4"},
     "group.share.max.delivery.count.limit must be greater than or equal to group.share.delivery.count.limit"),
    ({"group.consumer.max.session.timeout.ms": "44000", "group.consumer.min.session.timeout.ms": "40000"},
     "group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.session.timeout.ms"),
    ({"group.share.heartbeat.interval.ms": "4000"},
     "group.share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"),
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


def test_the_brokers_group_defaults_are_every_groups_defaults(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "data")
    try:
        broker = in_process_broker(store, BrokerSettings(overrides={
            "group.share.record.lock.duration.ms": "40000", "group.share.delivery.count.limit": "3",
            "group.share.session.timeout.ms": "50000", "group.share.heartbeat.interval.ms": "7000",
            "group.consumer.session.timeout.ms": "50000"}))
        shares = broker.coordinators.share_groups
        assert (shares.lock_duration_ms("any"), shares.delivery_count_limit("any"), shares.session_timeout_ms("any"),
                shares.heartbeat_interval_ms("any")) == (40000, 3, 50000, 7000)
        assert shares.group_settings("any")["share.record.lock.duration.ms"] == "40000"
        assert broker.coordinators.consumer_groups.session_timeout_ms("any") == 50000
        broker.coordinators.close()
    finally:
        store.close()
