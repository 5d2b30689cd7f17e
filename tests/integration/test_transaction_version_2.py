"""Transaction version 2 (KIP-890 part 2) on the wire, on logwright and on Kafka 4.4 (``--against kafka``).

Requests are sent one by one, as a transaction version 2 client sends them (the Java client 4.x when the broker
finalizes ``transaction.version`` 2): Produce v12 and TxnOffsetCommit v5 add to the transaction themselves, and
every EndTxn v5 bumps the producer epoch and names the id and epoch to go on with. Each scenario was first run on
Kafka 4.4 and its answers written down here; v4 and v11 requests on the same transactional id show where the two
versions' rules meet.
"""

from __future__ import annotations

import datetime
import time
import uuid
from typing import Any

import pytest
from kio.schema.api_versions.v4 import request as versions_v4
from kio.schema.end_txn.v4 import request as end_v4
from kio.schema.end_txn.v5 import request as end_v5
from kio.schema.find_coordinator.v4 import request as find_v4
from kio.schema.init_producer_id.v5 import request as init_v5
from kio.schema.produce.v11 import request as produce_v11
from kio.schema.produce.v12 import request as produce_v12
from kio.schema.txn_offset_commit.v4 import request as offsets_v4
from kio.schema.txn_offset_commit.v5 import request as offsets_v5
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.testing.clients import one_request

from .test_transactions import committed_offset, new_topic, read_all

NONE, INVALID_REQUEST, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING = 0, 42, 47, 48, 49
PRODUCER_FENCED, TRANSACTION_ABORTABLE, NOT_LEADER_OR_FOLLOWER = 90, 120, 6
NOT_YET = {14, 15, 16, 51}
"""COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS: Kafka's
coordinators answer these while they load or write the end before, so a request is sent again after them."""


def ask(bootstrap: str, message: Any) -> Any:
    for _ in range(200):
        answer = one_request(bootstrap, message)
        if int(answer.error_code) not in NOT_YET:
            return answer
        time.sleep(0.05)
    raise AssertionError(f"still {answer.error_code!r}")


def find_coordinator(bootstrap: str, key: str, key_type: int) -> None:
    for _ in range(200):
        answer = one_request(bootstrap, make(find_v4.FindCoordinatorRequest, key_type=key_type,
                                             coordinator_keys=(key,)))
        if answer.coordinators[0].error_code == NONE:
            return
        time.sleep(0.05)
    raise AssertionError(answer)


def init(bootstrap: str, transactional_id: str) -> tuple[int, int]:
    find_coordinator(bootstrap, transactional_id, 1)
    answer = ask(bootstrap, make(init_v5.InitProducerIdRequest, transactional_id=transactional_id,
                                 transaction_timeout=datetime.timedelta(seconds=60)))
    assert answer.error_code == NONE, answer
    return int(answer.producer_id), int(answer.producer_epoch)


def produce(bootstrap: str, module: Any, transactional_id: str, topic: str, partition: int, producer: tuple[int, int],
            sequence: int, value: bytes) -> int:
    """One transactional batch of one record; the partition's error code. NOT_LEADER_OR_FOLLOWER is sent again, as
    clients do: Kafka answers it for a topic created a moment ago, until its partitions have their leader."""
    batch = build_batch([Record(0, int(time.time() * 1000), None, value)], producer_id=producer[0],
                        producer_epoch=producer[1], base_sequence=sequence, is_transactional=True)
    request = make(
        module.ProduceRequest, transactional_id=transactional_id, acks=-1, timeout=datetime.timedelta(seconds=30),
        topic_data=(make(module.TopicProduceData, name=topic, partition_data=(
            make(module.PartitionProduceData, index=partition, records=batch),)),))
    for _ in range(200):
        code = int(one_request(bootstrap, request).responses[0].partition_responses[0].error_code)
        if code != NOT_LEADER_OR_FOLLOWER:
            return code
        time.sleep(0.05)
    raise AssertionError("no leader for the new topic")


