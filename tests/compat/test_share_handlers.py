"""Share group handlers over a real RocksEventStore on a manual clock: kio requests in, kio responses out."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.share_acknowledge.v1.request import AcknowledgementBatch as AckBatchV1
from kio.schema.share_acknowledge.v1.request import AcknowledgePartition, AcknowledgeTopic, ShareAcknowledgeRequest
from kio.schema.share_acknowledge.v2.request import AcknowledgementBatch as AckBatchV2
from kio.schema.share_acknowledge.v2.request import AcknowledgePartition as AcknowledgePartitionV2
from kio.schema.share_acknowledge.v2.request import AcknowledgeTopic as AcknowledgeTopicV2
from kio.schema.share_acknowledge.v2.request import ShareAcknowledgeRequest as ShareAcknowledgeRequestV2
from kio.schema.share_fetch.v1 import request as share_fetch_v1
from kio.schema.share_fetch.v2 import request as share_fetch_v2
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.share_group_heartbeat.v1.request import ShareGroupHeartbeatRequest
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.extensions import acknowledge_batch, clock_control
from logwright.compat.kafka import (
    delete_groups,
    produce,
    share_acknowledge,
    share_fetch,
    share_group_describe,
    share_group_heartbeat,
)
from logwright.compat.registry import RequestContext, make
from logwright.compat.turns import TURNS_GIVEN_WAY
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.core.clock import ManualClock
from logwright.core.cursors.cursor import CursorState, cursor_key
from logwright.core.events import ConfigChanged
from logwright.core.share_groups.share_groups import ConsumerOptions
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import PluginHost

from tests.compat.brokers import ProjectionReads, StateLookups, in_process_broker

GROUP, TOPIC = "g", "orders"


class Harness:
    def __init__(self, path: Path, host: PluginHost | None = None, now_ms: int | None = None) -> None:
        """A broker over ``path`` deciding with ``host`` (the built-in plugins by default), its manual clock
        at ``now_ms`` (`ManualClock`'s default start if not given)."""
        host = host or PluginHost.load(installed=False)
        self.store = RocksEventStore(path, projections=host.projections(), types=host.type_registry())
        self.clock = ManualClock() if now_ms is None else ManualClock(now_ms)
        self.broker = in_process_broker(self.store, clock=self.clock, host=host, configs=host.config_registry())
        self.correlation = 0

    async def call(self, handle: Callable[[RequestContext, Any], Awaitable[Any]], version: int, request: Any) -> Any:
        self.correlation += 1
        context = RequestContext(self.broker, 0, version, self.correlation, "tester", 1, "127.0.0.1")
        return await handle(context, request)

    async def produce(self, count: int) -> uuid.UUID:
        return await self.produce_records(*(Record(i, 1_000, None, f"v{i}".encode()) for i in range(count)))

    async def produce_records(self, *records: Record) -> uuid.UUID:
        """Append ``records`` as one batch to partition 0 of TOPIC (created on first use); its topic id."""
        if self.broker.topic(TOPIC) is None:
            self.broker.create_topic(TOPIC, 1)
        request = ProduceRequest(acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=(
            TopicProduceData(name=TOPIC, partition_data=(PartitionProduceData(index=0, records=build_batch(records)),)),
        ))
        answer = await self.call(produce.handle, 9, request)
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        topic = self.broker.topic(TOPIC)
        assert topic is not None
        return uuid.UUID(bytes=topic.topic_id)

    def start_at_earliest(self) -> None:
        self.broker.stage([ConfigChanged("group", GROUP, (("share.auto.offset.reset", "earliest"),))])

    async def join(self, member: str) -> Any:
        request = ShareGroupHeartbeatRequest(group_id=GROUP, member_id=member, member_epoch=0, rack_id=None,
                                             subscribed_topic_names=(TOPIC,))
        return await self.call(share_group_heartbeat.handle, 1, request)

    async def fetch(self, member: str, epoch: int, topic_id: uuid.UUID,
                    acks: tuple[tuple[int, int, int], ...] = (), max_records: int = 100,
                    record_limit: bool = False) -> Any:
        """ShareFetch v1 (batch-optimized), or v2 in record-limit mode: never more than ``max_records``."""
        module = share_fetch_v2 if record_limit else share_fetch_v1
        partition = make(module.FetchPartition, partition_index=0, acknowledgement_batches=tuple(
            make(module.AcknowledgementBatch, first_offset=first, last_offset=last, acknowledge_types=(kind,))
            for first, last, kind in acks))
        request = make(module.ShareFetchRequest, group_id=GROUP, member_id=member, share_session_epoch=epoch,
                       max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=2**31 - 1, max_records=max_records,
                       batch_size=max_records, share_acquire_mode=1, is_renew_ack=False, forgotten_topics_data=(),
                       topics=(make(module.FetchTopic, topic_id=topic_id, partitions=(partition,)),))
        return await self.call(share_fetch.handle, 2 if record_limit else 1, request)


def run(tmp_path: Path, scenario: Callable[[Harness], Awaitable[None]], host: PluginHost | None = None,
        now_ms: int | None = None) -> Harness:
    """Run ``scenario`` on a broker over ``tmp_path / "data"`` (see `Harness` for the rest); the closed harness."""
    harness = Harness(tmp_path / "data", host, now_ms)

    async def main() -> None:
        try:
            await scenario(harness)
        finally:
            harness.broker.coordinators.close()

    try:
        asyncio.run(main())
    finally:
        harness.broker.commit_now()
        harness.store.close()
    return harness


class WalkCounted(dict[Any, Any]):
    """A coordinator table whose whole walks are counted."""

    walks = 0

    def __iter__(self) -> Any:
        self.walks += 1
        return super().__iter__()

    def items(self) -> Any:
        self.walks += 1
        return super().items()

    def values(self) -> Any:
        self.walks += 1
        return super().values()


def acquired(response: Any) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count)
            for topic in response.responses for p in topic.partitions for r in p.acquired_records]


