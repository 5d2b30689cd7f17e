"""A transaction over many partitions ends over several turns, in one WriteBatch (issue 18's hostile-input work).

Staging a marker costs about 25 us, so ending a 10,000-partition transaction in one stretch held every client 0.25 s.
Past `MARKERS_PER_TURN` partitions the end (EndTxn, the abort by InitProducerId of a new instance, the abort of a
timed-out transaction) is staged a part at a time. Meanwhile nothing may join the transaction: its requests are
answered CONCURRENT_TRANSACTIONS and its producer's transactional batches are refused. Real RocksDB, no sockets.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.delete_records.v2.request import DeleteRecordsPartition, DeleteRecordsRequest, DeleteRecordsTopic
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from logwright.compat.broker import Broker
from logwright.compat.coordinators.transaction_coordinator import MARKERS_PER_TURN, transaction_timer
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    delete_records,
    end_txn,
    init_producer_id,
    produce,
)
from logwright.compat.kafka.fetch import last_stable_offset
from logwright.compat.registry import RequestContext
from logwright.compat.turns import TURNS_GIVEN_WAY
from logwright.compat.wire.record_batch import Record, build_batch
from logwright.core.clock import ManualClock
from logwright.core.events import Event
from logwright.core.events.transactions import TransactionEnded, TransactionMarkerWritten
from logwright.core.transactions.transactions import COMPLETE_ABORT, COMPLETE_COMMIT, ONGOING, TransactionState
from logwright.eventstore.rocksdb import RocksEventStore

from tests.compat.brokers import in_process_broker

PARTITIONS = 2 * MARKERS_PER_TURN + 200
TIMEOUT = datetime.timedelta(seconds=30)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RocksEventStore]:
    opened = RocksEventStore(tmp_path / "data")
    yield opened
    opened.close()


class Transactional:
    """One transactional id's requests to an in-process broker, each handled as the server would handle it."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.producer_id = self.epoch = -1

    async def call(self, handle: Callable[[RequestContext, Any], Awaitable[Any]], version: int, request: Any) -> Any:
        return await handle(RequestContext(self.broker, 0, version, 1, "tester", 1, "127.0.0.1"), request)

    async def init(self) -> int:
        answer = await self.call(init_producer_id.handle, 4, InitProducerIdRequest(
            transactional_id="tx", producer_id=-1, producer_epoch=-1, transaction_timeout=datetime.timedelta(
                seconds=60)))
        if answer.error_code == ErrorCode.NONE:
            self.producer_id, self.epoch = int(answer.producer_id), int(answer.producer_epoch)
        return int(answer.error_code)

    async def add_every_partition(self) -> None:
        answer = await self.call(add_partitions_to_txn.handle, 3, AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="tx", v3_and_below_producer_id=self.producer_id,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=(AddPartitionsToTxnTopic(name="wide", partitions=tuple(range(PARTITIONS))),)))
        codes = {p.partition_error_code for t in answer.results_by_topic_v3_and_below for p in t.results_by_partition}
        assert codes == {ErrorCode.NONE}

    async def produce(self, index: int, sequence: int) -> int:
        batch = build_batch([Record(0, 1_000, b"k", b"v")], producer_id=self.producer_id, producer_epoch=self.epoch,
                            base_sequence=sequence, is_transactional=True)
        answer = await self.call(produce.handle, 9, ProduceRequest(
            transactional_id="tx", acks=-1, timeout=TIMEOUT, topic_data=(TopicProduceData(
                name="wide", partition_data=(PartitionProduceData(index=index, records=batch),)),)))
        return int(answer.responses[0].partition_responses[0].error_code)

    def end(self, committed: bool) -> Awaitable[Any]:
        return self.call(end_txn.handle, 3, EndTxnRequest(transactional_id="tx", producer_id=self.producer_id,
                                                          producer_epoch=self.epoch, committed=committed))

    async def add_group(self) -> int:
        answer = await self.call(add_offsets_to_txn.handle, 3, AddOffsetsToTxnRequest(
            transactional_id="tx", producer_id=self.producer_id, producer_epoch=self.epoch, group_id="g"))
        return int(answer.error_code)


