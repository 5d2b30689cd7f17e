"""WriteTxnMarkers (KIP-664): an admin's COMMIT or ABORT marker for a producer, on logwright and on Kafka 4.4.

Every answer is compared as a set: Kafka groups a request's answers by producer id and topic in hash-map order.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from kio.schema.describe_producers.v0 import request as describe_producers
from kio.schema.write_txn_markers.v1 import request as markers_v1
from kio.schema.write_txn_markers.v2 import request as markers_v2
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .test_transactions import TIMEOUT_S, new_topic, read_all, transactional_producer

UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION, INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED = -1, 3, 47, 52


def marker(module: Any, producer_id: int, epoch: int, committed: bool, coordinator_epoch: int,
           partitions: tuple[tuple[str, tuple[int, ...]], ...], **fields: int) -> Any:
    return make(module.WritableTxnMarker, producer_id=producer_id, producer_epoch=epoch, transaction_result=committed,
                coordinator_epoch=coordinator_epoch, topics=tuple(
                    make(module.WritableTxnMarkerTopic, name=name, partition_indexes=indexes)
                    for name, indexes in partitions), **fields)


def written(bootstrap: str, module: Any, *markers: Any) -> set[tuple[int, str, int, int]]:
    """``(producer id, topic, partition, error code)`` of every answer."""
    answer = one_request(bootstrap, make(module.WriteTxnMarkersRequest, markers=markers))
    return {(int(result.producer_id), topic.name, int(partition.partition_index), int(partition.error_code))
            for result in answer.markers for topic in result.topics for partition in topic.partitions}


@pytest.mark.differential
def test_an_admins_abort_ends_the_producers_transaction_on_that_partition_only(bootstrap: str) -> None:
    """``kafka-transactions.sh abort`` on a partition: its records so far are aborted for READ_COMMITTED readers and
    no transaction is open there; the producer goes on, and its commit commits what it wrote since, and the other
    partition's records. Unknown partitions are answered about in the same request."""
    topic = new_topic(bootstrap)
    producer = transactional_producer(bootstrap, f"tx-{uuid.uuid4().hex[:6]}")
    producer.begin_transaction()
    for value in (b"a0", b"a1", b"a2"):
        producer.produce(topic, value=value, partition=0)
    producer.produce(topic, value=b"b0", partition=1)
    assert producer.flush(TIMEOUT_S) == 0
    [(producer_id, epoch, _, coordinator_epoch, open_at)] = producer_states(bootstrap, topic, 0)
    assert open_at == 0

    assert written(bootstrap, markers_v1, marker(markers_v1, producer_id, epoch, False, coordinator_epoch, (
        (topic, (0, 5)), (f"nowhere-{topic}", (0,))))) == {
        (producer_id, topic, 0, 0), (producer_id, topic, 5, UNKNOWN_TOPIC_OR_PARTITION),
        (producer_id, f"nowhere-{topic}", 0, UNKNOWN_TOPIC_OR_PARTITION)}
    assert [row[1:] for row in producer_states(bootstrap, topic, 0)] == [(epoch, 2, coordinator_epoch, -1)]
    assert [row[-1] for row in producer_states(bootstrap, topic, 1)] == [0]  # still open there
    assert read_all(bootstrap, topic, 1, "read_committed") == []

    producer.produce(topic, value=b"after", partition=0)
    producer.commit_transaction(TIMEOUT_S)
    assert sorted(read_all(bootstrap, topic, 2, "read_committed", expected=2)) == ["after", "b0"]
    assert sorted(read_all(bootstrap, topic, 2, "read_uncommitted", expected=5)) == ["a0", "a1", "a2", "after", "b0"]