def test_heartbeat_join_assignment_fencing_describe_and_leave(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(1)
        joined = await h.join("m1")
        assert joined.error_code == ErrorCode.NONE and joined.member_epoch > 0
        assert [(tp.topic_id, tp.partitions) for tp in joined.assignment.topic_partitions] == [(topic_id, (0,))]
        steady = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
            group_id=GROUP, member_id="m1", member_epoch=joined.member_epoch, rack_id=None,
            subscribed_topic_names=None))
        assert steady.error_code == ErrorCode.NONE and steady.assignment is None
        fenced = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
            group_id=GROUP, member_id="m1", member_epoch=joined.member_epoch + 5, rack_id=None,
            subscribed_topic_names=None))
        assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH and fenced.error_message
        described = await h.call(share_group_describe.handle, 1, ShareGroupDescribeRequest(
            group_ids=(GROUP, "nope"), include_authorized_operations=False))
        group, missing = described.groups
        assert group.group_state == "Stable" and [m.member_id for m in group.members] == ["m1"]
        assert group.members[0].assignment.topic_partitions[0].topic_name == TOPIC
        assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        left = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
            group_id=GROUP, member_id="m1", member_epoch=-1, rack_id=None, subscribed_topic_names=None))
        assert left.error_code == ErrorCode.NONE and left.member_epoch == -1

    run(tmp_path, scenario)


