"""Incremental fetch sessions (KIP-227), answered as Apache Kafka 4.4 answers them (``--against kafka``).

Raw Fetch v12 (topics by name) and v13 (by id) requests over a fresh connection each, as sessions outlive
connections: a full fetch of epoch 0 opens a session, incremental fetches name only what changed and are answered
only partitions with records, errors or moved offsets, in the session's order (a partition answered with records
goes last); a duplicate epoch, a session never opened or closed, and a change of topic naming are refused.
"""

from __future__ import annotations

import asyncio
import datetime
import random
import threading
import time
import uuid
from typing import Any

import pytest
from kio.schema.delete_records.v2 import request as delete_records
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.fetch.v13 import request as fetch_v13
from logwright.compat.registry import make
from logwright.compat.wire.record_batch import Record, build_batch

from .broker_process import BrokerProcess
from .test_controller_timeouts import ZERO_UUID, ask, delete
from .test_metadata_checks import topic_id
from .test_produce_checks import _topic, codes, produce

pytestmark = pytest.mark.differential

NONE, UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE, UNKNOWN_LEADER_EPOCH = 0, 3, 1, 75
FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR = 70, 71, 106
BIG = 1_000_000


@pytest.fixture
def topic(bootstrap: str) -> str:
    """Three partitions of two one-record batches each."""
    name = _topic(bootstrap, "fetch-sessions", partitions=3)
    for partition in range(3):
        for _ in range(2):
            append(bootstrap, name, partition)
    return name


def append(bootstrap: str, topic: str, partition: int) -> None:
    batch = build_batch([Record(0, int(time.time() * 1000), None, b"value", ())])
    assert codes(produce(bootstrap, topic, batch, partition=partition))[0][0] == NONE


def fetch(bootstrap: str, topic: str | uuid.UUID, partitions: list[tuple[int, int]], session: tuple[int, int],
          forgotten: tuple[int, ...] = (), wait_ms: int = 10, min_bytes: int = 0, leader_epoch: int = -1,
          isolation: int = 0) -> tuple[int, int, list[tuple[int, int, int, int, int]]]:
    """Fetch ``(partition, offset)`` of ``topic`` (v13 when it is a topic id, else v12) in ``session`` (id,
    epoch), forgetting ``forgotten``: the answer's error, its session id and per partition (index, error, high
    watermark, bytes of records, log start offset)."""
    version = fetch_v13 if isinstance(topic, uuid.UUID) else fetch_v12
    named: dict[str, Any] = {"topic_id": topic} if isinstance(topic, uuid.UUID) else {"topic": topic}
    fields: dict[str, Any] = {"cluster_id": None} if version is fetch_v13 else {}
    (answer,) = ask(bootstrap, make(
        version.FetchRequest, replica_id=-1, max_wait=datetime.timedelta(milliseconds=wait_ms), min_bytes=min_bytes,
        max_bytes=BIG, isolation_level=isolation, session_id=session[0], session_epoch=session[1], rack_id="", **fields,
        forgotten_topics_data=(make(version.ForgottenTopic, partitions=forgotten, **named),) if forgotten else (),
        topics=(make(version.FetchTopic, **named, partitions=tuple(
            make(version.FetchPartition, partition=partition, current_leader_epoch=leader_epoch, fetch_offset=offset,
                 last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=BIG)
            for partition, offset in partitions)),) if partitions else ()))
    found = [(int(p.partition_index), int(p.error_code), int(p.high_watermark), len(p.records or b""),
              int(p.log_start_offset)) for t in answer.responses for p in t.partitions]
    return int(answer.error_code), int(answer.session_id), found


def indexes(found: list[tuple[int, int, int, int, int]]) -> list[tuple[int, int, int, bool]]:
    """Per partition (index, error, high watermark, whether it carries records)."""
    return [(index, error, high_watermark, size > 0) for index, error, high_watermark, size, _ in found]