@pytest.mark.differential
def test_markers_are_refused_for_old_epochs_and_coordinators_and_retried_from_transaction_version_2(
        bootstrap: str) -> None:
    """Kafka 4.4's checks of a marker against the producer's state on the partition: an older epoch is
    INVALID_PRODUCER_EPOCH (and the same epoch from transaction version 2, unless no transaction is open there), an
    older coordinator epoch TRANSACTION_COORDINATOR_FENCED; a negative producer id or epoch, or transaction version
    -1, UNKNOWN_SERVER_ERROR. A newer epoch moves the producer to it, sequences starting over; two markers of one
    producer are answered together; the coordinator epoch of a marker is the producer's from then on."""
    topic = new_topic(bootstrap)
    producer = transactional_producer(bootstrap, f"tx-{uuid.uuid4().hex[:6]}")
    producer.begin_transaction()
    producer.produce(topic, value=b"a", partition=0)
    producer.commit_transaction(TIMEOUT_S)
    [(producer_id, epoch, last_sequence, coordinator_epoch, _)] = committed_producer_states(bootstrap, topic, 0)
    assert last_sequence == 0 and coordinator_epoch >= 0

    def codes(module: Any, producer: int, producer_epoch: int, coordinator: int, **fields: int) -> set[int]:
        return {code for *_, code in written(bootstrap, module, marker(
            module, producer, producer_epoch, False, coordinator, ((topic, (0,)),), **fields))}

    assert codes(markers_v1, producer_id, epoch, coordinator_epoch - 1) == {TRANSACTION_COORDINATOR_FENCED}
    assert codes(markers_v1, producer_id, epoch, coordinator_epoch) == {0}  # nothing open: a marker for nothing
    assert codes(markers_v2, producer_id, epoch, coordinator_epoch, transaction_version=2) == {0}
    assert codes(markers_v2, producer_id, epoch + 1, coordinator_epoch, transaction_version=2) == {0}
    assert [row[1:3] for row in producer_states(bootstrap, topic, 0)] == [(epoch + 1, -1)]
    for module, version in ((markers_v1, 0), (markers_v2, 0), (markers_v2, 2)):
        assert codes(module, producer_id, epoch, coordinator_epoch, **(
            {"transaction_version": version} if module is markers_v2 else {})) == {INVALID_PRODUCER_EPOCH}
    assert codes(markers_v2, producer_id, epoch + 1, coordinator_epoch, transaction_version=3) == {0}
    assert codes(markers_v2, producer_id, epoch + 1, coordinator_epoch, transaction_version=-1) == {
        UNKNOWN_SERVER_ERROR}
    assert codes(markers_v1, -1, 0, coordinator_epoch) == {UNKNOWN_SERVER_ERROR}
    assert codes(markers_v1, producer_id, -1, coordinator_epoch) == {UNKNOWN_SERVER_ERROR}
    assert codes(markers_v1, producer_id + 1000, -1, coordinator_epoch) == {UNKNOWN_SERVER_ERROR}

    stranger = producer_id + 2000
    assert written(bootstrap, markers_v1, marker(markers_v1, stranger, 0, False, 0, ((topic, (0,)),)),
                   marker(markers_v1, stranger, 0, False, 0, ((topic, (1,)),))) == {
        (stranger, topic, 0, 0), (stranger, topic, 1, 0)}
    assert written(bootstrap, markers_v1, marker(markers_v1, stranger + 1, 3, True, coordinator_epoch + 9, (
        (topic, (0,)),))) == {(stranger + 1, topic, 0, 0)}
    states = {row[0]: row[1:] for row in producer_states(bootstrap, topic, 0)}
    assert states[stranger] == (0, -1, 0, -1) and states[stranger + 1] == (3, -1, coordinator_epoch + 9, -1)
    assert written(bootstrap, markers_v1) == set()
    nothing = one_request(bootstrap, make(markers_v1.WriteTxnMarkersRequest, markers=(
        marker(markers_v1, stranger, 0, False, 0, ((topic, ()),)),)))
    assert nothing.markers == ()  # a marker naming no partition is not answered about


@pytest.mark.logwright_only(reason="Kafka 4.4 never answers a marker naming a partition twice")
def test_a_partition_named_twice_in_one_marker_gets_one_marker(bootstrap: str) -> None:
    """Kafka 4.4 never answers it; here the partition gets one marker. A marker naming 30,000 partitions, all but one
    unknown, is answered about each (the broker lets other requests run between slices of them)."""
    topic = new_topic(bootstrap, partitions=1)
    assert written(bootstrap, markers_v1, marker(markers_v1, 7, 0, False, 0, ((topic, (0, 0)), (topic, (0,))))) == {
        (7, topic, 0, 0)}
    assert read_all(bootstrap, topic, 1, "read_uncommitted") == []
    [(producer_id, epoch, *_)] = producer_states(bootstrap, topic, 0)
    assert (producer_id, epoch) == (7, 0)

    many = written(bootstrap, markers_v1, marker(markers_v1, 7, 0, True, 0, ((topic, tuple(range(30_000))),)))
    assert len(many) == 30_000 and (7, topic, 0, 0) in many
    assert {code for *_, code in many if _[2] != 0} == {UNKNOWN_TOPIC_OR_PARTITION}


def producer_states(bootstrap: str, topic: str, partition: int) -> list[tuple[int, int, int, int, int]]:
    """``(producer id, epoch, last sequence, coordinator epoch, open transaction's first offset)`` per producer."""
    asked = make(describe_producers.TopicRequest, name=topic, partition_indexes=(partition,))
    [entry] = one_request(bootstrap, make(describe_producers.DescribeProducersRequest, topics=(asked,))).topics
    [answer] = entry.partitions
    assert int(answer.error_code) == 0, answer
    return sorted((int(state.producer_id), state.producer_epoch, state.last_sequence, state.coordinator_epoch,
                   state.current_txn_start_offset) for state in answer.active_producers)


def committed_producer_states(bootstrap: str, topic: str, partition: int) -> list[tuple[int, int, int, int, int]]:
    """The producers once no transaction is open (Kafka writes the markers after answering EndTxn)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        states = producer_states(bootstrap, topic, partition)
        if all(state[-1] == -1 and state[3] >= 0 for state in states) or time.monotonic() > deadline:
            return states
        time.sleep(0.05)