def test_share_session_errors_are_kafkas(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(3)
        await h.join("m1")
        assert (await h.fetch("m1", 4, topic_id)).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert (await h.fetch("m1", 0, topic_id, acks=((0, 0, 1),))).error_code == ErrorCode.INVALID_REQUEST
        opened = await h.fetch("m1", 0, topic_id)
        assert opened.error_code == ErrorCode.NONE and acquired(opened) == []  # latest: nothing before the join
        assert (await h.fetch("m1", 2, topic_id)).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert (await h.fetch("m1", 1, topic_id)).error_code == ErrorCode.NONE

    run(tmp_path, scenario)


def test_fetch_acquire_ack_release_and_lock_expiry(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(4)
        h.start_at_earliest()
        await h.join("m1")
        await h.join("m2")
        first = await h.fetch("m1", 0, topic_id, max_records=3, record_limit=True)
        assert acquired(first) == [(0, 2, 1)] and first.responses[0].partitions[0].records
        other = await h.fetch("m2", 0, topic_id)
        assert acquired(other) == [(3, 3, 1)]
        # m1 accepts 0, releases 1 and names 3, which m2 holds: that partition's acks are refused whole.
        refused = await h.fetch("m1", 1, topic_id, acks=((0, 0, 1), (1, 1, 2), (3, 3, 1)), max_records=0)
        assert refused.responses[0].partitions[0].acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE
        done = await h.fetch("m1", 2, topic_id, acks=((0, 0, 1), (1, 1, 2)))
        part = done.responses[0].partitions[0]
        assert part.acknowledge_error_code == ErrorCode.NONE and acquired(done) == [(1, 1, 2)]
        # Nothing else is free until the locks run out; then m2 gets m1's records 1 (third delivery) and 2, and
        # its own 3 back.
        assert acquired(await h.fetch("m2", 1, topic_id)) == []
        lock_ms = int(h.broker.configs.get("group", "share.record.lock.duration.ms").default)  # type: ignore[union-attr]
        h.clock.advance(lock_ms)
        expired = await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        assert int.from_bytes(expired[:2], "big") == 0
        assert acquired(await h.fetch("m2", 2, topic_id)) == [(1, 1, 3), (2, 3, 2)]

    run(tmp_path, scenario)


def test_share_acknowledge_v1_refuses_renew_and_v2_extends_the_lock(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(2)
        h.start_at_earliest()
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 1, 1)]
        v1 = await h.call(share_acknowledge.handle, 1, ShareAcknowledgeRequest(
            group_id=GROUP, member_id="m1", share_session_epoch=1, topics=(AcknowledgeTopic(
                topic_id=topic_id, partitions=(AcknowledgePartition(partition_index=0, acknowledgement_batches=(
                    AckBatchV1(first_offset=0, last_offset=1, acknowledge_types=(4,)),)),)),)))
        assert v1.responses[0].partitions[0].error_code == ErrorCode.INVALID_REQUEST
        h.clock.advance(20_000)
        v2 = await h.call(share_acknowledge.handle, 2, ShareAcknowledgeRequestV2(
            group_id=GROUP, member_id="m1", share_session_epoch=2, is_renew_ack=True, topics=(AcknowledgeTopicV2(
                topic_id=topic_id, partitions=(AcknowledgePartitionV2(partition_index=0, acknowledgement_batches=(
                    AckBatchV2(first_offset=0, last_offset=1, acknowledge_types=(4,)),)),)),)))
        assert v2.error_code == ErrorCode.NONE and v2.responses[0].partitions[0].error_code == ErrorCode.NONE
        h.clock.advance(20_000)  # 40 s after the acquisition, 20 s after the renewal: still locked
        await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        await h.join("m2")
        assert acquired(await h.fetch("m2", 0, topic_id)) == []

    run(tmp_path, scenario)


def test_a_silent_member_times_out_on_the_broker_clock_and_its_records_go_back(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(2)
        h.start_at_earliest()
        joined = await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 1, 1)]
        other = await h.join("m2")
        h.clock.advance(30_000)  # m2 heartbeats in time, m1 does not
        alive = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
            group_id=GROUP, member_id="m2", member_epoch=other.member_epoch, rack_id=None,
            subscribed_topic_names=None))
        assert alive.error_code == ErrorCode.NONE
        h.clock.advance(15_000)
        await h.call(clock_control.handle, 0, (0).to_bytes(8, "big"))
        gone = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
            group_id=GROUP, member_id="m1", member_epoch=joined.member_epoch, rack_id=None,
            subscribed_topic_names=None))
        assert gone.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        # The timeout counts as a failed delivery: the records come back with their second delivery.
        assert acquired(await h.fetch("m2", 0, topic_id)) == [(0, 1, 2)]

    run(tmp_path, scenario)


def test_the_delivery_count_limit_archives_a_record(tmp_path: Path) -> None:
    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(1)
        h.broker.stage([ConfigChanged("group", GROUP, (("share.auto.offset.reset", "earliest"),
                                                        ("share.delivery.count.limit", "2")))])
        await h.join("m1")
        assert acquired(await h.fetch("m1", 0, topic_id)) == [(0, 0, 1)]
        assert acquired(await h.fetch("m1", 1, topic_id, acks=((0, 0, 2),))) == [(0, 0, 2)]
        released = await h.fetch("m1", 2, topic_id, acks=((0, 0, 2),))
        assert released.responses[0].partitions[0].acknowledge_error_code == ErrorCode.NONE
        assert acquired(released) == []  # the second release reached the limit: archived, never again

    run(tmp_path, scenario)