def end(bootstrap: str, module: Any, transactional_id: str, producer: tuple[int, int],
        committed: bool) -> tuple[int, ...]:
    """``(error code, producer id, producer epoch)`` from v5, ``(error code,)`` before."""
    answer = ask(bootstrap, make(module.EndTxnRequest, transactional_id=transactional_id, producer_id=producer[0],
                                 producer_epoch=producer[1], committed=committed))
    if module is end_v5:
        return int(answer.error_code), int(answer.producer_id), int(answer.producer_epoch)
    return (int(answer.error_code),)


def commit_offset(bootstrap: str, module: Any, transactional_id: str, group: str, producer: tuple[int, int],
                  topic: str, offset: int) -> int:
    """A transactional offset for partition 0; its error code."""
    find_coordinator(bootstrap, group, 0)
    request = make(module.TxnOffsetCommitRequest, transactional_id=transactional_id, group_id=group,
                   producer_id=producer[0], producer_epoch=producer[1], topics=(
                       make(module.TxnOffsetCommitRequestTopic, name=topic, partitions=(
                           make(module.TxnOffsetCommitRequestPartition, partition_index=0, committed_offset=offset,
                                committed_metadata=None),)),))
    for _ in range(200):
        answer = one_request(bootstrap, request)
        [code] = {int(partition.error_code) for topic in answer.topics for partition in topic.partitions}
        if code not in NOT_YET:
            return code
        time.sleep(0.05)
    raise AssertionError(f"still {code}")


@pytest.mark.differential
def test_transaction_version_2_is_finalized_with_the_versions_that_carry_it(bootstrap: str) -> None:
    """What makes the Java client 4.x run version 2: the feature finalized at 2, and EndTxn v5, Produce v12 and
    TxnOffsetCommit v5 served."""
    answer = one_request(bootstrap, make(versions_v4.ApiVersionsRequest, client_software_name="logwright-tests",
                                         client_software_version="1"))
    finalized = {feature.name: int(feature.max_version_level) for feature in answer.finalized_features}
    assert finalized["transaction.version"] == 2
    served = {int(key.api_key): int(key.max_version) for key in answer.api_keys}
    assert served[26] >= 5 and served[0] >= 12 and served[28] >= 5


@pytest.mark.differential
def test_a_version_2_transaction_joins_by_producing_and_every_end_bumps_the_epoch(bootstrap: str) -> None:
    """Produce v12 and TxnOffsetCommit v5 join the transaction without AddPartitionsToTxn or AddOffsetsToTxn (v11 and
    v4 are told TRANSACTION_ABORTABLE); EndTxn v5 commits at the next epoch and answers it; the epoch before is a
    retry of that end, fenced for writes; the next transaction starts with the new epoch by producing; a v4 end
    bumps nothing and retries with the current epoch only."""
    topic, group = new_topic(bootstrap), f"g-{uuid.uuid4().hex[:6]}"
    transactional_id = f"tv2-{uuid.uuid4().hex[:6]}"
    producer_id, epoch = producer = init(bootstrap, transactional_id)
    bumped, bumped_twice = (producer_id, epoch + 1), (producer_id, epoch + 2)

    assert produce(bootstrap, produce_v11, transactional_id, topic, 0, producer, 0, b"refused") == TRANSACTION_ABORTABLE
    assert produce(bootstrap, produce_v12, transactional_id, topic, 0, producer, 0, b"a") == NONE
    assert produce(bootstrap, produce_v12, transactional_id, topic, 1, producer, 0, b"b") == NONE
    assert commit_offset(bootstrap, offsets_v4, transactional_id, group, producer, topic, 7) == TRANSACTION_ABORTABLE
    assert commit_offset(bootstrap, offsets_v5, transactional_id, group, producer, topic, 7) == NONE
    assert end(bootstrap, end_v5, transactional_id, producer, True) == (NONE, *bumped)
    assert sorted(read_all(bootstrap, topic, 2, "read_committed", expected=2)) == ["a", "b"]
    assert committed_offset(bootstrap, group, topic, 0) == 7

    assert end(bootstrap, end_v5, transactional_id, producer, True) == (NONE, *bumped), "a retry"
    assert end(bootstrap, end_v5, transactional_id, producer, False) == (INVALID_TXN_STATE, -1, -1)
    assert end(bootstrap, end_v5, transactional_id, bumped, True) == (INVALID_TXN_STATE, -1, -1)
    assert produce(bootstrap, produce_v12, transactional_id, topic, 0, producer, 1, b"zombie") == INVALID_PRODUCER_EPOCH

    assert produce(bootstrap, produce_v12, transactional_id, topic, 0, bumped, 0, b"c") == NONE
    assert end(bootstrap, end_v5, transactional_id, bumped, False) == (NONE, *bumped_twice)
    assert end(bootstrap, end_v5, transactional_id, bumped, False) == (NONE, *bumped_twice), "a retry"
    assert end(bootstrap, end_v4, transactional_id, bumped_twice, False) == (NONE,), "version 1's retry"
    assert end(bootstrap, end_v4, transactional_id, bumped, False) == (PRODUCER_FENCED,)
    assert sorted(read_all(bootstrap, topic, 2, "read_uncommitted", expected=3)) == ["a", "b", "c"]
    assert sorted(read_all(bootstrap, topic, 2, "read_committed", expected=2)) == ["a", "b"]


