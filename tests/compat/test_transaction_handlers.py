"""Transaction API handlers over a real RocksEventStore: the error codes clients act on, no sockets."""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3.request import AddPartitionsToTxnRequest, AddPartitionsToTxnTopic
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.list_transactions.v2.request import ListTransactionsRequest
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.offset_fetch.v8.request import OffsetFetchRequest as BatchedOffsetFetchRequest
from kio.schema.offset_fetch.v8.request import OffsetFetchRequestGroup, OffsetFetchRequestTopics
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.txn_offset_commit.v3.request import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from logwright.compat import turns
from logwright.compat.coordinators import transaction_coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    describe_transactions,
    end_txn,
    fetch,
    init_producer_id,
    list_transactions,
    offset_fetch,
    produce,
    txn_offset_commit,
)
from logwright.compat.wire.encoder import Encoded, encode_entity
from logwright.compat.wire.messages import decode_response, encode_response
from logwright.compat.wire.record_batch import Record, build_batch
from test_admin_handlers import Harness, topic

from tests.compat.brokers import GivenWay, ProjectionReads, as_read

TIMEOUT = datetime.timedelta(seconds=30)


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    opened = Harness(tmp_path / "data")
    opened.create(topic("t", 2))
    yield opened
    opened.close()


def init(harness: Harness, timeout_ms: int = 60_000) -> Any:
    request = InitProducerIdRequest(transactional_id="tx", producer_id=-1, producer_epoch=-1,
                                    transaction_timeout=datetime.timedelta(milliseconds=timeout_ms))
    return harness.call(init_producer_id.handle, 4, request)


def add_partitions(harness: Harness, producer_id: int, epoch: int, *partitions: tuple[str, int]) -> list[int]:
    request = AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="tx", v3_and_below_producer_id=producer_id, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=tuple(AddPartitionsToTxnTopic(name=name, partitions=(index,))
                                  for name, index in partitions))
    response = harness.call(add_partitions_to_txn.handle, 3, request)
    return [p.partition_error_code for t in response.results_by_topic_v3_and_below for p in t.results_by_partition]


def produce_to(harness: Harness, index: int, producer_id: int, epoch: int, sequence: int = 0) -> int:
    batch = build_batch([Record(0, 1_000, b"k", b"v")], producer_id=producer_id, producer_epoch=epoch,
                        base_sequence=sequence, is_transactional=True)
    request = ProduceRequest(transactional_id="tx", acks=-1, timeout=TIMEOUT, topic_data=(
        TopicProduceData(name="t", partition_data=(PartitionProduceData(index=index, records=batch),)),))
    response = harness.call(produce.handle, 9, request)
    return int(response.responses[0].partition_responses[0].error_code)


def end(harness: Harness, producer_id: int, epoch: int, committed: bool, version: int = 3) -> int:
    request = EndTxnRequest(transactional_id="tx", producer_id=producer_id, producer_epoch=epoch, committed=committed)
    return int(harness.call(end_txn.handle, version, request).error_code)


def fetch_committed(harness: Harness, index: int) -> Any:
    request = FetchRequest(replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20,
                           isolation_level=1, session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
                           topics=(FetchTopic(topic="t", partitions=(FetchPartition(
                               partition=index, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                               partition_max_bytes=1 << 20),)),))
    answer = harness.call(fetch.handle, 12, request)
    # as a client reads it: Fetch keeps the answers of partitions with nothing to return encoded
    return decode_response(1, 12, encode_response(1, 12, 7, answer))[1].responses[0].partitions[0]


def offset_of(harness: Harness, require_stable: bool) -> tuple[int, int]:
    request = OffsetFetchRequest(group_id="g", require_stable=require_stable,
                                 topics=(OffsetFetchRequestTopic(name="t", partition_indexes=(0,)),))
    partition = as_read(harness.call(offset_fetch.handle, 7, request)).topics[0].partitions[0]
    return int(partition.error_code), int(partition.committed_offset)


def stable_codes(harness: Harness, groups: list[str]) -> dict[int, int]:
    """How many of ``groups`` answer each error on partition t-0 of a batched (v8) fetch of stable offsets; the
    transactions are read once for the whole request (a pass per group grew with groups times transactional ids)."""
    partition = OffsetFetchRequestTopics(name="t", partition_indexes=(0,))
    request = BatchedOffsetFetchRequest(require_stable=True, groups=tuple(
        OffsetFetchRequestGroup(group_id=group, topics=(partition,)) for group in groups))
    with ProjectionReads(harness.store, "transactions") as reads:
        answer = as_read(harness.call(offset_fetch.handle, 8, request))
    assert reads.count == 1
    return dict(Counter(int(group.topics[0].partitions[0].error_code) for group in answer.groups))