def test_an_incremental_fetch_is_answered_only_what_changed(bootstrap: str, topic: str) -> None:
    error, session, found = fetch(bootstrap, topic, [(0, 0), (1, 2), (2, 2)], session=(0, 0))
    assert (error, session != 0, indexes(found)) == (
        NONE, True, [(0, NONE, 2, True), (1, NONE, 2, False), (2, NONE, 2, False)])
    assert fetch(bootstrap, topic, [(0, 2)], session=(session, 1)) == (NONE, session, [])  # nothing moved
    append(bootstrap, topic, 1)
    error, answered, found = fetch(bootstrap, topic, [], session=(session, 2))
    assert (error, answered, indexes(found)) == (NONE, session, [(1, NONE, 3, True)])
    assert fetch(bootstrap, topic, [], session=(session, 2)) == (INVALID_FETCH_SESSION_EPOCH, 0, [])  # a duplicate
    assert fetch(bootstrap, topic, [], session=(session, 4)) == (INVALID_FETCH_SESSION_EPOCH, 0, [])
    error, answered, found = fetch(bootstrap, topic, [(1, 3), (2, 5)], session=(session, 3))
    assert (error, answered, indexes(found)) == (NONE, session, [(2, OFFSET_OUT_OF_RANGE, -1, False)])
    error, answered, found = fetch(bootstrap, topic, [(2, 2)], session=(session, 4))  # the error gone: answered
    assert (error, answered, indexes(found)) == (NONE, session, [(2, NONE, 2, False)])
    assert fetch(bootstrap, topic, [], session=(session, 5)) == (NONE, session, [])


def test_a_partition_answered_with_records_goes_last(bootstrap: str, topic: str) -> None:
    _, session, _ = fetch(bootstrap, topic, [(0, 2), (1, 2), (2, 2)], session=(0, 0))
    append(bootstrap, topic, 0)
    _, _, found = fetch(bootstrap, topic, [], session=(session, 1))
    assert indexes(found) == [(0, NONE, 3, True)]
    append(bootstrap, topic, 1)
    _, _, found = fetch(bootstrap, topic, [], session=(session, 2))  # 0 asked from 2 still: records again
    assert indexes(found) == [(1, NONE, 3, True), (0, NONE, 3, True)]
    _, _, found = fetch(bootstrap, topic, [(0, 0), (2, 0)], session=(session, 3))
    assert indexes(found) == [(2, NONE, 2, True), (1, NONE, 3, True), (0, NONE, 3, True)]


def test_forgotten_partitions_leave_the_session_and_an_empty_one_closes(bootstrap: str, topic: str) -> None:
    _, session, _ = fetch(bootstrap, topic, [(0, 2), (1, 2)], session=(0, 0))
    append(bootstrap, topic, 0)
    append(bootstrap, topic, 1)
    error, answered, found = fetch(bootstrap, topic, [], session=(session, 1), forgotten=(0,))
    assert (error, answered, indexes(found)) == (NONE, session, [(1, NONE, 3, True)])
    error, answered, found = fetch(bootstrap, topic, [(2, 0)], session=(session, 2), forgotten=(1, 2))
    assert (error, answered, indexes(found)) == (NONE, 0, [(2, NONE, 2, True)])  # left empty: answered without one
    assert fetch(bootstrap, topic, [], session=(session, 3)) == (FETCH_SESSION_ID_NOT_FOUND, 0, [])


def test_a_full_fetch_closes_the_session_it_names(bootstrap: str, topic: str) -> None:
    _, first, _ = fetch(bootstrap, topic, [(0, 2)], session=(0, 0))
    error, answered, found = fetch(bootstrap, topic, [(1, 2)], session=(first, -1))  # closed, none opened
    assert (error, answered, indexes(found)) == (NONE, 0, [(1, NONE, 2, False)])
    assert fetch(bootstrap, topic, [], session=(first, 1)) == (FETCH_SESSION_ID_NOT_FOUND, 0, [])
    _, second, _ = fetch(bootstrap, topic, [(0, 2)], session=(0, 0))
    error, third, found = fetch(bootstrap, topic, [(2, 2)], session=(second, 0))  # closed, another opened
    assert (error, third not in (0, second), indexes(found)) == (NONE, True, [(2, NONE, 2, False)])
    assert fetch(bootstrap, topic, [], session=(second, 1)) == (FETCH_SESSION_ID_NOT_FOUND, 0, [])
    assert fetch(bootstrap, topic, [], session=(third, 1)) == (NONE, third, [])


