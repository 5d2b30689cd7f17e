"""Kafka transactions end to end with confluent-kafka (librdkafka): exactly-once producers, read_committed consumers.

Commits and aborts across partitions with consumer offsets, a consume-transform-produce loop, a zombie
fenced by a newer producer with the same ``transactional.id``, the broker's transaction timeout on the
manual clock, and a SIGKILL in the middle of a transaction.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.describe_producers.v0 import request as describe_producers
from logwright.compat.registry import make
from logwright.testing.clients import one_request

from .broker_process import BrokerProcess
from .test_share_groups import advance_clock, check_consistent

TIMEOUT_S = 30


def new_topic(bootstrap: str, partitions: int = 2) -> str:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)
    return topic


def transactional_producer(bootstrap: str, transactional_id: str, timeout_ms: int = 60_000) -> Producer:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": timeout_ms})
    producer.init_transactions(TIMEOUT_S)
    return producer


def send(producer: Producer, topic: str, prefix: str, count: int, partitions: int = 2) -> None:
    """``count`` values ``prefix0``, ``prefix1``, ... spread over the partitions in turn."""
    for index in range(count):
        producer.produce(topic, value=f"{prefix}{index}".encode(), partition=index % partitions)


def committed_offset(bootstrap: str, group: str, topic: str, partition: int) -> int:
    checker = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [committed] = checker.committed([TopicPartition(topic, partition)], TIMEOUT_S)
    finally:
        checker.close()
    return int(committed.offset)


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str, expected: int | None = None,
             idle_polls: int = 3, at_least: int = 0) -> list[str]:
    """Every value a fresh consumer with ``isolation`` reads from the start: once ``expected`` records arrived,
    or else ``idle_polls`` empty polls after the ``at_least`` first ones. Records it waits for are waited for up
    to a minute, never cut short by empty polls: a fresh consumer's first fetch can take seconds on a loaded
    machine (and on Kafka a read_committed one waits for the markers the coordinator writes after EndTxn)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                         "isolation.level": isolation, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, index, 0) for index in range(partitions)])
    values: list[str] = []
    idle = 0
    wanted = at_least if expected is None else expected
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if len(values) >= wanted and (expected is not None or idle >= idle_polls):
                break
            message = consumer.poll(1.0)
            if message is None:
                idle += 1
                continue
            assert message.error() is None, message.error()
            values.append(message.value().decode())
            idle = 0
    finally:
        consumer.close()
    return values


@pytest.mark.differential
def test_committed_transaction_spans_partitions_and_commits_offsets(bootstrap: str) -> None:
    topic, source = new_topic(bootstrap), new_topic(bootstrap, 1)
    group = f"txn-group-{uuid.uuid4().hex[:6]}"
    producer = transactional_producer(bootstrap, f"tx-{uuid.uuid4().hex[:6]}")
    producer.begin_transaction()
    send(producer, topic, "v", 10)
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group}).consumer_group_metadata()
    producer.send_offsets_to_transaction([TopicPartition(source, 0, 7)], metadata, TIMEOUT_S)
    producer.commit_transaction(TIMEOUT_S)
    assert sorted(read_all(bootstrap, topic, 2, "read_committed", 10)) == sorted(f"v{i}" for i in range(10))
    assert committed_offset(bootstrap, group, source, 0) == 7


@pytest.mark.differential
def test_aborted_transaction_is_invisible_to_read_committed_only(bootstrap: str) -> None:
    topic = new_topic(bootstrap)
    group = f"txn-group-{uuid.uuid4().hex[:6]}"
    producer = transactional_producer(bootstrap, f"tx-{uuid.uuid4().hex[:6]}")
    producer.begin_transaction()
    send(producer, topic, "kept", 4)
    producer.commit_transaction(TIMEOUT_S)
    producer.begin_transaction()
    send(producer, topic, "dropped", 4)
    metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group}).consumer_group_metadata()
    producer.send_offsets_to_transaction([TopicPartition(topic, 0, 3)], metadata, TIMEOUT_S)
    producer.flush(TIMEOUT_S)
    producer.abort_transaction(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, value=b"after", partition=0)
    producer.commit_transaction(TIMEOUT_S)
    committed = read_all(bootstrap, topic, 2, "read_committed", 5)
    assert sorted(committed) == ["after", "kept0", "kept1", "kept2", "kept3"]
    uncommitted = read_all(bootstrap, topic, 2, "read_uncommitted", 9)
    assert sorted(uncommitted) == sorted(["after", *(f"kept{i}" for i in range(4)),
                                          *(f"dropped{i}" for i in range(4))])
    assert committed_offset(bootstrap, group, topic, 0) < 0, "an aborted transaction's offsets must not be committed"