@pytest.mark.differential
def test_a_version_2_client_may_abort_with_nothing_open_and_must_name_its_own_producer(bootstrap: str) -> None:
    """An abort with the current epoch and no transaction open is an end of its own (the epoch bumped again), a
    commit there INVALID_TXN_STATE; a producer id that is not the transactional id's is INVALID_PRODUCER_ID_MAPPING
    for EndTxn and for Produce, an old epoch INVALID_PRODUCER_EPOCH for Produce and TxnOffsetCommit, PRODUCER_FENCED
    for EndTxn; an empty transactional id INVALID_REQUEST."""
    topic, group = new_topic(bootstrap), f"g-{uuid.uuid4().hex[:6]}"
    transactional_id = f"tv2-{uuid.uuid4().hex[:6]}"
    producer_id, epoch = producer = init(bootstrap, transactional_id)
    bumped, stranger = (producer_id, epoch + 1), (producer_id + 1000, 0)

    assert end(bootstrap, end_v5, transactional_id, producer, True) == (INVALID_TXN_STATE, -1, -1)
    assert end(bootstrap, end_v5, transactional_id, producer, False) == (NONE, *bumped)
    assert end(bootstrap, end_v5, transactional_id, bumped, True) == (INVALID_TXN_STATE, -1, -1)
    assert end(bootstrap, end_v4, transactional_id, bumped, True) == (INVALID_TXN_STATE,)
    assert end(bootstrap, end_v5, transactional_id, (producer_id, epoch + 2), False) == (PRODUCER_FENCED, -1, -1)
    assert end(bootstrap, end_v5, transactional_id, stranger, False) == (INVALID_PRODUCER_ID_MAPPING, -1, -1)
    assert end(bootstrap, end_v5, f"nobody-{transactional_id}", bumped, False) == (INVALID_PRODUCER_ID_MAPPING, -1, -1)
    assert end(bootstrap, end_v5, "", bumped, False) == (INVALID_REQUEST, -1, -1)

    for name, named in ((transactional_id, stranger), (f"nobody-{transactional_id}", bumped)):
        assert produce(bootstrap, produce_v12, name, topic, 0, named, 0, b"x") == INVALID_PRODUCER_ID_MAPPING
    assert produce(bootstrap, produce_v12, transactional_id, topic, 0, producer, 0, b"x") == INVALID_PRODUCER_EPOCH
    assert commit_offset(bootstrap, offsets_v5, transactional_id, group, producer, topic, 3) == INVALID_PRODUCER_EPOCH
    assert commit_offset(bootstrap, offsets_v5, transactional_id, group, bumped, topic, 3) == NONE
    assert end(bootstrap, end_v5, transactional_id, bumped, True) == (NONE, producer_id, epoch + 2)
    assert committed_offset(bootstrap, group, topic, 0) == 3
    assert read_all(bootstrap, topic, 2, "read_uncommitted") == []