def test_a_log_start_moved_is_answered_though_nothing_else_moved(bootstrap: str, topic: str) -> None:
    _, session, _ = fetch(bootstrap, topic, [(0, 2), (1, 2), (2, 2)], session=(0, 0))
    assert fetch(bootstrap, topic, [], session=(session, 1)) == (NONE, session, [])
    (answer,) = ask(bootstrap, make(delete_records.DeleteRecordsRequest, timeout=datetime.timedelta(seconds=5), topics=(
        make(delete_records.DeleteRecordsTopic, name=topic, partitions=(
            make(delete_records.DeleteRecordsPartition, partition_index=1, offset=1),)),)))
    assert [int(p.error_code) for t in answer.topics for p in t.partitions] == [NONE]
    assert fetch(bootstrap, topic, [], session=(session, 2)) == (NONE, session, [(1, NONE, 2, 0, 1)])
    assert fetch(bootstrap, topic, [], session=(session, 3)) == (NONE, session, [])


def test_a_partition_named_again_is_read_again_though_nothing_moved(bootstrap: str, topic: str) -> None:
    _, session, _ = fetch(bootstrap, topic, [(0, 2), (1, 2)], session=(0, 0))
    assert fetch(bootstrap, topic, [], session=(session, 1)) == (NONE, session, [])
    error, answered, found = fetch(bootstrap, topic, [(0, 2)], session=(session, 2), leader_epoch=5)
    assert (error, answered, indexes(found)) == (NONE, session, [(0, UNKNOWN_LEADER_EPOCH, -1, False)])
    error, answered, found = fetch(bootstrap, topic, [(0, 2)], session=(session, 3), leader_epoch=0)
    assert (error, answered, indexes(found)) == (NONE, session, [(0, NONE, 2, False)])


def test_an_unknown_isolation_level_fails_the_partitions_named_after_the_session_moved_on(bootstrap: str,
                                                                                          topic: str) -> None:
    """Kafka takes the session's part of a request before it meets the isolation level it does not know: the answer
    echoes the session id given and fails the partitions the request names; the epoch has moved on and a partition
    named has joined."""
    unknown = -1
    _, session, _ = fetch(bootstrap, topic, [(0, 2), (1, 2)], session=(0, 0))
    assert fetch(bootstrap, topic, [], session=(session, 1), isolation=2) == (unknown, session, [])
    error, answered, found = fetch(bootstrap, topic, [(2, 0)], session=(session, 2), isolation=2)
    assert (error, answered, indexes(found)) == (unknown, session, [(2, unknown, -1, False)])
    assert fetch(bootstrap, topic, [], session=(session, 2)) == (INVALID_FETCH_SESSION_EPOCH, 0, [])
    error, answered, found = fetch(bootstrap, topic, [], session=(session, 3))
    assert (error, answered, indexes(found)) == (NONE, session, [(2, NONE, 2, True)])
    error, answered, found = fetch(bootstrap, topic, [(0, 0)], session=(session, 0), isolation=2)  # closes it
    assert (error, answered, indexes(found)) == (unknown, session, [(0, unknown, -1, False)])
    assert fetch(bootstrap, topic, [], session=(session, 4)) == (FETCH_SESSION_ID_NOT_FOUND, 0, [])
    assert fetch(bootstrap, topic, [(1, 0)], session=(12345, 1), isolation=2) == (FETCH_SESSION_ID_NOT_FOUND, 0, [])
    error, answered, found = fetch(bootstrap, topic, [(1, 0)], session=(12345, -1), isolation=2)
    assert (error, answered, indexes(found)) == (unknown, 12345, [(1, unknown, -1, False)])


def test_a_long_poll_of_a_session_wakes_for_records_on_a_partition_it_did_not_name(bootstrap: str, topic: str) -> None:
    _, session, _ = fetch(bootstrap, topic, [(0, 2), (1, 2), (2, 2)], session=(0, 0))
    assert fetch(bootstrap, topic, [], session=(session, 1)) == (NONE, session, [])
    timer = threading.Timer(0.5, append, (bootstrap, topic, 2))
    timer.start()
    started = time.monotonic()
    try:
        error, answered, found = fetch(bootstrap, topic, [], session=(session, 2), wait_ms=20_000, min_bytes=1)
    finally:
        timer.join()
    assert (error, answered, indexes(found)) == (NONE, session, [(2, NONE, 3, True)])
    assert time.monotonic() - started < 10