async def _open_transaction(store: RocksEventStore, clock: ManualClock | None = None) -> Transactional:
    broker = in_process_broker(store, clock=clock)
    broker.create_topic("wide", PARTITIONS)
    broker.commit_now()
    client = Transactional(broker)
    assert await client.init() == ErrorCode.NONE
    await client.add_every_partition()
    assert await client.produce(5, 0) == ErrorCode.NONE
    return client


def _committed(store: RocksEventStore) -> list[list[Event]]:
    commits: list[list[Event]] = []
    store.add_commit_listener(lambda events: commits.append([logged.event for logged in events]))
    return commits


async def _start_ending(store: RocksEventStore) -> tuple[Transactional, list[list[Event]], asyncio.Task[Any]]:
    """An open transaction over every partition, and its EndTxn (commit) started: the client, the commits from
    then on, the request's task."""
    client = await _open_transaction(store)
    commits = _committed(store)
    ending = asyncio.get_running_loop().create_task(client.end(committed=True))
    await asyncio.sleep(0)
    assert "tx" in client.broker.ending_transactions, "marked ending in the turn that decided it"
    return client, commits, ending


def test_an_end_txn_over_many_partitions_lets_others_run_and_refuses_what_would_join_it(
        store: RocksEventStore) -> None:
    async def run() -> None:
        client, commits, ending = await _start_ending(store)
        broker = client.broker
        assert await client.add_group() == ErrorCode.CONCURRENT_TRANSACTIONS
        assert int((await client.end(committed=True)).error_code) == ErrorCode.CONCURRENT_TRANSACTIONS
        assert await client.init() == ErrorCode.CONCURRENT_TRANSACTIONS
        assert await client.produce(7, 0) == ErrorCode.INVALID_TXN_STATE, "no batch joins it between two parts"
        turns = 1
        while not ending.done():
            await asyncio.sleep(0)
            turns += 1
        assert int(ending.result().error_code) == ErrorCode.NONE
        assert turns >= 3, f"{PARTITIONS} partitions' markers in at least three turns, not one ({turns})"
        assert not broker.ending_transactions
        assert len(commits) == 1, "the whole end is one WriteBatch"
        markers = [event for event in commits[0] if isinstance(event, TransactionMarkerWritten)]
        assert len(markers) == PARTITIONS and all(marker.committed for marker in markers)
        assert isinstance(commits[0][-1], TransactionEnded)
        state = broker.transaction("tx")
        assert state is not None and state.status == COMPLETE_COMMIT
        partition_id = broker.partition_id("wide", 5)
        assert partition_id is not None and last_stable_offset(broker, partition_id) == 2, "the record, its marker"
        assert int((await client.end(committed=True)).error_code) == ErrorCode.NONE, "a retry of the outcome"

    asyncio.run(run())


def test_a_new_instance_aborts_a_wide_transaction_over_turns_then_gets_its_epoch(store: RocksEventStore) -> None:
    async def run() -> None:
        client = await _open_transaction(store)
        commits = _committed(store)
        assert await client.init() == ErrorCode.NONE
        assert client.epoch == 2, "the abort bumped the epoch to 1; the new instance's is the next"
        aborted = [commit for commit in commits if any(isinstance(event, TransactionEnded) for event in commit)]
        assert len(aborted) == 1
        markers = [event for event in aborted[0] if isinstance(event, TransactionMarkerWritten)]
        assert len(markers) == PARTITIONS and not any(marker.committed for marker in markers)
        assert {marker.producer_epoch for marker in markers} == {1}
        state = client.broker.transaction("tx")
        assert state is not None and state.producer_epoch == 2

    asyncio.run(run())


def test_a_wide_transaction_that_times_out_is_aborted_over_turns(store: RocksEventStore) -> None:
    async def run() -> None:
        clock = ManualClock()
        client = await _open_transaction(store, clock)
        broker = client.broker
        commits = _committed(store)
        clock.advance(60_001)
        assert transaction_timer(broker).tick() == 1
        assert "tx" in broker.ending_transactions, "marked before its task first runs"
        assert await client.produce(7, 0) == ErrorCode.INVALID_PRODUCER_EPOCH, "fenced, as the abort at once said"
        while broker.ending_transactions:
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert len(commits) == 1
        state = broker.transaction("tx")
        assert state is not None and (state.status, state.producer_epoch) == (COMPLETE_ABORT, 1)
        assert int((await client.end(committed=True)).error_code) == ErrorCode.PRODUCER_FENCED

    asyncio.run(run())


