"""A secondary instance beside a writing primary (what Spark reads through), and per-projection state scans."""

from __future__ import annotations

from pathlib import Path

import pytest
from logwright.core.events import OffsetCommitted
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import ReadOnlyStore

from .support import new_topic, produce


def test_a_secondary_sees_committed_events_at_open_and_more_after_catch_up(tmp_path: Path) -> None:
    primary = RocksEventStore(tmp_path / "data")
    try:
        new_topic(primary, "t", 2)
        produce(primary, 0, record_count=3)
        primary.commit()
        secondary = RocksEventStore(tmp_path / "data", secondary=tmp_path / "secondary", load_state=False,
                                    projections=())
        try:
            assert secondary.read_only
            assert [e.sequence for e in secondary.read_events()] == [1, 2]
            primary.append([OffsetCommitted("g", "t", 0, 3)])
            primary.commit()
            assert secondary.last_sequence == 2
            assert secondary.catch_up() == 3
            assert type(list(secondary.read_events(3))[0].event) is OffsetCommitted
            with pytest.raises(ReadOnlyStore):
                secondary.append([OffsetCommitted("g", "t", 0, 4)])
        finally:
            secondary.close()
    finally:
        primary.close()


def test_catch_up_is_refused_by_a_store_that_is_not_a_secondary(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "data")
    try:
        with pytest.raises(ReadOnlyStore, match="secondary"):
            store.catch_up()
    finally:
        store.close()


def test_stored_states_of_one_projection_are_exactly_its_rows(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "data")
    try:
        new_topic(store, "t", 3)
        for partition_id in range(3):
            produce(store, partition_id)  # an empty partition has no row
        store.append([OffsetCommitted("g", "t", 0, 3)])
        store.commit()
        every = list(store.stored_states())
        for name in {row[0] for row in every}:
            assert list(store.stored_states(name)) == [row for row in every if row[0] == name]
        assert [row[1] for row in store.stored_states("partitions")] == ["0", "1", "2"]
        assert list(store.stored_states("partition")) == []
    finally:
        store.close()
