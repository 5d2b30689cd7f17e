"""A pop on a topic of many partitions reads only the partitions with something to hand out: a partition with
nothing in flight is read from its table's head, and passed over while its position is at the high watermark
(a pop assembled and read every partition's table: 16-36 ms a pop of an empty 10,000-partition topic)."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

import pytest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from logwright.compat.broker_commits import EVENTS_STAGED_PER_TURN
from logwright.compat.coordinators.pop_coordinator import pop_coordinator
from logwright.compat.coordinators.pop_reads import PopReader
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import produce
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.core.errors import UnknownTopic
from logwright.core.events import Event
from logwright.core.events.pop import PopCursorCreated
from logwright.core.log.catalog import delete_topic
from logwright.core.pop.inflight import PROJECTION_NAME, pop_key
from logwright.core.pop.pop_commands import PopLimits

from tests.compat.test_share_handlers import Harness, run

PARTITIONS = 2_000
LIMITS = PopLimits(max_messages=8, invisible_time_ms=60_000)


def test_a_pop_reads_only_the_partitions_with_records_or_revivals(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[int] = []
    reading = PopReader.read

    def counted(self: PopReader, state, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.append(state.partition_id)
        return reading(self, state, *args, **kwargs)

    monkeypatch.setattr(PopReader, "read", counted)

    async def scenario(h: Harness) -> None:
        h.broker.create_topic("wide", PARTITIONS)
        topic = h.broker.topic("wide")
        assert topic is not None
        staged: list[list[Event]] = []
        stage = h.broker.stage

        def counted_stage(events: list[Event], *args, **kwargs):  # type: ignore[no-untyped-def]
            staged.append(list(events))
            return stage(events, *args, **kwargs)

        monkeypatch.setattr(h.broker, "stage", counted_stage)
        committed: list[int] = []
        h.broker.store.add_commit_listener(lambda events: committed.append(
            sum(isinstance(logged.event, PopCursorCreated) for logged in events)))
        coordinator = pop_coordinator(h.broker)
        assert await coordinator.pop("g", topic, "c1", LIMITS) == []
        creations = [batch for batch in staged if any(isinstance(event, PopCursorCreated) for event in batch)]
        parts = PARTITIONS // EVENTS_STAGED_PER_TURN
        assert [len(batch) for batch in creations] == [EVENTS_STAGED_PER_TURN] * parts, "a part a turn, every cursor"
        assert [count for count in committed if count] == [PARTITIONS], "in one WriteBatch"
        assert read == [], "no partition has records past its position"

        busy = topic.partition_ids[1_500]
        request = ProduceRequest(acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=(TopicProduceData(
            name="wide", partition_data=(PartitionProduceData(index=1_500, records=build_batch(
                [Record(i, 1_000, None, b"v") for i in range(3)])),)),))
        answer = await h.call(produce.handle, 9, request)
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        popped = await coordinator.pop("g", topic, "c1", LIMITS)
        assert [(message.partition, message.record.offset) for message in popped] == [(1_500, i) for i in range(3)]
        assert read == [busy]

        read.clear()
        assert await coordinator.pop("g", topic, "c1", LIMITS) == []
        assert read == [], "the in-flight partition has nothing due and nothing new"
        h.clock.advance(61_000)
        pop_coordinator(h.broker).tick()
        again = await coordinator.pop("g", topic, "c2", LIMITS)
        assert [(message.partition, message.record.offset) for message in again] == [(1_500, i) for i in range(3)]
        assert read == [busy]

    run(tmp_path, scenario)


def test_a_new_groups_cursors_on_a_wide_topic_are_created_over_turns_once_each(tmp_path: Path) -> None:
    """Two consumers of a new group pop at once: the cursors are created a part a turn, so the second pop finds the
    first's parts under way, and no partition gets two; a partition of a topic deleted meanwhile gets none."""
    async def scenario(h: Harness) -> None:
        h.broker.create_topic("wide", PARTITIONS)
        h.broker.create_topic("gone", PARTITIONS)
        wide, gone = h.broker.topic("wide"), h.broker.topic("gone")
        assert wide is not None and gone is not None
        created: list[PopCursorCreated] = []
        h.broker.store.add_commit_listener(lambda events: created.extend(
            logged.event for logged in events if isinstance(logged.event, PopCursorCreated)))
        coordinator = pop_coordinator(h.broker)
        turns = 0

        async def count_turns() -> None:
            nonlocal turns
            while True:
                await asyncio.sleep(0)
                turns += 1

        counting = asyncio.get_running_loop().create_task(count_turns())
        first = asyncio.get_running_loop().create_task(coordinator.pop("g", wide, "c1", LIMITS))
        second = asyncio.get_running_loop().create_task(coordinator.pop("g", wide, "c2", LIMITS))
        assert await first == [] and await second == []
        assert turns >= PARTITIONS // EVENTS_STAGED_PER_TURN, "the creation gave way between its parts"
        assert sorted(event.partition_id for event in created) == sorted(wide.partition_ids), "one each"

        created.clear()
        popping = asyncio.get_running_loop().create_task(coordinator.pop("g", gone, "c1", LIMITS))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        h.broker.stage([delete_topic(gone, "gone")])
        await h.broker.durable()
        with pytest.raises(UnknownTopic):
            await popping
        assert 0 < len(created) < PARTITIONS and all(event.topic == "gone" for event in created)
        assert not any(h.broker.store.state(PROJECTION_NAME, pop_key("g", pid)) for pid in gone.partition_ids), (
            "what was created before the deletion went with it; nothing after")
        counting.cancel()

    run(tmp_path, scenario)