def test_a_session_names_topics_as_it_began(bootstrap: str, topic: str) -> None:
    topic_uuid = topic_id(bootstrap, topic)
    _, by_name, _ = fetch(bootstrap, topic, [(0, 2)], session=(0, 0))
    assert fetch(bootstrap, topic_uuid, [], session=(by_name, 1)) == (FETCH_SESSION_TOPIC_ID_ERROR, 0, [])
    error, by_id, found = fetch(bootstrap, topic_uuid, [(0, 0), (1, 2)], session=(0, 0))
    assert (error, by_id != 0, indexes(found)) == (NONE, True, [(0, NONE, 2, True), (1, NONE, 2, False)])
    assert fetch(bootstrap, topic, [], session=(by_id, 1)) == (FETCH_SESSION_TOPIC_ID_ERROR, 0, [])
    append(bootstrap, topic, 1)
    error, answered, found = fetch(bootstrap, topic_uuid, [(0, 2)], session=(by_id, 1))
    assert (error, answered, indexes(found)) == (NONE, by_id, [(1, NONE, 3, True)])


def test_a_session_of_a_topic_deleted_answers_its_partitions_unknown(bootstrap: str) -> None:
    name = _topic(bootstrap, f"fetch-sessions-gone-{uuid.uuid4().hex[:6]}", partitions=2)
    append(bootstrap, name, 0)
    _, session, _ = fetch(bootstrap, name, [(0, 1), (1, 0)], session=(0, 0))
    assert delete(bootstrap, [(name, ZERO_UUID)], 30_000) == [(name, NONE)]
    epoch, found = 1, []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # Kafka's metadata cache learns of the deletion a moment later
        error, answered, found = fetch(bootstrap, name, [], session=(session, epoch))
        assert (error, answered) == (NONE, session)
        epoch += 1
        if found:
            break
        time.sleep(0.1)
    assert indexes(found) == [(0, UNKNOWN_TOPIC_OR_PARTITION, -1, False), (1, UNKNOWN_TOPIC_OR_PARTITION, -1, False)]