def test_an_end_txn_cancelled_with_its_connection_still_ends_the_transaction_whole(store: RocksEventStore) -> None:
    """A client disconnecting cancels its request. Cut between two parts, an end would commit some partitions'
    markers and leave the transaction open, to be aborted over them later: it runs to its end in a task of its own."""
    async def run() -> None:
        client, commits, ending = await _start_ending(store)
        broker = client.broker
        ending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await ending
        await broker.finish_started_work()
        for _ in range(2 * TURNS_GIVEN_WAY):
            await asyncio.sleep(0)
        assert not broker.ending_transactions
        ends = [commit for commit in commits if any(isinstance(event, TransactionEnded) for event in commit)]
        assert len(ends) == 1
        markers = [event for event in ends[0] if isinstance(event, TransactionMarkerWritten)]
        assert len(markers) == PARTITIONS, "every marker in the commit of the end"
        state = broker.transaction("tx")
        assert state is not None and state.status == COMPLETE_COMMIT

    asyncio.run(run())


def test_a_delete_records_during_a_wide_end_waits_rather_than_committing_part_of_it(store: RocksEventStore) -> None:
    """DeleteRecords of a partition holding a staged marker would commit what the end had staged so far (the store
    commits staged records before it truncates their partition): it waits for the end's last part."""
    async def run() -> None:
        client, commits, ending = await _start_ending(store)
        broker = client.broker
        for _ in range(2):  # the end's own task starts
            await asyncio.sleep(0)
        assert broker.commits_held
        deleting = asyncio.get_running_loop().create_task(client.call(delete_records.handle, 2, DeleteRecordsRequest(
            topics=(DeleteRecordsTopic(name="wide", partitions=(
                DeleteRecordsPartition(partition_index=0, offset=1),)),), timeout=TIMEOUT)))
        await asyncio.gather(ending, deleting)
        ends = [commit for commit in commits if any(isinstance(event, TransactionEnded) for event in commit)]
        assert len(ends) == 1
        assert sum(isinstance(event, TransactionMarkerWritten) for event in ends[0]) == PARTITIONS
        assert all(not isinstance(event, TransactionMarkerWritten) for commit in commits if commit is not ends[0]
                   for event in commit), "no marker committed apart from the end"
        answer = deleting.result()
        assert answer.topics[0].partitions[0].error_code == ErrorCode.NONE

    asyncio.run(run())


def test_a_wide_end_whose_commit_fails_is_answered_with_the_storage_error(store: RocksEventStore) -> None:
    """The end's commit runs right after its last part, before the request asks for durability: it must hear of a
    failed commit from the task that staged the parts, not answer NONE for a transaction the store still has open."""
    async def run() -> None:
        client = await _open_transaction(store)
        encode = store._types.encode
        refused = []

        def refusing_the_end(value: object) -> bytes:
            if isinstance(value, TransactionState) and value.status == COMPLETE_COMMIT:
                refused.append(value)
                raise TypeError("the codec refuses this end")
            return encode(value)

        store._types.encode = refusing_the_end  # type: ignore[method-assign]
        answer = await client.end(committed=True)
        assert refused and int(answer.error_code) == ErrorCode.KAFKA_STORAGE_ERROR
        del store._types.encode
        assert not client.broker.ending_transactions
        state = client.broker.transaction("tx")
        assert state is not None and state.status == ONGOING, "the store reloaded what was written: still open"
        retry = asyncio.get_running_loop().create_task(  # a request of its own, as the server runs each
            client.end(committed=True), context=contextvars.Context())
        assert int((await retry).error_code) == ErrorCode.NONE, "a retry ends it"
        state = client.broker.transaction("tx")
        assert state is not None and state.status == COMPLETE_COMMIT

    asyncio.run(run())