def test_deleting_many_share_groups_reads_the_cursors_once(tmp_path: Path) -> None:
    """Each empty share group named goes with its cursors; the cursors are read in one pass for the request (a pass
    per group deleted grew with the groups named times every cursor of the broker)."""
    groups = [f"share-{n}" for n in range(5)]

    async def scenario(h: Harness) -> None:
        topic_id = await h.produce(3)
        for group in groups:
            h.broker.stage([ConfigChanged("group", group, (("share.auto.offset.reset", "earliest"),))])
            joined = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
                group_id=group, member_id="m", member_epoch=0, rack_id=None, subscribed_topic_names=(TOPIC,)))
            fetched = await h.call(share_fetch.handle, 1, make(
                share_fetch_v1.ShareFetchRequest, group_id=group, member_id="m", share_session_epoch=0,
                max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=2**31 - 1, max_records=10, batch_size=10,
                share_acquire_mode=1, is_renew_ack=False, forgotten_topics_data=(), topics=(make(
                    share_fetch_v1.FetchTopic, topic_id=topic_id, partitions=(make(
                        share_fetch_v1.FetchPartition, partition_index=0, acknowledgement_batches=()),)),)))
            assert acquired(fetched) == [(0, 2, 1)]
            left = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
                group_id=group, member_id="m", member_epoch=-1, rack_id=None, subscribed_topic_names=None))
            assert joined.error_code == left.error_code == ErrorCode.NONE
        subscriptions = {state.subscription for state in h.store.entities("cursors").values()}
        assert set(groups) <= subscriptions
        coordinator = share_coordinator(h.broker)
        for number in range(100):  # options any client may set (LogwrightConsumerOptions), for other groups too
            coordinator.consumer_options[(f"other-{number}", "m")] = ConsumerOptions()
        coordinator.consumer_options[(groups[1], "m")] = ConsumerOptions()
        options = WalkCounted(coordinator.consumer_options)
        coordinator.consumer_options = options
        with ProjectionReads(h.store, "cursors") as reads:
            answer = await h.call(delete_groups.handle, 2, DeleteGroupsRequest(groups_names=(*groups, "no-such-group")))
        assert [result.error_code for result in answer.results] == [ErrorCode.NONE] * 5 + [
            ErrorCode.GROUP_ID_NOT_FOUND]
        assert reads.count == 1
        assert options.walks == 1, "the consumer options read once for the request, not once per group"
        assert (groups[1], "m") not in options and len(options) == 100
        assert not set(groups) & {state.subscription for state in h.store.entities("cursors").values()}

    run(tmp_path, scenario)


def test_a_round_over_many_partitions_notes_where_it_stopped_once(tmp_path: Path) -> None:
    """A round noted each partition it acquired from, and each note searched the session's partitions: quadratic
    in a big topic. The next round still starts after the last partition served."""
    async def scenario(h: Harness) -> None:
        h.broker.create_topic("many", 50)
        h.broker.stage([ConfigChanged("group", GROUP, (("share.auto.offset.reset", "earliest"),))])
        for index in range(50):
            data = PartitionProduceData(index=index, records=build_batch([Record(0, 1_000, None, b"v")]))
            answer = await h.call(produce.handle, 9, ProduceRequest(
                acks=-1, timeout=datetime.timedelta(seconds=5),
                topic_data=(TopicProduceData(name="many", partition_data=(data,)),)))
            assert answer.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        topic = h.broker.topic("many")
        assert topic is not None
        joined = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
            group_id=GROUP, member_id="m1", member_epoch=0, rack_id=None, subscribed_topic_names=("many",)))
        assert joined.error_code == ErrorCode.NONE
        coordinator = share_coordinator(h.broker)
        notes: list[Any] = []
        served = coordinator.served
        coordinator.served = lambda group, member, ref: (notes.append(ref), served(group, member, ref))[1]
        request = make(share_fetch_v1.ShareFetchRequest, group_id=GROUP, member_id="m1", share_session_epoch=0,
                       max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=2**31 - 1, max_records=40,
                       batch_size=40, share_acquire_mode=1, is_renew_ack=False, forgotten_topics_data=(),
                       topics=(make(share_fetch_v1.FetchTopic, topic_id=uuid.UUID(bytes=topic.topic_id),
                                    partitions=tuple(make(share_fetch_v1.FetchPartition, partition_index=index,
                                                          acknowledgement_batches=()) for index in range(50))),))
        fetched = await h.call(share_fetch.handle, 1, request)
        assert len(acquired(fetched)) == 40, "the record budget stops the round at the 40th partition"
        assert len(notes) == 1 and notes[0] == (topic.topic_id, 39)
        session = coordinator.sessions[(GROUP, "m1")]
        assert session.next_start == 40

    run(tmp_path, scenario)


