"""The transaction APIs' checks of a request, answered as Apache Kafka 4.4 answers them (``--against kafka``).

Raw InitProducerId, AddPartitionsToTxn (v3), AddOffsetsToTxn, TxnOffsetCommit and EndTxn requests: timeouts out of
range, an empty transactional id, another producer id or epoch (PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING; in
TxnOffsetCommit INVALID_PRODUCER_EPOCH in every version), a transactional id the broker does not know named with a
producer id (a fresh producer, as after an expiry), EndTxn with no transaction, AddPartitionsToTxn of unknown topics
and partitions (the partitions named beside them OPERATION_NOT_ATTEMPTED), a TxnOffsetCommit for a group not added
(TRANSACTION_ABORTABLE from v4, KIP-890). Produce: a transactional batch to a partition the transaction did not add
(INVALID_TXN_STATE; TRANSACTION_ABORTABLE from v11), a batch that is not transactional from a producer whose
transaction is open on the partition, transactional batches in a request naming no transactional id, old epochs.
Whether EndTxn repeated at once finds the transaction still completing depends on when Kafka writes its markers, so
it is not compared.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.add_offsets_to_txn.v3.request import AddOffsetsToTxnRequest
from kio.schema.add_partitions_to_txn.v3 import request as add_partitions
from kio.schema.describe_transactions.v0 import request as describe_transactions
from kio.schema.end_txn.v3.request import EndTxnRequest
from kio.schema.list_transactions.v1 import request as list_transactions
from kio.schema.produce.v10 import request as produce_v10
from kio.schema.produce.v11 import request as produce_v11
from kio.schema.txn_offset_commit.v2 import request as txn_offset_commit_v2
from kio.schema.txn_offset_commit.v3 import request as txn_offset_commit_v3
from kio.schema.txn_offset_commit.v4 import request as txn_offset_commit_v4
from logwright.client.connection import Connection
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record

from .coordinator_ready import TRANSACTION, coordinator_ready, init_producer_id
from .test_share_close_order import topic_with_records

pytestmark = pytest.mark.differential

NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE = 0, 3, 42, 47, 48
INVALID_PRODUCER_ID_MAPPING, INVALID_TRANSACTION_TIMEOUT, OPERATION_NOT_ATTEMPTED, PRODUCER_FENCED = 49, 50, 55, 90
OUT_OF_ORDER_SEQUENCE_NUMBER, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_NOT_FOUND = 45, 53, 105
TRANSACTION_ABORTABLE = 120
MINUTE = datetime.timedelta(minutes=1)


def test_transaction_request_checks(bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    transactional, group, other_group = f"txn-checks-{tag}", f"txn-checks-group-{tag}", f"txn-checks-other-{tag}"
    topic = topic_with_records(bootstrap, group)
    unknown = f"txn-checks-none-{tag}"
    answers: dict[str, Any] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "txn-checks")
        request = connection.request
        try:
            await coordinator_ready(connection, transactional, TRANSACTION)
            await coordinator_ready(connection, group)

            async def init(transactional_id: str | None, timeout: datetime.timedelta = MINUTE, producer_id: int = -1,
                           producer_epoch: int = -1) -> Any:
                return await init_producer_id(connection, transactional_id, timeout, producer_id, producer_epoch)

            answers["init: empty transactional id"] = int((await init("")).error_code)
            answers["init: timeout 0"] = int((await init(f"{transactional}-0", datetime.timedelta(0))).error_code)
            answers["init: timeout above the maximum"] = int((await init(
                f"{transactional}-1", datetime.timedelta(minutes=15, seconds=1))).error_code)
            fresh = await init(f"{transactional}-new", producer_id=5, producer_epoch=0)
            answers["init: an unknown transactional id naming a producer"] = (int(fresh.error_code),
                                                                               int(fresh.producer_epoch))
            answers["init: a producer id with epoch -1"] = int((await init(f"{transactional}-2", producer_id=5)
                                                                ).error_code)
            first = await init(transactional)
            producer, epoch = int(first.producer_id), int(first.producer_epoch)
            answers["init: another producer id"] = int((await init(transactional, producer_id=producer + 100,
                                                                   producer_epoch=epoch)).error_code)
            answers["init: another epoch"] = int((await init(transactional, producer_id=producer,
                                                             producer_epoch=epoch + 5)).error_code)
            bumped = await init(transactional, producer_id=producer, producer_epoch=epoch)
            answers["init: its own id and epoch"] = (int(bumped.error_code), int(bumped.producer_id) == producer,
                                                     int(bumped.producer_epoch) - epoch)
            epoch = int(bumped.producer_epoch)

            async def end(committed: bool, producer_id: int = producer, producer_epoch: int = epoch,
                          transactional_id: str = transactional) -> int:
                return int((await request(make(EndTxnRequest, transactional_id=transactional_id,
                                               producer_id=producer_id, producer_epoch=producer_epoch,
                                               committed=committed))).error_code)

            answers["end: commit, no transaction"] = await end(True)
            answers["end: abort, no transaction"] = await end(False)
            answers["end: another producer id"] = await end(False, producer_id=producer + 1)
            answers["end: an older epoch"] = await end(False, producer_epoch=epoch - 1)
            answers["end: an unknown transactional id"] = await end(False, transactional_id=f"{transactional}-none")

            async def add(topics: list[tuple[str, tuple[int, ...]]], producer_id: int = producer,
                          producer_epoch: int = epoch) -> list[tuple[str, list[tuple[int, int]]]]:
                answer = await request(make(
                    add_partitions.AddPartitionsToTxnRequest, v3_and_below_transactional_id=transactional,
                    v3_and_below_producer_id=producer_id, v3_and_below_producer_epoch=producer_epoch,
                    v3_and_below_topics=tuple(add_partitions.AddPartitionsToTxnTopic(name=name, partitions=indexes)
                                              for name, indexes in topics)))
                return sorted((result.name, sorted((int(p.partition_index), int(p.partition_error_code))
                                                   for p in result.results_by_partition))
                              for result in answer.results_by_topic_v3_and_below)

            answers["add: an unknown topic beside a known one"] = await add([(unknown, (0,)), (topic, (0,))])
            answers["add: an unknown partition beside a known one"] = await add([(topic, (0, 7))])
            answers["add: another epoch"] = await add([(topic, (0,))], producer_epoch=epoch + 3)
            answers["add: another producer id"] = await add([(topic, (0,))], producer_id=producer + 9)
            answers["add"] = await add([(topic, (0,))])
            answers["add: again"] = await add([(topic, (0,))])
            answers["add offsets"] = int((await request(make(AddOffsetsToTxnRequest, transactional_id=transactional,
                                                             producer_id=producer, producer_epoch=epoch,
                                                             group_id=group))).error_code)

            async def commit(module: Any, group_id: str = group, producer_id: int = producer,
                             producer_epoch: int = epoch) -> int:
                partition = make(module.TxnOffsetCommitRequestPartition, partition_index=0, committed_offset=1,
                                 committed_leader_epoch=-1, committed_metadata=None)
                answer = await request(make(
                    module.TxnOffsetCommitRequest, transactional_id=transactional, group_id=group_id,
                    producer_id=producer_id, producer_epoch=producer_epoch, generation_id=-1, member_id="",
                    group_instance_id=None,
                    topics=(module.TxnOffsetCommitRequestTopic(name=topic, partitions=(partition,)),)))
                return int(answer.topics[0].partitions[0].error_code)

            for version, module in (("v2", txn_offset_commit_v2), ("v3", txn_offset_commit_v3),
                                    ("v4", txn_offset_commit_v4)):
                answers[f"txn commit {version}: a group not added"] = await commit(module, group_id=other_group)
            for version, module in (("v2", txn_offset_commit_v2), ("v4", txn_offset_commit_v4)):
                answers[f"txn commit {version}: an older epoch"] = await commit(module, producer_epoch=epoch - 1)
                answers[f"txn commit {version}: a newer epoch"] = await commit(module, producer_epoch=epoch + 1)
            answers["txn commit: another producer id"] = await commit(txn_offset_commit_v4, producer_id=producer + 7)
            answers["txn commit"] = await commit(txn_offset_commit_v4)
            answers["end: commit"] = await end(True)
        finally:
            await connection.close()

    asyncio.run(scenario())
    assert answers == {
        "init: empty transactional id": INVALID_REQUEST,
        "init: timeout 0": INVALID_TRANSACTION_TIMEOUT,
        "init: timeout above the maximum": INVALID_TRANSACTION_TIMEOUT,
        "init: an unknown transactional id naming a producer": (NONE, 0),
        "init: a producer id with epoch -1": INVALID_REQUEST,
        "init: another producer id": PRODUCER_FENCED,
        "init: another epoch": PRODUCER_FENCED,
        "init: its own id and epoch": (NONE, True, 1),
        "end: commit, no transaction": INVALID_TXN_STATE,
        "end: abort, no transaction": INVALID_TXN_STATE,
        "end: another producer id": INVALID_PRODUCER_ID_MAPPING,
        "end: an older epoch": PRODUCER_FENCED,
        "end: an unknown transactional id": INVALID_PRODUCER_ID_MAPPING,
        "add: an unknown topic beside a known one": [(topic, [(0, OPERATION_NOT_ATTEMPTED)]),
                                                     (unknown, [(0, UNKNOWN_TOPIC_OR_PARTITION)])],
        "add: an unknown partition beside a known one": [(topic, [(0, OPERATION_NOT_ATTEMPTED),
                                                                  (7, UNKNOWN_TOPIC_OR_PARTITION)])],
        "add: another epoch": [(topic, [(0, PRODUCER_FENCED)])],
        "add: another producer id": [(topic, [(0, INVALID_PRODUCER_ID_MAPPING)])],
        "add": [(topic, [(0, NONE)])],
        "add: again": [(topic, [(0, NONE)])],
        "add offsets": NONE,
        "txn commit v2: a group not added": INVALID_TXN_STATE,
        "txn commit v3: a group not added": INVALID_TXN_STATE,
        "txn commit v4: a group not added": TRANSACTION_ABORTABLE,
        "txn commit v2: an older epoch": INVALID_PRODUCER_EPOCH,
        "txn commit v2: a newer epoch": INVALID_PRODUCER_EPOCH,
        "txn commit v4: an older epoch": INVALID_PRODUCER_EPOCH,
        "txn commit v4: a newer epoch": INVALID_PRODUCER_EPOCH,
        "txn commit: another producer id": INVALID_PRODUCER_ID_MAPPING,
        "txn commit": NONE,
        "end: commit": NONE,
    }


def test_transactional_produce_checks(bootstrap: str) -> None:
    tag = uuid.uuid4().hex[:8]
    transactional = f"txn-produce-checks-{tag}"
    topic = f"txn-produce-checks-{tag}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(3):  # every partition has a leader ready before the raw requests
        producer.produce(topic, b"ready", partition=partition)
    assert producer.flush(30) == 0
    answers: dict[str, int] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "txn-produce-checks")
        request = connection.request
        try:
            await coordinator_ready(connection, transactional, TRANSACTION)
            first = await init_producer_id(connection, transactional)
            bumped = await init_producer_id(connection, transactional, MINUTE, first.producer_id,
                                            first.producer_epoch)
            producer_id, epoch = int(bumped.producer_id), int(bumped.producer_epoch)

            async def produce(module: Any, partition: int, sequence: int = 0, transactional_batch: bool = True,
                              transactional_id: str | None = transactional, producer_epoch: int = epoch) -> int:
                batch = build_batch([Record(0, int(time.time() * 1000), None, b"v")], producer_id=producer_id,
                                    producer_epoch=producer_epoch, base_sequence=sequence,
                                    is_transactional=transactional_batch)
                answer = await request(make(
                    module.ProduceRequest, transactional_id=transactional_id, acks=-1,
                    timeout=datetime.timedelta(seconds=30), topic_data=(module.TopicProduceData(
                        name=topic, partition_data=(module.PartitionProduceData(index=partition, records=batch),)),)))
                return int(answer.responses[0].partition_responses[0].error_code)

            answers["v10, no transaction"] = await produce(produce_v10, 0)
            answers["v11, no transaction"] = await produce(produce_v11, 0)
            await request(make(add_partitions.AddPartitionsToTxnRequest, v3_and_below_transactional_id=transactional,
                               v3_and_below_producer_id=producer_id, v3_and_below_producer_epoch=epoch,
                               v3_and_below_topics=(add_partitions.AddPartitionsToTxnTopic(name=topic,
                                                                                           partitions=(1,)),)))
            answers["v10, a partition not added"] = await produce(produce_v10, 2)
            answers["v11, a partition not added"] = await produce(produce_v11, 2)
            answers["added"] = await produce(produce_v11, 1)
            answers["added, a batch that is not transactional"] = await produce(produce_v11, 1, 1,
                                                                                transactional_batch=False)
            answers["added, no transactional id named"] = await produce(produce_v11, 1, 1, transactional_id=None)
            answers["added, the previous epoch"] = await produce(produce_v11, 1, 1, producer_epoch=epoch - 1)
            answers["added, the previous epoch from sequence 0"] = await produce(produce_v11, 1, 0,
                                                                                 producer_epoch=epoch - 1)
            answers["added, a sequence gap"] = await produce(produce_v11, 1, 5)
            answers["added, the first batch again"] = await produce(produce_v11, 1, 0)
            answers["added, the next batch"] = await produce(produce_v11, 1, 1)
            answers["abort"] = int((await request(make(EndTxnRequest, transactional_id=transactional,
                                                       producer_id=producer_id, producer_epoch=epoch,
                                                       committed=False))).error_code)
        finally:
            await connection.close()

    asyncio.run(scenario())
    assert answers == {
        "v10, no transaction": INVALID_TXN_STATE, "v11, no transaction": TRANSACTION_ABORTABLE,
        "v10, a partition not added": INVALID_TXN_STATE, "v11, a partition not added": TRANSACTION_ABORTABLE,
        "added": NONE, "added, a batch that is not transactional": INVALID_TXN_STATE,
        "added, no transactional id named": TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        "added, the previous epoch": INVALID_PRODUCER_EPOCH,
        "added, the previous epoch from sequence 0": INVALID_PRODUCER_EPOCH,
        "added, a sequence gap": OUT_OF_ORDER_SEQUENCE_NUMBER, "added, the first batch again": NONE,
        "added, the next batch": NONE, "abort": NONE,
    }


def test_list_and_describe_transactions_checks(bootstrap: str) -> None:
    """ListTransactions' duration filter passes an id that never started a transaction (Kafka's start of -1), not an
    ongoing one younger than the duration; DescribeTransactions answers an unknown id TRANSACTIONAL_ID_NOT_FOUND and an
    empty one INVALID_REQUEST, with the other fields at their defaults."""
    tag = uuid.uuid4().hex[:8]
    idle, running = f"txn-list-idle-{tag}", f"txn-list-running-{tag}"
    topic = topic_with_records(bootstrap, f"txn-list-{tag}")
    answers: dict[str, Any] = {}

    async def scenario() -> None:
        connection = await Connection.open(bootstrap, "txn-list-checks")
        request = connection.request
        try:
            for transactional_id in (idle, running):
                await coordinator_ready(connection, transactional_id, TRANSACTION)
                producer = await init_producer_id(connection, transactional_id)
            await request(make(add_partitions.AddPartitionsToTxnRequest, v3_and_below_transactional_id=running,
                               v3_and_below_producer_id=producer.producer_id,
                               v3_and_below_producer_epoch=producer.producer_epoch,
                               v3_and_below_topics=(add_partitions.AddPartitionsToTxnTopic(name=topic,
                                                                                           partitions=(0,)),)))
            for duration in (-1, 10**9):  # not 0: a transaction begun in this millisecond has run 0 ms, not more
                listed = await request(make(list_transactions.ListTransactionsRequest, state_filters=(),
                                            producer_id_filters=(), duration_filter=duration))
                answers[f"listed, duration {duration}"] = sorted(
                    (entry.transactional_id, entry.transaction_state) for entry in listed.transaction_states
                    if entry.transactional_id in (idle, running))
            for label, transactional_id in (("unknown", f"txn-list-none-{tag}"), ("empty", "")):
                described = await request(make(describe_transactions.DescribeTransactionsRequest,
                                               transactional_ids=(transactional_id,)))
                state = described.transaction_states[0]
                answers[f"described, {label}"] = (int(state.error_code), state.transaction_state,
                                                  int(state.producer_id), int(state.producer_epoch))
            await request(make(EndTxnRequest, transactional_id=running, producer_id=producer.producer_id,
                               producer_epoch=producer.producer_epoch, committed=False))
        finally:
            await connection.close()

    asyncio.run(scenario())
    both = sorted([(idle, "Empty"), (running, "Ongoing")])
    assert answers == {
        "listed, duration -1": both, f"listed, duration {10**9}": [(idle, "Empty")],
        "described, unknown": (TRANSACTIONAL_ID_NOT_FOUND, "", 0, 0), "described, empty": (INVALID_REQUEST, "", 0, 0),
    }