def test_a_kafka_python_consumer_reads_every_record_once_through_its_session(bootstrap: str) -> None:
    """kafka-python 3 opens a session with its first Fetch and then fetches incrementally: every record of 20
    partitions, produced in three rounds while it reads, arrives once and in order, through one session."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    name = _topic(bootstrap, f"fetch-sessions-client-{uuid.uuid4().hex[:6]}", partitions=20)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100)
    consumer.assign([TopicPartition(name, index) for index in range(20)])
    consumer.seek_to_beginning()
    seen: dict[int, list[int]] = {index: [] for index in range(20)}
    session_ids: set[int] = set()
    try:
        for round_ in range(3):
            for index in range(20):
                for number in range(round_ * 5, round_ * 5 + 5 + index % 3):
                    producer.send(name, value=b"%d" % number, partition=index)
            producer.flush()
            wanted = sum(len(range(round_ * 5, round_ * 5 + 5 + index % 3)) for index in range(20))
            got, deadline = 0, time.monotonic() + 30
            while got < wanted and time.monotonic() < deadline:
                for partition, records in consumer.poll(timeout_ms=200).items():
                    seen[partition.partition] += [int(record.value) for record in records]
                    got += len(records)
                session_ids |= {handler.next_metadata.session_id
                                for handler in consumer._fetcher._session_handlers.values()}
    finally:
        consumer.close()
        producer.close()
    for index in range(20):
        expected = [n for round_ in range(3) for n in range(round_ * 5, round_ * 5 + 5 + index % 3)]
        assert seen[index] == expected, index
    assert len(session_ids - {0}) == 1, session_ids


def test_the_broker_counts_its_sessions_as_kafkas_metrics_do(broker: BrokerProcess) -> None:
    """LogwrightBrokerStats reports NumIncrementalFetchSessions and NumIncrementalFetchPartitionsCached."""
    from logwright.client.connection import Connection

    async def counted() -> tuple[int, int]:
        connection = await Connection.open(broker.bootstrap, "stats")
        try:
            answer = await connection.extension(32007, {}, "broker stats")
        finally:
            await connection.close()
        return answer["fetch_sessions"], answer["fetch_session_partitions"]

    name = _topic(broker.bootstrap, "fetch-sessions-stats", partitions=3)
    assert asyncio.run(counted()) == (0, 0)
    _, first, _ = fetch(broker.bootstrap, name, [(0, 0), (1, 0), (2, 0)], session=(0, 0))
    _, second, _ = fetch(broker.bootstrap, name, [(0, 0)], session=(0, 0))
    assert asyncio.run(counted()) == (2, 4)
    fetch(broker.bootstrap, name, [], session=(first, 1), forgotten=(0, 1))
    assert asyncio.run(counted()) == (2, 2)
    fetch(broker.bootstrap, name, [], session=(second, -1))
    assert asyncio.run(counted()) == (1, 1)


def test_a_consumer_starts_a_new_session_after_a_restart_and_loses_nothing(broker: BrokerProcess) -> None:
    """Sessions live in memory, as on Kafka: after a SIGKILL and restart the consumer's next incremental fetch is
    FETCH_SESSION_ID_NOT_FOUND, it opens a new session with a full fetch and reads on from where it was."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    bootstrap = broker.bootstrap
    name = _topic(bootstrap, "fetch-sessions-restart", partitions=5)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, fetch_max_wait_ms=100,
                             reconnect_backoff_ms=50, reconnect_backoff_max_ms=200)
    consumer.assign([TopicPartition(name, index) for index in range(5)])
    consumer.seek_to_beginning()
    seen: dict[int, list[int]] = {index: [] for index in range(5)}
    sessions: list[int] = []

    def produce_and_read(first: int) -> None:
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for index in range(5):
            for number in range(first, first + 10):
                producer.send(name, value=b"%d" % number, partition=index)
        producer.flush()
        producer.close()
        deadline = time.monotonic() + 30
        while any(len(values) < first + 10 for values in seen.values()) and time.monotonic() < deadline:
            for partition, records in consumer.poll(timeout_ms=200).items():
                seen[partition.partition] += [int(record.value) for record in records]
            session = next(iter(consumer._fetcher._session_handlers.values())).next_metadata.session_id
            if session and (not sessions or sessions[-1] != session):
                sessions.append(session)

    try:
        produce_and_read(0)
        broker.kill()
        broker.start()
        produce_and_read(10)
    finally:
        consumer.close()
    assert seen == {index: list(range(20)) for index in range(5)}
    assert len(sessions) == 2 and sessions[0] != sessions[1], sessions


