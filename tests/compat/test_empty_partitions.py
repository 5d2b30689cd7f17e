"""A partition nothing was appended to has no row in the ``partitions`` projection (issue 18: a 5,000-partition
topic's creation folded and wrote 5,000 of them, 30 ms of one turn): the broker reads it as empty, the catalog says
it exists, deleting its topic writes rows only for partitions that held records, and `check` stays consistent, also
over a row an earlier store wrote for an empty partition."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from logwright.compat.appends import stage_batch
from logwright.compat.broker import Broker
from logwright.compat.wire.record_batch import Record, build_batch, parse_header
from logwright.core.clock import ManualClock
from logwright.core.log.catalog import delete_topic
from logwright.core.log.partition_log import PartitionState, empty_partition, partition_key
from logwright.eventstore import keys
from logwright.eventstore.check import check_store
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker
from tests.eventstore import raw


def in_loop(test: Callable[[Path], Coroutine[Any, Any, None]]) -> Callable[[Path], None]:
    """Run the test in an event loop: staging schedules the commit on it."""
    @functools.wraps(test)
    def run(tmp_path: Path) -> None:
        asyncio.run(test(tmp_path))
    return run


def _produce(broker: Broker, partition_id: int, count: int = 3) -> None:
    batch = build_batch([Record(0, 1_000 + index, None, b"v") for index in range(count)])
    stage_batch(broker, partition_id, batch, parse_header(batch), -1)


def _with_topics(tmp_path: Path, **partitions: int) -> tuple[RocksEventStore, Broker]:
    """A store and its broker with these topics created and committed."""
    store = RocksEventStore(tmp_path / "store", clock=ManualClock())
    broker = in_process_broker(store)
    for name, count in partitions.items():
        broker.create_topic(name, count)
    broker.commit_now()
    return store, broker


def _partition_ids(broker: Broker, topic: str) -> tuple[int, ...]:
    state = broker.topic(topic)
    assert state is not None
    return state.partition_ids


@in_loop
async def test_creating_a_topic_writes_no_partition_rows_and_its_partitions_read_as_empty(tmp_path: Path) -> None:
    store = RocksEventStore(tmp_path / "store", clock=ManualClock())
    broker = in_process_broker(store)
    broker.create_topic("t", 1_000)
    assert store.changed_rows <= 2, "the topic's catalog row and the partition id counter, nothing per partition"
    first, *_, last = _partition_ids(broker, "t")
    assert broker.partition_exists(first) and broker.partition_exists(last), "staged: they exist already"
    assert broker.partition(last) == empty_partition(last) == PartitionState(last)
    broker.commit_now()
    assert dict(store.entities("partitions")) == {}
    assert not broker.partition_exists(last + 1)
    assert check_store(store).consistent
    store.close()


@in_loop
async def test_a_partition_gets_its_row_from_its_first_append_and_loses_it_with_its_topic(tmp_path: Path) -> None:
    store, broker = _with_topics(tmp_path, t=4, kept=1)
    ids = _partition_ids(broker, "t")
    _produce(broker, ids[1])
    broker.commit_now()
    assert set(store.entities("partitions")) == {partition_key(ids[1])}
    assert broker.partition(ids[1]).next_offset == 3 and broker.high_watermark(ids[1]) == 3
    topic = broker.topic("t")
    broker.stage([delete_topic(topic, "t")])
    assert not any(broker.partition_exists(partition_id) for partition_id in ids), "gone once the deletion is staged"
    assert store.changed_rows <= 2, "the topic's catalog row and the one partition row that held records"
    broker.commit_now()
    assert dict(store.entities("partitions")) == {}
    assert broker.partition_exists(_partition_ids(broker, "kept")[0])
    assert check_store(store).consistent
    store.close()


@in_loop
async def test_a_restart_knows_the_empty_partitions_from_the_catalog(tmp_path: Path) -> None:
    store, broker = _with_topics(tmp_path, t=3)
    ids = _partition_ids(broker, "t")
    store.close()
    reopened = RocksEventStore(tmp_path / "store", clock=ManualClock())
    again = in_process_broker(reopened)
    assert all(again.partition_exists(partition_id) for partition_id in ids)
    assert [again.partition(partition_id).next_offset for partition_id in ids] == [0, 0, 0]
    _produce(again, ids[2], count=2)
    again.commit_now()
    assert again.partition(ids[2]).next_offset == 2
    reopened.close()


@in_loop
async def test_check_takes_a_row_an_earlier_store_kept_for_an_empty_partition_as_none(tmp_path: Path) -> None:
    """Stores written before kept a row for every partition: such a row equals the empty state and is no
    difference; a row that says anything else still is one."""
    store, broker = _with_topics(tmp_path, t=2)
    ids = _partition_ids(broker, "t")
    types, sequence = store.types, store.last_sequence
    store.close()

    def stored_row(state: PartitionState) -> None:
        raw.put(tmp_path / "store", "state", keys.state_key("partitions", partition_key(state.partition_id)),
                keys.encode_sequence(sequence) + types.encode(state))

    stored_row(empty_partition(ids[0]))
    reopened = RocksEventStore(tmp_path / "store", clock=ManualClock())
    assert check_store(reopened).consistent
    reopened.close()
    stored_row(PartitionState(ids[1], next_offset=5))
    reopened = RocksEventStore(tmp_path / "store", clock=ManualClock())
    report = check_store(reopened)
    assert not report.consistent and any(f"partitions/{ids[1]}" in line for line in report.differences)
    reopened.close()