@pytest.mark.differential
def test_read_committed_stops_at_an_open_transaction(bootstrap: str) -> None:
    topic = new_topic(bootstrap, 1)
    producer = transactional_producer(bootstrap, f"tx-{uuid.uuid4().hex[:6]}")
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, value=b"before", partition=0)
    plain.flush(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, value=b"open", partition=0)
    producer.flush(TIMEOUT_S)
    plain.produce(topic, value=b"behind", partition=0)
    plain.flush(TIMEOUT_S)
    assert read_all(bootstrap, topic, 1, "read_committed", idle_polls=2, at_least=1) == ["before"]
    assert read_all(bootstrap, topic, 1, "read_uncommitted", 3) == ["before", "open", "behind"]
    producer.commit_transaction(TIMEOUT_S)
    assert read_all(bootstrap, topic, 1, "read_committed", 3) == ["before", "open", "behind"]


@pytest.mark.differential
def test_consume_transform_produce_is_exactly_once(bootstrap: str) -> None:
    source, sink = new_topic(bootstrap, 1), new_topic(bootstrap, 1)
    group = f"etl-{uuid.uuid4().hex[:6]}"
    feeder = Producer({"bootstrap.servers": bootstrap})
    for index in range(30):
        feeder.produce(source, value=f"n{index}".encode(), partition=0)
    feeder.flush(TIMEOUT_S)
    producer = transactional_producer(bootstrap, f"etl-{uuid.uuid4().hex[:6]}")
    aborted_once = False
    processed = 0
    while processed < 30:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        consumer.subscribe([source])
        try:
            batch = consumer.consume(10, TIMEOUT_S)
            assert batch, "the source ran dry before 30 records were processed"
            producer.begin_transaction()
            for message in batch:
                producer.produce(sink, value=message.value().upper(), partition=0)
            next_offset = batch[-1].offset() + 1
            producer.send_offsets_to_transaction([TopicPartition(source, 0, next_offset)],
                                                 consumer.consumer_group_metadata(), TIMEOUT_S)
            if processed >= 10 and not aborted_once:
                aborted_once = True  # a failure mid-batch: nothing of it may show, and it is processed again
                producer.abort_transaction(TIMEOUT_S)
            else:
                producer.commit_transaction(TIMEOUT_S)
                processed = next_offset
        finally:
            consumer.close()
    assert read_all(bootstrap, sink, 1, "read_committed", 30) == [f"N{index}" for index in range(30)]


@pytest.mark.differential
def test_a_newer_producer_fences_the_zombie_and_aborts_its_transaction(bootstrap: str) -> None:
    topic = new_topic(bootstrap)
    transactional_id = f"tx-{uuid.uuid4().hex[:6]}"
    zombie = transactional_producer(bootstrap, transactional_id)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie", partition=0)
    zombie.flush(TIMEOUT_S)
    successor = transactional_producer(bootstrap, transactional_id)
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(TIMEOUT_S)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower(), raised.value
    successor.begin_transaction()
    successor.produce(topic, value=b"successor", partition=1)
    successor.commit_transaction(TIMEOUT_S)
    assert read_all(bootstrap, topic, 2, "read_committed", 1) == ["successor"]


def test_transaction_timeout_on_the_broker_clock_aborts_and_fences(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = new_topic(bootstrap, 1)
    producer = transactional_producer(bootstrap, "tx-timeout", timeout_ms=60_000)
    producer.begin_transaction()
    producer.produce(topic, value=b"late", partition=0)
    producer.flush(TIMEOUT_S)
    advance_clock(bootstrap, 59_000)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, value=b"behind", partition=0)
    plain.flush(TIMEOUT_S)
    assert read_all(bootstrap, topic, 1, "read_committed", idle_polls=2) == [], "still open before its timeout"
    advance_clock(bootstrap, 1_000)
    assert read_all(bootstrap, topic, 1, "read_committed", 1) == ["behind"]
    with pytest.raises(KafkaException):
        producer.commit_transaction(TIMEOUT_S)
    with pytest.raises(KafkaException):
        transactional_producer(bootstrap, "tx-refused", timeout_ms=900_001)
    check_consistent(clock_broker)


