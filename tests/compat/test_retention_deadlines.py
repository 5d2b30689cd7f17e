"""When retention looks at a partition: one holding records is scanned when its topic is tracked (created, its
limits changed, the broker started); an empty one is not, and gets its deadline from its first append.

In-process broker on a manual clock over a real RocksEventStore (`test_group_handlers.Harness`); nothing sleeps.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from logwright.compat.kafka import incremental_alter_configs, produce
from logwright.compat.wire.record_batch import Record, build_batch
from logwright.core.clock import ManualClock

from tests.compat.test_group_handlers import Harness

RETENTION_MS = 60_000
CHECK_INTERVAL_MS = 300_000  # Kafka's log.retention.check.interval.ms default


async def produce_to(harness: Harness, partition: int, timestamp: int) -> None:
    request = ProduceRequest(transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=(
        TopicProduceData(name="t", partition_data=(PartitionProduceData(
            index=partition, records=build_batch([Record(0, timestamp, b"k", b"v")])),)),))
    answer = await harness.call(produce.handle, 9, request)
    assert answer.responses[0].partition_responses[0].error_code == 0


def scanned_partitions(harness: Harness) -> list[int]:
    """The partition ids whose stored batches are read from now on (a retention scan reads them from the start)."""
    scanned: list[int] = []
    store = harness.broker.store
    scan_batches = store.scan_batches

    def counting(partition_id: int, *args: Any, **kwargs: Any) -> Any:
        scanned.append(partition_id)
        return scan_batches(partition_id, *args, **kwargs)

    store.scan_batches = counting  # type: ignore[method-assign]
    return scanned


Scenario = Callable[[Harness, Any, list[int], ManualClock], Awaitable[None]]
"""(harness, its log retention coordinator, the partitions scanned from now on, the manual clock)"""


def run(tmp_path: Path, scenario: Scenario) -> None:
    """``scenario`` on an in-process broker whose manual clock starts at 1,000,000 ms, closed afterwards."""
    clock = ManualClock(1_000_000)

    async def main() -> None:
        harness = Harness(tmp_path, clock)
        try:
            await scenario(harness, harness.broker.coordinators.log_retention, scanned_partitions(harness), clock)
        finally:
            harness.close()

    asyncio.run(main())


def expected_deadline(clock: ManualClock) -> int:
    """The newest record expires after retention.ms, but no segment goes before the check interval."""
    return clock.now_ms() + max(RETENTION_MS + 1, CHECK_INTERVAL_MS)


def test_a_new_topics_empty_partitions_are_not_scanned_and_the_first_append_sets_a_deadline(tmp_path: Path) -> None:
    async def scenario(harness: Harness, retention: Any, scanned: list[int], clock: ManualClock) -> None:
        harness.broker.create_topic("t", 1_000, (("retention.ms", str(RETENTION_MS)),))
        await harness.broker.durable()
        await harness.advance(0)  # runs every deadline due now
        assert scanned == []
        assert retention.next_deadline() is None  # nothing due: every partition is empty
        await produce_to(harness, 7, clock.now_ms())
        assert retention.next_deadline() == expected_deadline(clock)

    run(tmp_path, scenario)


def test_a_partition_holding_records_is_scanned_when_its_limits_change(tmp_path: Path) -> None:
    async def scenario(harness: Harness, retention: Any, scanned: list[int], clock: ManualClock) -> None:
        broker = harness.broker
        broker.create_topic("t", 2, (("retention.ms", "-1"),))
        await broker.durable()
        await produce_to(harness, 1, clock.now_ms())
        assert retention.next_deadline() is None  # unlimited: nothing to look at
        altered = await harness.call(incremental_alter_configs.handle, 1, IncrementalAlterConfigsRequest(
            validate_only=False, resources=(AlterConfigsResource(resource_type=2, resource_name="t", configs=(
                AlterableConfig(name="retention.ms", config_operation=0, value=str(RETENTION_MS)),)),)))
        assert altered.responses[0].error_code == 0
        await harness.advance(0)
        topic = broker.topic("t")
        assert topic is not None
        assert scanned == [topic.partition_ids[1]]  # the one holding a record; the empty one is not read
        # the append found no limit and set no deadline: this one is the scan's, of the partition holding records
        assert retention.next_deadline() == expected_deadline(clock)

    run(tmp_path, scenario)


def test_a_partition_appended_to_in_the_commit_that_created_its_topic_is_scanned(tmp_path: Path) -> None:
    """A topic created and written in one commit (a produce auto-creating it): its other partitions are not looked
    at (nothing can be in them yet), the one written is scanned and gets its deadline from it."""
    async def scenario(harness: Harness, retention: Any, scanned: list[int], clock: ManualClock) -> None:
        broker = harness.broker
        broker.create_topic("t", 1_000, (("retention.ms", str(RETENTION_MS)),))  # staged, not yet committed
        await produce_to(harness, 3, clock.now_ms())  # the same commit
        await harness.advance(0)
        topic = broker.topic("t")
        assert topic is not None
        assert scanned == [topic.partition_ids[3]]
        assert retention.next_deadline() == expected_deadline(clock)

    run(tmp_path, scenario)
