"""`Broker.staging_together`: a produce request's appends reach ``logwright_derive_events`` once, together, and
what the plugins derive goes into the same commit, derived from only once (issue 18: a request of 1,000
one-batch partitions asked the plugins 1,000 times)."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path

import pytest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from logwright.compat.coordinators.transaction_coordinator import stage_completion
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import produce
from logwright.compat.registry import RequestContext
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.core.events import DelayedRecordsIndexed, Event, RecordsAppended
from logwright.core.events.transactions import (
    TransactionalProducerInitialized,
    TransactionEnded,
    TransactionMarkerWritten,
)
from logwright.core.log.index_hooks import StagedChange
from logwright.core.transactions.transactions import Completion
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.host import PluginHost
from logwright.plugins.spec import hookimpl

from tests.compat.brokers import in_process_broker

DELAY = (("logwright.deliver.after.ms", b"60000"),)


class Recorder:
    """A third-party deriver: what each call saw."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[type[Event]], list[tuple[str, int, int]]]] = []

    @hookimpl
    def logwright_derive_events(self, staged: StagedChange) -> list[Event] | None:
        self.calls.append(([type(event) for event in staged.events],
                           [(batch.topic, batch.partition_index, batch.record_count) for batch in staged.batches]))
        return None


def _recorded(tmp_path: Path) -> tuple[PluginHost, Recorder, RocksEventStore]:
    """The built-in plugins with a `Recorder` beside them, and a store knowing their projections and events."""
    host = PluginHost.load(installed=False)
    recorder = Recorder()
    host.register(recorder, "recorder", host.plugins()[0].source)
    return host, recorder, RocksEventStore(tmp_path / "store", projections=host.projections(),
                                           types=host.type_registry())


def _request(partitions: int) -> ProduceRequest:
    batches = tuple(
        PartitionProduceData(index=index, records=build_batch([
            Record(0, 1_000, None, b"later", DELAY if index == 1 else ()),
            *(Record(offset, 1_000, None, b"now") for offset in range(1, index + 1)),
        ]))
        for index in range(partitions)
    )
    return ProduceRequest(acks=-1, timeout=datetime.timedelta(seconds=5),
                          topic_data=(TopicProduceData(name="t", partition_data=batches),))


def test_a_request_of_three_partitions_is_derived_from_once_and_committed_with_what_was_derived(
        tmp_path: Path) -> None:
    asyncio.run(_three_partitions(tmp_path))


async def _three_partitions(tmp_path: Path) -> None:
    host, recorder, store = _recorded(tmp_path)
    broker = in_process_broker(store, host=host, configs=host.config_registry())
    commits: list[list[Event]] = []
    store.add_commit_listener(lambda events: commits.append([logged.event for logged in events]))
    try:
        broker.create_topic("t", 3)
        broker.commit_now()
        recorder.calls.clear()
        commits.clear()
        answer = await produce.handle(RequestContext(broker, 0, 9, 1, "tester", 1, "127.0.0.1"), _request(3))
        codes = [partition.error_code for partition in answer.responses[0].partition_responses]
        assert codes == [ErrorCode.NONE] * 3
        assert recorder.calls == [([RecordsAppended] * 3, [("t", 0, 1), ("t", 1, 2), ("t", 2, 3)])], (
            "one call with every partition's append, not one per partition; derived events not derived from again")
        assert len(commits) == 1, "the appends and what was derived from them are one WriteBatch"
        kinds = [type(event) for event in commits[0]]
        assert kinds == [RecordsAppended] * 3 + [DelayedRecordsIndexed], kinds
        indexed = commits[0][3]
        assert isinstance(indexed, DelayedRecordsIndexed)
        assert indexed.partition_id == broker.topic("t").partition_ids[1]  # type: ignore[union-attr]
    finally:
        store.close()