class SessionModel:
    """KIP-227's answer rules, written out apart from the broker's: per partition of the session (in its order)
    the fetch offset asked and the high watermark and log start last answered."""

    def __init__(self, asked: dict[int, int], high_watermarks: dict[int, int]) -> None:
        self.partitions = {index: [offset, high_watermarks[index], 0] for index, offset in asked.items()}
        self.epoch = 1

    def incremental(self, asked: dict[int, int], forgotten: set[int], high_watermarks: dict[int, int]
                    ) -> list[tuple[int, int, bool]] | None:
        """The answer (index, high watermark, records or not), or None when the session closes (left empty)."""
        for index, offset in asked.items():
            if index in self.partitions:
                self.partitions[index][0] = offset
            else:
                self.partitions[index] = [offset, -1, -1]
        for index in forgotten:
            self.partitions.pop(index, None)
        if not self.partitions:
            return None
        self.epoch += 1
        answer = []
        for index, cached in list(self.partitions.items()):
            high_watermark = high_watermarks[index]
            records = cached[0] < high_watermark
            if records or cached[1] != high_watermark or cached[2] != 0:
                cached[1], cached[2] = high_watermark, 0
                answer.append((index, high_watermark, records))
                if records:
                    self.partitions[index] = self.partitions.pop(index)
        return answer


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_incremental_fetches_are_answered_by_the_rules(bootstrap: str, seed: int) -> None:
    """Random produce, update, forget and duplicate steps on one session of six partitions, each answer compared with
    `SessionModel` (on Kafka this checks the model)."""
    rng = random.Random(seed)
    partitions = 6
    name = _topic(bootstrap, f"fetch-sessions-random-{seed}", partitions=partitions)
    high_watermarks = dict.fromkeys(range(partitions), 0)
    asked = {index: 0 for index in rng.sample(range(partitions), 3)}
    error, session, _ = fetch(bootstrap, name, sorted(asked.items()), session=(0, 0))
    assert error == NONE and session != 0
    model = SessionModel(asked, high_watermarks)
    for step in range(40):
        for index in rng.sample(range(partitions), rng.randint(0, 2)):
            append(bootstrap, name, index)
            high_watermarks[index] += 1
        if rng.random() < 0.1:  # a duplicate of the last request: refused, nothing changes
            assert fetch(bootstrap, name, [], session=(session, model.epoch - 1))[:2] == (
                INVALID_FETCH_SESSION_EPOCH, 0), step
            continue
        update = {index: rng.randint(0, high_watermarks[index])
                  for index in rng.sample(range(partitions), rng.randint(0, 2))}
        forgotten = set(rng.sample(sorted(set(model.partitions) - set(update)), 1)) if rng.random() < 0.15 else set()
        epoch = model.epoch
        expected = model.incremental(update, forgotten, high_watermarks)
        if expected is None:  # forgot its last partition: closed; start another
            break
        error, answered, found = fetch(bootstrap, name, sorted(update.items()), session=(session, epoch),
                                       forgotten=tuple(sorted(forgotten)))
        assert (error, answered) == (NONE, session), step
        assert [(index, high_watermark, size > 0) for index, error, high_watermark, size, _ in found] == expected, step


def test_sessions_hold_at_most_200_000_partitions_in_all(broker: BrokerProcess) -> None:
    """logwright's own bound (``logwright.fetch.session.cache.partitions``; Kafka counts only sessions): a full fetch
    of more made-up partitions than the cache may hold is answered without a session, and an incremental one that
    would grow a session past it closes it."""
    bootstrap = broker.bootstrap
    made_up = f"fetch-sessions-made-up-{uuid.uuid4().hex[:6]}"
    error, session, found = fetch(bootstrap, made_up, [(index, 0) for index in range(200_001)], session=(0, 0))
    assert (error, session, len(found)) == (NONE, 0, 200_001)
    assert {entry[1] for entry in found} == {UNKNOWN_TOPIC_OR_PARTITION}
    error, session, found = fetch(bootstrap, made_up, [(index, 0) for index in range(150_000)], session=(0, 0))
    assert error == NONE and session != 0 and len(found) == 150_000
    assert fetch(bootstrap, made_up, [(index, 0) for index in range(150_000, 200_001)], session=(session, 1)) == (
        FETCH_SESSION_ID_NOT_FOUND, 0, [])
    assert fetch(bootstrap, made_up, [], session=(session, 1)) == (FETCH_SESSION_ID_NOT_FOUND, 0, [])


@pytest.mark.parametrize(("started_with", "slots"), [({"max.incremental.fetch.session.cache.slots": "7"}, 7),
                                                     ({"max.incremental.fetch.session.cache.slots": "16"}, 16)],
                         indirect=["started_with"])
def test_the_slots_are_divided_among_eight_shards(started_with: str, slots: int) -> None:
    """Kafka divides ``max.incremental.fetch.session.cache.slots`` among 8 shards: 7 slots hold no session at all;
    16 hold two in each shard, so the 17th full fetch finds its shard full of sessions too young to evict."""
    name = _topic(started_with, "fetch-sessions-slots", partitions=1)
    opened = [fetch(started_with, name, [(0, 0)], session=(0, 0))[1] for _ in range(17)]
    if slots < 8:
        assert opened == [0] * 17
    else:
        assert 0 not in opened[:16] and len(set(opened[:16])) == 16 and opened[16] == 0, opened