def test_sigkill_mid_transaction_keeps_committed_data_and_times_out_the_open_one(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = new_topic(bootstrap, 2)
    producer = transactional_producer(bootstrap, "tx-crash", timeout_ms=60_000)
    producer.begin_transaction()
    send(producer, topic, "c", 6)
    producer.commit_transaction(TIMEOUT_S)
    producer.begin_transaction()
    send(producer, topic, "open", 4)
    producer.flush(TIMEOUT_S)
    clock_broker.kill()
    clock_broker.start()
    producer.purge()
    assert sorted(read_all(bootstrap, topic, 2, "read_committed", 6)) == sorted(f"c{i}" for i in range(6))
    advance_clock(bootstrap, 60_000)
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, value=b"behind", partition=1)
    plain.flush(TIMEOUT_S)
    assert sorted(read_all(bootstrap, topic, 2, "read_committed", 7)) == sorted(
        [*(f"c{i}" for i in range(6)), "behind"])
    assert len(read_all(bootstrap, topic, 2, "read_uncommitted", 11)) == 11
    check_consistent(clock_broker)


def test_sigkill_mid_transaction_then_a_new_instance_completes_cleanly(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = new_topic(bootstrap, 1)
    first = transactional_producer(bootstrap, "tx-restart")
    first.begin_transaction()
    first.produce(topic, value=b"lost", partition=0)
    first.flush(TIMEOUT_S)
    clock_broker.kill()
    clock_broker.start()
    first.purge()
    second = transactional_producer(bootstrap, "tx-restart")
    second.begin_transaction()
    second.produce(topic, value=b"kept", partition=0)
    second.commit_transaction(TIMEOUT_S)
    assert read_all(bootstrap, topic, 1, "read_committed", 1) == ["kept"]
    check_consistent(clock_broker)


@pytest.mark.differential
def test_describe_and_list_transactions_and_producers_with_kafka_python_admin(bootstrap: str) -> None:
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.admin import KafkaAdminClient

    topic = new_topic(bootstrap)
    transactional_id = f"tx-admin-{uuid.uuid4().hex[:6]}"
    producer = transactional_producer(bootstrap, transactional_id, timeout_ms=45_000)
    producer.begin_transaction()
    producer.produce(topic, value=b"pending", partition=1)
    producer.flush(TIMEOUT_S)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_transactions([transactional_id])[transactional_id]
        [producers] = admin.describe_producers([KafkaTopicPartition(topic, 1)]).values()
        listed = admin.list_transactions(state_filters=["Ongoing"], transactional_id_pattern="tx-admin-.*")
        producer.commit_transaction(TIMEOUT_S)
        after = admin.list_transactions(state_filters=["Ongoing"], transactional_id_pattern="tx-admin-.*")
    finally:
        admin.close()
    text = repr(described)
    assert "Ongoing" in text and topic in text and "45000" in text, text
    assert transactional_id in repr(listed) and transactional_id not in repr(after), (listed, after)
    assert [p.current_transaction_start_offset for p in producers.active_producers] == [0], producers


@pytest.mark.differential
def test_describe_producers_answers_every_partition_named_and_unknown_topics_with_kafkas_message(
        bootstrap: str) -> None:
    """A partition named again is described again (Kafka 4.4 does; logwright encodes the answer once); an unknown
    partition answers UNKNOWN_TOPIC_OR_PARTITION, with a null message on a topic that exists. The producers are
    read in one pass for the whole request: a pass per partition named made 10,000 copies beside many producers
    hold every client."""
    topic = new_topic(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    producer.produce(topic, value=b"x", partition=0)
    assert producer.flush(TIMEOUT_S) == 0
    asked = (make(describe_producers.TopicRequest, name=topic, partition_indexes=(0, 0, 5, 1)),
             make(describe_producers.TopicRequest, name=topic, partition_indexes=(0,)),
             make(describe_producers.TopicRequest, name="tx-nowhere", partition_indexes=(0, 0)))
    answer = one_request(bootstrap, make(describe_producers.DescribeProducersRequest, topics=asked))
    described = [(entry.name, [(partition.partition_index, int(partition.error_code), partition.error_message,
                                [(state.producer_epoch, state.last_sequence, state.current_txn_start_offset)
                                 for state in partition.active_producers]) for partition in entry.partitions])
                 for entry in answer.topics]
    one = (0, 0, None, [(0, 0, -1)])
    unknown_topic = "This server does not host this topic-partition."
    assert described == [(topic, [one, one, (5, 3, None, []), (1, 0, None, [])]), (topic, [one]),
                         ("tx-nowhere", [(0, 3, unknown_topic, []), (0, 3, unknown_topic, [])])]
    copies = make(describe_producers.DescribeProducersRequest, topics=(
        make(describe_producers.TopicRequest, name=topic, partition_indexes=(0,) * 10_000),))
    [entry] = one_request(bootstrap, copies).topics
    assert len(entry.partitions) == 10_000 and {len(partition.active_producers) for partition in entry.partitions} \
        == {1}


def described_producers(bootstrap: str, topic: str, partition: int) -> list[tuple[int, int, int, int, int]]:
    """``(epoch, last sequence, last timestamp, coordinator epoch, open transaction's first offset)`` per producer."""
    asked = make(describe_producers.TopicRequest, name=topic, partition_indexes=(partition,))
    [entry] = one_request(bootstrap, make(describe_producers.DescribeProducersRequest, topics=(asked,))).topics
    [answer] = entry.partitions
    assert int(answer.error_code) == 0, answer
    return [(state.producer_epoch, state.last_sequence, state.last_timestamp, state.coordinator_epoch,
             state.current_txn_start_offset) for state in answer.active_producers]


def marked_producers(bootstrap: str, topic: str, partition: int) -> list[tuple[int, int, int, int, int]]:
    """The producers once no transaction is open: Kafka answers EndTxn once the coordinator has logged the
    commit and writes the partitions' markers after, so a read straight after a commit may miss them."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        producers = described_producers(bootstrap, topic, partition)
        if all(open_at == -1 for *_, open_at in producers) or time.monotonic() > deadline:
            return producers
        time.sleep(0.05)


def within_now(timestamp: int, since_ms: int) -> bool:
    """A broker's wall-clock stamp taken after ``since_ms`` (and by now), a second's slack for the clocks' grain."""
    return since_ms - 1_000 <= timestamp <= time.time() * 1000 + 1_000


@pytest.mark.differential
def test_describe_producers_shows_the_last_timestamp_and_the_markers_coordinator_epoch(bootstrap: str) -> None:
    """As Kafka 4.4 keeps a producer's state: the last timestamp is its last batch's (the append time on a
    LogAppendTime topic) and then its marker's; the coordinator epoch is -1 until its first marker, then the
    coordinator's (0, on a broker that has always led it)."""
    sent_at = 1_700_000_000_123
    topic = new_topic(bootstrap)
    idempotent = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    idempotent.produce(topic, value=b"a", partition=0, timestamp=sent_at)
    idempotent.produce(topic, value=b"b", partition=0, timestamp=sent_at - 5)  # the batch's max counts
    assert idempotent.flush(TIMEOUT_S) == 0
    assert described_producers(bootstrap, topic, 0) == [(0, 1, sent_at, -1, -1)]

    transactional = transactional_producer(bootstrap, f"tx-{uuid.uuid4().hex[:6]}")
    transactional.begin_transaction()
    transactional.produce(topic, value=b"t", partition=1, timestamp=sent_at + 7)
    assert transactional.flush(TIMEOUT_S) == 0
    assert described_producers(bootstrap, topic, 1) == [(0, 0, sent_at + 7, -1, 0)]
    before_commit = int(time.time() * 1000)
    transactional.commit_transaction(TIMEOUT_S)
    [(epoch, last_sequence, marked_at, coordinator_epoch, open_at)] = marked_producers(bootstrap, topic, 1)
    assert (epoch, last_sequence, coordinator_epoch, open_at) == (0, 0, 0, -1)
    assert within_now(marked_at, before_commit), marked_at

    stamped = f"txn-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(stamped, 1, config={"message.timestamp.type": "LogAppendTime"})])[stamped].result(30)
    before_append = int(time.time() * 1000)
    idempotent.produce(stamped, value=b"c", partition=0, timestamp=sent_at)
    assert idempotent.flush(TIMEOUT_S) == 0
    [(epoch, last_sequence, appended_at, coordinator_epoch, open_at)] = described_producers(bootstrap, stamped, 0)
    assert (epoch, last_sequence, coordinator_epoch, open_at) == (0, 0, -1, -1)
    assert within_now(appended_at, before_append), appended_at


@pytest.mark.differential
def test_a_transaction_over_1200_partitions_commits_aborts_and_is_fenced_whole(bootstrap: str) -> None:
    """Past 500 partitions logwright stages a transaction's end over several turns (one WriteBatch all the same,
    the transactional id answered CONCURRENT_TRANSACTIONS meanwhile): librdkafka's commit, abort and a new
    instance's fencing of an open transaction each reach every partition, as on Kafka."""
    partitions = 1_200
    topic = new_topic(bootstrap, partitions)
    transactional_id = f"tx-{uuid.uuid4().hex[:6]}"
    producer = transactional_producer(bootstrap, transactional_id)
    producer.begin_transaction()
    send(producer, topic, "committed", partitions, partitions)
    producer.commit_transaction(TIMEOUT_S)
    producer.begin_transaction()
    send(producer, topic, "aborted", partitions, partitions)
    producer.flush(TIMEOUT_S)
    producer.abort_transaction(TIMEOUT_S)
    producer.begin_transaction()
    send(producer, topic, "fenced", partitions, partitions)
    producer.flush(TIMEOUT_S)
    successor = transactional_producer(bootstrap, transactional_id)
    successor.begin_transaction()
    successor.produce(topic, value=b"successor", partition=7)
    successor.commit_transaction(TIMEOUT_S)
    values = read_all(bootstrap, topic, partitions, "read_committed", partitions + 1)
    assert sorted(values) == sorted([*(f"committed{i}" for i in range(partitions)), "successor"])


@pytest.mark.logwright_only(reason="a private logwright process on a manual clock with a short expiration")
def test_an_idle_transactional_id_expires_and_its_next_init_starts_afresh(tmp_path: Path) -> None:
    """``transactional.id.expiration.ms`` of broker time after its last update, checked every
    ``transaction.remove.expired.transaction.cleanup.interval.ms``, without a transaction open: DescribeTransactions
    no longer knows it, and the next InitProducerId gets a new producer id, as on Kafka."""
    from kio.schema.describe_transactions.v0 import request as describe_transactions

    broker = BrokerProcess(tmp_path / "data", extra_args=("--manual-clock",), config={
        "transactional.id.expiration.ms": "600000",
        "transaction.remove.expired.transaction.cleanup.interval.ms": "60000"}).start()
    try:
        bootstrap, topic = broker.bootstrap, new_topic(broker.bootstrap)
        committed, left_open = f"tx-{uuid.uuid4().hex[:6]}", f"tx-{uuid.uuid4().hex[:6]}"

        def described(transactional_id: str) -> tuple[int, int]:
            [state] = one_request(bootstrap, make(describe_transactions.DescribeTransactionsRequest,
                                                  transactional_ids=(transactional_id,))).transaction_states
            return int(state.error_code), int(state.producer_id)

        producer = transactional_producer(bootstrap, committed)
        producer.begin_transaction()
        send(producer, topic, "v", 2)
        producer.commit_transaction(TIMEOUT_S)
        first_id = described(committed)[1]
        other = transactional_producer(bootstrap, left_open, timeout_ms=900_000)
        other.begin_transaction()
        send(other, topic, "open", 2)
        assert other.flush(TIMEOUT_S) == 0
        advance_clock(bootstrap, 540_000)
        assert described(committed)[0] == 0, "idle 9 minutes of 10"
        advance_clock(bootstrap, 120_000)
        assert described(committed)[0] == 105, "TRANSACTIONAL_ID_NOT_FOUND"
        assert described(left_open)[0] == 0, "a transaction open is never expired"
        again = transactional_producer(bootstrap, committed)
        again.begin_transaction()
        send(again, topic, "after", 2)
        again.commit_transaction(TIMEOUT_S)
        assert described(committed)[1] != first_id, "a new producer id"
        other.abort_transaction(TIMEOUT_S)
    finally:
        broker.kill()