def test_outside_a_request_each_stage_is_derived_from_at_once(tmp_path: Path) -> None:
    host, recorder, store = _recorded(tmp_path)

    async def run() -> None:
        broker = in_process_broker(store, host=host, configs=host.config_registry())
        broker.create_topic("t", 1)
        assert recorder.calls, "a stage outside staging_together asks the plugins before it returns"
        with broker.staging_together():
            broker.create_topic("u", 1)
            calls = len(recorder.calls)
            with broker.staging_together():  # nested: the outer one derives
                broker.create_topic("v", 1)
            assert len(recorder.calls) == calls
        assert len(recorder.calls) == calls + 1
        assert len(recorder.calls[-1][0]) == 2, "the outer block's two stages in one call"

    try:
        asyncio.run(run())
    finally:
        store.close()


class Failing:
    """A deriver with a bug on topic ``bad``."""

    @hookimpl
    def logwright_derive_events(self, staged: StagedChange) -> list[Event] | None:
        if any(batch.topic == "bad" for batch in staged.batches):
            raise RuntimeError("deriver bug")
        return None


def test_a_deriver_failing_after_the_appends_drops_the_turn_and_fails_every_request_in_it(tmp_path: Path) -> None:
    host = PluginHost.load(installed=False)
    host.register(Failing(), "failing", host.plugins()[0].source)
    store = RocksEventStore(tmp_path / "store", projections=host.projections(), types=host.type_registry())

    async def run() -> None:
        broker = in_process_broker(store, host=host, configs=host.config_registry())
        broker.create_topic("good", 1)
        broker.create_topic("bad", 3)
        broker.commit_now()
        context = RequestContext(broker, 0, 9, 1, "tester", 1, "127.0.0.1")
        good = ProduceRequest(acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=(TopicProduceData(
            name="good", partition_data=(PartitionProduceData(index=0, records=build_batch([
                Record(0, 1_000, None, b"v")])),)),))
        bad = ProduceRequest(acks=-1, timeout=datetime.timedelta(seconds=5), topic_data=(TopicProduceData(
            name="bad", partition_data=_request(3).topic_data[0].partition_data),))
        first = asyncio.ensure_future(produce.handle(context, good))
        await asyncio.sleep(0)  # it staged its append and waits for the commit
        with pytest.raises(RuntimeError, match="deriver bug"):
            await produce.handle(context, bad)
        answer = await first
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.KAFKA_STORAGE_ERROR, (
            "the request that staged in the same turn is not answered as written")
        for name, count in (("good", 1), ("bad", 3)):
            topic = broker.topic(name)
            assert topic is not None
            assert [broker.partition(pid).next_offset for pid in topic.partition_ids] == [0] * count
        again = await produce.handle(context, good)
        assert again.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        assert again.responses[0].partition_responses[0].base_offset == 0, "nothing of the dropped turn was kept"

    try:
        asyncio.run(run())
    finally:
        store.close()


def test_a_transaction_ending_on_many_partitions_is_derived_from_once(tmp_path: Path) -> None:
    """The markers of a transaction's end are staged together: asking the plugins for each partition made ending a
    10,000-partition transaction hold the event loop 0.3 s before its commit."""
    host, recorder, store = _recorded(tmp_path)

    async def run() -> None:
        broker = in_process_broker(store, host=host, configs=host.config_registry())
        broker.create_topic("t", 50)
        broker.stage([TransactionalProducerInitialized("tx", 7, 0, 60_000)])
        broker.commit_now()
        recorder.calls.clear()
        ids = broker.topic("t").partition_ids  # type: ignore[union-attr]
        ended = TransactionEnded("tx", 7, 0, True, "client", 0)
        commits: list[list[Event]] = []
        store.add_commit_listener(lambda events: commits.append([logged.event for logged in events]))
        stage_completion(broker, Completion(7, 0, True, tuple(ids), (), ended))
        assert len(recorder.calls) == 1, "one derivation for the whole end"
        assert recorder.calls[0][0] == [RecordsAppended, TransactionMarkerWritten] * 50 + [TransactionEnded]
        broker.commit_now()
        assert len(commits) == 1 and commits[0][-1] == ended
        markers = {store.read_batches(partition_id, 0, 1_000)[0] for partition_id in ids}
        assert len({bytes(batch[8:]) for batch in markers}) == 1, "one marker batch, its base offset patched"

    try:
        asyncio.run(run())
    finally:
        store.close()