def test_partitions_must_be_added_and_unknown_ones_spoil_the_request(harness: Harness) -> None:
    granted = init(harness)
    pid, epoch = granted.producer_id, granted.producer_epoch
    assert add_partitions(harness, pid, epoch, ("t", 0), ("nope", 0)) == [
        ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert produce_to(harness, 0, pid, epoch) == ErrorCode.INVALID_TXN_STATE
    assert add_partitions(harness, pid, epoch, ("t", 0)) == [ErrorCode.NONE]
    assert produce_to(harness, 0, pid, epoch) == ErrorCode.NONE
    open_partition = fetch_committed(harness, 0)
    assert (open_partition.last_stable_offset, open_partition.high_watermark) == (0, 1)
    assert end(harness, pid, epoch, committed=False) == ErrorCode.NONE
    aborted = fetch_committed(harness, 0)
    assert (aborted.last_stable_offset, aborted.high_watermark) == (2, 2)
    assert [(a.producer_id, a.first_offset) for a in aborted.aborted_transactions] == [(pid, 0)]
    assert end(harness, pid, epoch, committed=False) == ErrorCode.NONE, "a retried abort"
    assert end(harness, pid, epoch, committed=True) == ErrorCode.INVALID_TXN_STATE


def test_offsets_are_unstable_until_the_commit_and_zombies_are_fenced(harness: Harness) -> None:
    granted = init(harness)
    pid, epoch = granted.producer_id, granted.producer_epoch
    add = AddOffsetsToTxnRequest(transactional_id="tx", producer_id=pid, producer_epoch=epoch, group_id="g")
    assert harness.call(add_offsets_to_txn.handle, 3, add).error_code == ErrorCode.NONE
    commit = TxnOffsetCommitRequest(transactional_id="tx", group_id="g", producer_id=pid, producer_epoch=epoch,
                                    generation_id=-1, member_id="", group_instance_id=None, topics=(
                                        TxnOffsetCommitRequestTopic(name="t", partitions=(
                                            TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=5,
                                                                            committed_leader_epoch=-1,
                                                                            committed_metadata=None),)),))
    response = as_read(harness.call(txn_offset_commit.handle, 3, commit))
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert offset_of(harness, require_stable=True) == (ErrorCode.UNSTABLE_OFFSET_COMMIT, -1)
    assert stable_codes(harness, [f"other-{n}" for n in range(500)] + ["g"]) == {ErrorCode.NONE: 500,
                                                                                 ErrorCode.UNSTABLE_OFFSET_COMMIT: 1}
    assert offset_of(harness, require_stable=False) == (ErrorCode.NONE, -1)
    assert end(harness, pid, epoch, committed=True) == ErrorCode.NONE
    assert offset_of(harness, require_stable=True) == (ErrorCode.NONE, 5)
    successor = init(harness)
    assert (successor.producer_id, successor.producer_epoch) == (pid, epoch + 1)
    assert end(harness, pid, epoch, committed=True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert end(harness, pid, epoch, committed=True, version=3) == ErrorCode.PRODUCER_FENCED
    assert init(harness, timeout_ms=900_001).error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT


def test_a_partitions_positions_are_read_together_as_fetch_reports_them(harness: Harness) -> None:
    """`Broker.partition_positions`: the high watermark, the last stable offset and the log start, as Fetch answers
    them; a partition nothing was appended to is all zeros."""
    broker = harness.broker
    state = broker.topic("t")
    assert state is not None
    first, second = state.partition_ids
    assert broker.partition_positions(second) == (0, 0, 0)
    granted = init(harness)
    pid, epoch = granted.producer_id, granted.producer_epoch
    assert add_partitions(harness, pid, epoch, ("t", 0)) == [ErrorCode.NONE]
    assert produce_to(harness, 0, pid, epoch) == ErrorCode.NONE
    assert broker.partition_positions(first) == (1, 0, 0), "stable below the open transaction"
    assert end(harness, pid, epoch, committed=True) == ErrorCode.NONE
    assert broker.partition_positions(first) == (2, 2, 0), "its commit marker took offset 1"
    assert broker.store.truncate(first, 1) is not None
    broker.commit_now()
    assert broker.partition_positions(first) == (2, 2, 1)
    assert fetch.last_stable_offset(broker, first) == 2


def test_describe_transactions_looks_each_partition_up_and_answers_an_id_again_from_its_bytes(
        harness: Harness) -> None:
    granted = init(harness)
    assert add_partitions(harness, granted.producer_id, granted.producer_epoch, ("t", 1), ("t", 0)) == [
        ErrorCode.NONE, ErrorCode.NONE]
    listed = 0
    topics = harness.broker.topics

    def counted() -> Any:
        nonlocal listed
        listed += 1
        return topics()

    harness.broker.topics = counted  # type: ignore[method-assign]
    answer = harness.call(describe_transactions.handle, 0, DescribeTransactionsRequest(
        transactional_ids=("tx", "nope", "tx", "tx")))
    del harness.broker.topics
    assert listed <= 1, "the partition map built once at most, no search of every topic per transaction"
    first, unknown, *copies = answer.transaction_states
    assert [(topic.topic, topic.partitions) for topic in first.topics] == [("t", (0, 1))]
    assert unknown.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    assert [type(copy) for copy in copies] == [Encoded, Encoded]
    assert copies[0] is copies[1] and copies[0] == encode_entity(first), "the first answer's bytes, encoded once"


def fetched_aborts(harness: Harness, offset: int, max_bytes: int) -> list[tuple[int, int]]:
    """The aborted transactions a READ_COMMITTED Fetch of t-0 from ``offset`` lists, as a client reads them."""
    request = FetchRequest(replica_id=-1, max_wait=datetime.timedelta(0), min_bytes=0, max_bytes=1 << 20,
                           isolation_level=1, session_id=0, session_epoch=-1, forgotten_topics_data=(), rack_id="",
                           topics=(FetchTopic(topic="t", partitions=(FetchPartition(
                               partition=0, current_leader_epoch=-1, fetch_offset=offset, log_start_offset=-1,
                               partition_max_bytes=max_bytes),)),))
    answer = harness.call(fetch.handle, 12, request)
    partition = decode_response(1, 12, encode_response(1, 12, 7, answer))[1].responses[0].partitions[0]
    return [(entry.producer_id, entry.first_offset) for entry in partition.aborted_transactions]


def test_a_fetch_lists_the_aborted_transactions_overlapping_what_it_read(harness: Harness) -> None:
    """Every aborted transaction from the fetch offset to the last stable offset was listed, whatever the Fetch
    read: with 50,000 aborts on a partition a 1 KB Fetch answered 0.8 MB. Kafka lists those up to what it read."""
    granted = init(harness)
    pid, epoch = granted.producer_id, granted.producer_epoch
    for sequence in range(10):
        assert add_partitions(harness, pid, epoch, ("t", 0)) == [ErrorCode.NONE]
        assert produce_to(harness, 0, pid, epoch, sequence) == ErrorCode.NONE
        assert end(harness, pid, epoch, committed=False) == ErrorCode.NONE

    assert fetched_aborts(harness, 0, 1) == [(pid, 0)], "one batch read: the first transaction's"
    assert fetched_aborts(harness, 4, 1) == [(pid, 4)]
    assert fetched_aborts(harness, 3, 1) == [(pid, 2)], "a marker read: its transaction, as Kafka lists it"
    assert fetched_aborts(harness, 0, 1 << 20) == [(pid, 2 * n) for n in range(10)]
    assert fetched_aborts(harness, 20, 1 << 20) == [], "nothing read"


def test_aborts_are_indexed_and_a_fetch_lists_them_with_those_the_row_kept_before(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """An abort is a row of the store's index, written once (kept in the partition's transactions row, every
    transaction rewrote all of them); one whose marker was written before the index stays in the row, and a Fetch
    lists both."""
    granted = init(harness)
    pid, epoch = granted.producer_id, granted.producer_epoch
    with monkeypatch.context() as before_the_index:
        before_the_index.setattr(transaction_coordinator, "ending_abort", lambda *_: None)
        assert add_partitions(harness, pid, epoch, ("t", 0)) == [ErrorCode.NONE]
        assert produce_to(harness, 0, pid, epoch, 0) == ErrorCode.NONE
        assert end(harness, pid, epoch, committed=False) == ErrorCode.NONE
    for sequence in (1, 2):
        assert add_partitions(harness, pid, epoch, ("t", 0)) == [ErrorCode.NONE]
        assert produce_to(harness, 0, pid, epoch, sequence) == ErrorCode.NONE
        assert end(harness, pid, epoch, committed=False) == ErrorCode.NONE
    partition_id = harness.broker.topic("t").partition_ids[0]  # type: ignore[union-attr]
    row = harness.store.state("partition_transactions", str(partition_id))
    assert row is not None and [entry.first_offset for entry in row.aborted] == [0], "the one from before the index"
    assert [(producer, first, marker) for _, producer, first, marker, _ in harness.store.aborted_rows()] == [
        (pid, 2, 3), (pid, 4, 5)]
    assert fetched_aborts(harness, 0, 1 << 20) == [(pid, 0), (pid, 2), (pid, 4)]
    assert fetched_aborts(harness, 2, 1) == [(pid, 2)] and fetched_aborts(harness, 0, 1) == [(pid, 0)]


def test_transactions_are_listed_in_slices(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every transactional id is read (and may be listed) by a ListTransactions with no filter: 100,000 held every
    client 184 ms. The request gives way every `ANSWERS_PER_TURN` ids read and entries built."""
    for name in ("tx-c", "tx-a", "tx-b"):
        granted = harness.call(init_producer_id.handle, 4, InitProducerIdRequest(
            transactional_id=name, producer_id=-1, producer_epoch=-1, transaction_timeout=TIMEOUT))
        assert granted.error_code == ErrorCode.NONE
    monkeypatch.setattr(turns, "ANSWERS_PER_TURN", 2)
    given_way = GivenWay(monkeypatch, turns)
    listed = harness.call(list_transactions.handle, 2, ListTransactionsRequest(
        state_filters=(), producer_id_filters=(), duration_filter=-1, transactional_id_pattern=None))
    assert [state.transactional_id for state in listed.transaction_states] == ["tx-a", "tx-b", "tx-c"]
    assert given_way.count >= 3, "three ids (and their rows) read, three entries built, two a turn"