def test_an_acknowledge_batch_of_many_entries_lets_other_requests_run(tmp_path: Path) -> None:
    """LogwrightAcknowledgeBatch takes up to 100,000 partition entries, each a whole acknowledgement: it gives way
    every `ACKS_PER_TURN` of them instead of holding every client for seconds."""
    async def scenario(h: Harness) -> None:
        await h.produce(3)
        joined = await h.join("m1")
        entries = [{"topic": TOPIC, "partition": 0, "ranges": [[0, 0]]}] * (2 * acknowledge_batch.ACKS_PER_TURN + 50)
        context = RequestContext(h.broker, 32004, 0, 1, "tester", 1, "127.0.0.1")
        acknowledging = asyncio.get_running_loop().create_task(acknowledge_batch.handle(
            context, {"group_id": GROUP, "member_id": joined.member_id, "acks": entries}))
        turns = 0
        while not acknowledging.done():
            await asyncio.sleep(0)
            turns += 1
        results = acknowledging.result()["results"]
        assert len(results) == len(entries)
        assert {result["error_code"] for result in results} == {ErrorCode.INVALID_RECORD_STATE}, "none acquired"
        assert turns >= 2 * TURNS_GIVEN_WAY, turns

    run(tmp_path, scenario)


async def _locked_on_many(h: Harness, groups: dict[str, int]) -> Any:
    """A topic "many" of 60 one-record partitions, and in each of ``groups`` a member m1 holding the records of
    that many partitions (from the first); the topic's state."""
    h.broker.create_topic("many", 60)
    for index in range(60):
        data = PartitionProduceData(index=index, records=build_batch([Record(0, 1_000, None, b"v")]))
        await h.call(produce.handle, 9, ProduceRequest(acks=-1, timeout=datetime.timedelta(seconds=5),
                                                       topic_data=(TopicProduceData(name="many",
                                                                                    partition_data=(data,)),)))
    topic = h.broker.topic("many")
    assert topic is not None
    for group, count in groups.items():
        joined = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
            group_id=group, member_id="m1", member_epoch=0, rack_id=None, subscribed_topic_names=("many",)))
        assert joined.error_code == ErrorCode.NONE
        fetched = await h.call(share_fetch.handle, 1, make(
            share_fetch_v1.ShareFetchRequest, group_id=group, member_id="m1", share_session_epoch=0,
            max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=2**31 - 1, max_records=100, batch_size=100,
            share_acquire_mode=1, is_renew_ack=False, forgotten_topics_data=(),
            topics=(make(share_fetch_v1.FetchTopic, topic_id=uuid.UUID(bytes=topic.topic_id),
                         partitions=tuple(make(share_fetch_v1.FetchPartition, partition_index=index,
                                               acknowledgement_batches=()) for index in range(count))),)))
        assert len(acquired(fetched)) == count
    return topic


def test_a_member_leaving_reads_its_own_groups_locked_cursors_only(tmp_path: Path) -> None:
    """Releasing a leaver's records went over every locked cursor of every share group, reading each: a join or
    leave cost the whole broker's in-flight cursors. The leave keeps them held while the member's share session
    is open (its closing request may still acknowledge them, as on Kafka); the closing request releases them."""
    async def scenario(h: Harness) -> None:
        for group in ("busy", GROUP):
            h.broker.stage([ConfigChanged("group", group, (("share.auto.offset.reset", "earliest"),))])
        topic = await _locked_on_many(h, {"busy": 60, GROUP: 2})

        def held() -> list[bool]:
            states = [h.store.state("cursors", cursor_key(GROUP, topic.partition_ids[index])) for index in range(2)]
            return [isinstance(state, CursorState) and bool(state.in_flight) for state in states]

        with StateLookups(h.store, "cursors") as lookups:
            left = await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
                group_id=GROUP, member_id="m1", member_epoch=-1, rack_id=None, subscribed_topic_names=None))
            assert left.error_code == ErrorCode.NONE
            assert held() == [True, True], "its session is open: the closing request may acknowledge them"
            closed = await h.call(share_acknowledge.handle, 1, ShareAcknowledgeRequest(
                group_id=GROUP, member_id="m1", share_session_epoch=-1, topics=()))
        assert closed.error_code == ErrorCode.NONE
        assert lookups.count < 20, f"{lookups.count} cursor reads for a leaver holding 2 of 62 locked cursors"
        assert held() == [False, False]

    run(tmp_path, scenario)


