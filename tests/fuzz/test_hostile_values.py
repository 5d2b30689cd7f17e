"""Well-formed requests full of hostile values (`hostile_values`, `hostile_sequences`) against a real broker process.

Each example sends a few hostile requests of random served (API key, version)s, each on its own connection, then
one stateful sequence on a shared connection. Then the broker must be alive, answer a well-behaved client within a
second, stay within its memory budget and have logged no ERROR. At the end, records a real producer had
acknowledged before the fuzzing must read back intact.

``LOGWRIGHT_HOSTILE_EXAMPLES`` sets the number of examples (the default keeps this near half a minute inside
``make test``; ``make fuzz`` runs thousands) and ``LOGWRIGHT_FUZZ_SEED`` the seed (random unless set; every
failure names it).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.broker_process import BrokerProcess

from .broker_checks import BrokerLog, Conversation, assert_served_within_a_second, assert_within_budget, send_alone
from .hostile_sequences import SEQUENCES
from .hostile_values import SERVED, HostileValues

EXAMPLES = int(os.environ.get("LOGWRIGHT_HOSTILE_EXAMPLES", "250"))
SEED = int(os.environ.get("LOGWRIGHT_FUZZ_SEED", str(random.randrange(2**32))))
REQUESTS_ALONE = 4
CANARY = "acknowledged-canary"
CANARY_VALUES = {partition: [b"canary-%d-%d" % (partition, index) for index in range(5)] for partition in range(2)}
"""What a real producer has acknowledged (acks=all) before the first hostile request: none of it may be lost."""


@pytest.fixture(scope="module")
def hostile_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose classic groups rebalance at once, so that sequences do not wait the initial delay."""
    process = BrokerProcess(tmp_path_factory.mktemp("hostile") / "data",
                            config={"group.initial.rebalance.delay.ms": "0"})
    process.start()
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture(scope="module")
def canary(hostile_broker: BrokerProcess) -> dict[int, list[bytes]]:
    """The canary's records, produced and acknowledged by confluent-kafka; a topic ``hostile`` for sequences and
    ``hostile-gzip``, which rebuilds in gzip what is produced to it, and ``hostile-short``, which bounds the record
    bodies of compressed batches (`hostile_values.TOPIC_NAMES`)."""
    admin = AdminClient({"bootstrap.servers": hostile_broker.bootstrap})
    for future in admin.create_topics([NewTopic(CANARY, 2, 1), NewTopic("hostile", 3, 1), NewTopic(
            "hostile-gzip", 1, 1, config={"compression.type": "gzip", "compression.gzip.level": "9"}), NewTopic(
            "hostile-short", 1, 1, config={"max.decompressed.message.bytes": "64"})]).values():
        future.result(10)
    producer = Producer({"bootstrap.servers": hostile_broker.bootstrap, "acks": "all", "enable.idempotence": True})
    failures: list[str] = []
    for partition, values in CANARY_VALUES.items():
        for value in values:
            producer.produce(CANARY, value, partition=partition,
                             on_delivery=lambda error, _message: failures.append(str(error)) if error else None)
    assert producer.flush(10) == 0 and not failures, f"the canary was not acknowledged: {failures}"
    return CANARY_VALUES


@pytest.fixture(scope="module")
def baseline_rss(hostile_broker: BrokerProcess, canary: dict[int, list[bytes]]) -> int:
    """The broker's size once every served (key, version) has been seen with hostile values (its caches warm)."""
    values = HostileValues(random.Random(SEED), big_collection_chance=0)
    for api_key, version in SERVED:
        send_alone(hostile_broker, values.frame(api_key, version))
    assert_served_within_a_second(hostile_broker, f"the warm-up (LOGWRIGHT_FUZZ_SEED={SEED})")
    return int(hostile_broker.resident_bytes())


def read_back(broker: BrokerProcess, partitions: list[int], timeout_s: float = 15.0) -> dict[int, list[bytes]]:
    """Every record of the canary's ``partitions`` from offset 0, as a read-committed consumer sees them."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "canary-reader",
                         "enable.auto.commit": False, "enable.partition.eof": True})
    consumer.assign([TopicPartition(CANARY, partition, 0) for partition in partitions])
    records: dict[int, list[bytes]] = {partition: [] for partition in partitions}
    at_end: set[int] = set()
    try:
        for _ in range(int(timeout_s / 0.5)):
            message = consumer.poll(0.5)
            if message is None:
                continue
            error, partition = message.error(), int(message.partition() or 0)
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                at_end.add(partition)
                if at_end == set(partitions):
                    break
                continue
            assert error is None, f"reading the canary failed: {error}"
            records[partition].append(message.value() or b"")
    finally:
        consumer.close()
    return records


def test_hostile_values_neither_crash_freeze_balloon_nor_log_errors(
        hostile_broker: BrokerProcess, baseline_rss: int) -> None:
    log = BrokerLog(hostile_broker)
    conversation = Conversation(hostile_broker)
    for example in range(EXAMPLES):
        rng = random.Random(SEED * 1_000_003 + example)
        values = HostileValues(rng)
        keys = [rng.choice(SERVED) for _ in range(REQUESTS_ALONE)]
        for api_key, version in keys:
            send_alone(hostile_broker, values.frame(api_key, version))
        sequence = rng.choice(SEQUENCES)
        steps = sequence(values)
        answer = None
        try:
            while True:
                answer = conversation.call(steps.send(answer))
        except StopIteration:
            pass
        context = (f"example {example} (LOGWRIGHT_FUZZ_SEED={SEED}): requests {keys} alone, then "
                   f"{sequence.__name__}")
        assert_served_within_a_second(hostile_broker, context)
        assert_within_budget(hostile_broker, baseline_rss, context)
        log.assert_no_errors(context)
    conversation.close()


def test_acknowledged_records_survive_the_hostile_requests(
        hostile_broker: BrokerProcess, canary: dict[int, list[bytes]]) -> None:
    assert hostile_broker.alive(), f"the broker died: {hostile_broker.log_tail()}"
    records = read_back(hostile_broker, sorted(canary))
    assert records == canary, f"acknowledged records changed (LOGWRIGHT_FUZZ_SEED={SEED}): {records} != {canary}"