def test_a_lock_timer_pass_reads_only_the_cursors_whose_locks_ran_out(tmp_path: Path) -> None:
    """The share timer passes at each lock deadline, and each pass walked every locked cursor of the broker: with
    thousands of cursors in flight, deadlines spread over the lock duration made that quadratic. Now a heap of the
    deadlines hands a pass only the cursors that are due."""
    async def scenario(h: Harness) -> None:
        h.broker.stage([ConfigChanged("group", "slow", (("share.auto.offset.reset", "earliest"),
                                                        ("share.record.lock.duration.ms", "60000")))])
        h.broker.stage([ConfigChanged("group", GROUP, (("share.auto.offset.reset", "earliest"),))])
        topic = await _locked_on_many(h, {"slow": 60, GROUP: 2})
        coordinator = share_coordinator(h.broker)
        for _ in range(2):  # heartbeats keep both members in; only the 30-second locks run out
            h.clock.advance(15_000)
            for group in ("slow", GROUP):
                await h.call(share_group_heartbeat.handle, 1, ShareGroupHeartbeatRequest(
                    group_id=group, member_id="m1", member_epoch=1, rack_id=None, subscribed_topic_names=None))
        locks = WalkCounted(coordinator._locks)
        coordinator._locks = locks
        assert coordinator.next_deadline() == h.clock.now_ms()
        with StateLookups(h.store, "cursors") as lookups:
            events = coordinator.tick()
        assert events, "the two short locks ran out"
        assert lookups.count < 20, f"{lookups.count} cursor reads for 2 due of 62 locked cursors"
        assert locks.walks == 0, "neither the deadline nor the pass walked every locked cursor"
        released = [h.store.state("cursors", cursor_key(GROUP, topic.partition_ids[index])) for index in range(2)]
        assert all(isinstance(state, CursorState) and not state.in_flight for state in released)
        slow = h.store.state("cursors", cursor_key("slow", topic.partition_ids[5]))
        assert isinstance(slow, CursorState) and slow.in_flight, "the longer locks still held"

    run(tmp_path, scenario)


def test_the_broker_holds_at_most_its_share_session_limit_once_sessions_of_non_members_go(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any client could open sessions for made-up member ids, each kept for good. As Kafka, the broker holds at most
    ``group.share.max.share.sessions`` (SHARE_SESSION_LIMIT_REACHED past it); at the limit the sessions of ids that
    are not live members go first."""
    async def scenario(h: Harness) -> None:
        configured = h.broker.broker_config
        monkeypatch.setattr(h.broker, "broker_config",
                            lambda name: "2" if name == "group.share.max.share.sessions" else configured(name))
        topic_id = await h.produce(1)
        first = (await h.join("m1")).member_id
        assert (await h.fetch(first, 0, topic_id)).error_code == ErrorCode.NONE
        assert (await h.fetch("ghost-1", 0, topic_id)).error_code == ErrorCode.NONE
        assert (await h.fetch("ghost-2", 0, topic_id)).error_code == ErrorCode.NONE, "ghost-1's session went"
        second = (await h.join("m2")).member_id
        assert (await h.fetch(second, 0, topic_id)).error_code == ErrorCode.NONE, "ghost-2's session went"
        refused = await h.fetch("ghost-3", 0, topic_id)
        assert refused.error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED
        assert (await h.fetch(first, 1, topic_id)).error_code == ErrorCode.NONE, "the members' sessions go on"
        assert (await h.fetch(second, 1, topic_id)).error_code == ErrorCode.NONE

    run(tmp_path, scenario)
