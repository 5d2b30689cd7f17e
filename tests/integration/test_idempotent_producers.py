"""Idempotent producers end to end: aiokafka and confluent-kafka producers, and hand-built retries.

The hand-built part speaks through aiokafka's client with batches from its record builder, so each rule
is shown on the wire: a retried batch is answered with its original offset, a gap is
OUT_OF_ORDER_SEQUENCE_NUMBER, an older epoch is INVALID_PRODUCER_EPOCH, and all of it survives a
restart, as the producer ids do.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.client import AIOKafkaClient
from aiokafka.protocol.produce import ProduceRequest
from aiokafka.protocol.transaction import InitProducerIdRequest
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from confluent_kafka import Producer

from .broker_process import BrokerProcess

NONE, OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH = 0, 45, 47
NOT_LED_YET = (3, 6)  # UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER
COORDINATOR_LOAD_IN_PROGRESS = 14


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def create_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        await admin.close()


def test_aiokafka_idempotent_producer_writes_each_record_once(bootstrap: str) -> None:
    asyncio.run(_aiokafka_round_trip(bootstrap, name("idem-aiokafka")))


async def _aiokafka_round_trip(bootstrap: str, topic: str) -> None:
    await create_topic(bootstrap, topic)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, linger_ms=5)
    await producer.start()
    try:
        sent = await asyncio.gather(*[await producer.send(topic, f"m{i}".encode(), partition=0) for i in range(50)])
    finally:
        await producer.stop()
    assert [metadata.offset for metadata in sent] == list(range(50))
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    values: list[bytes | None] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < 50 and time.monotonic() < deadline:
            records = await consumer.getmany(timeout_ms=1000, max_records=100)
            values += [record.value for batch in records.values() for record in batch]
    finally:
        await consumer.stop()
    assert values == [f"m{i}".encode() for i in range(50)]


def test_confluent_idempotent_producer_writes_each_record_once(bootstrap: str) -> None:
    topic = name("idem-confluent")
    asyncio.run(create_topic(bootstrap, topic))
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    delivered: list[int] = []
    errors: list[Any] = []

    def report(error: Any, message: Any) -> None:
        if error is not None:
            errors.append(error)
        else:
            delivered.append(message.offset())

    for index in range(300):
        producer.produce(topic, f"m{index}".encode(), partition=0, on_delivery=report)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == [] and sorted(delivered) == list(range(300))


class RawProducer:
    """Produce v3+ requests with hand-set producer id, epoch and sequence, through aiokafka's client."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.client = AIOKafkaClient(bootstrap_servers=bootstrap)
        self.topic = topic

    async def __aenter__(self) -> RawProducer:
        await self.client.bootstrap()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.close()

    async def init_producer_id(self) -> tuple[int, int]:
        """Asked again, as clients do, while Kafka has no block of producer ids yet (its first InitProducerId
        answers COORDINATOR_LOAD_IN_PROGRESS until the controller has allocated one)."""
        deadline = time.monotonic() + 30
        while True:
            response = await self.client.send(self.client.get_random_node(), InitProducerIdRequest(None, 60000))
            if response.error_code != COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        assert response.error_code == NONE
        return int(response.producer_id), int(response.producer_epoch)

    async def produce(self, producer_id: int, epoch: int, sequence: int, count: int = 3) -> tuple[int, int]:
        """The partition's (error code, base offset); sent again, as clients do, while the broker does not
        lead the partition yet (Kafka's CreateTopics returns before the broker has applied the new topic)."""
        builder = DefaultRecordBatchBuilder(2, 0, 0, producer_id, epoch, sequence, 1 << 20)
        for index in range(count):
            builder.append(index, None, None, f"s{sequence + index}".encode(), [])
        request = ProduceRequest(None, -1, 10000, [(self.topic, [(0, bytes(builder.build()))])])
        deadline = time.monotonic() + 30
        while True:
            response = await self.client.send(self.client.get_random_node(), request)
            partition = response.topics[0][1][0]
            if partition[1] not in NOT_LED_YET or time.monotonic() > deadline:
                return int(partition[1]), int(partition[2])
            await asyncio.sleep(0.1)


@pytest.mark.differential
def test_retries_gaps_and_old_epochs_are_answered_as_kafka_does(bootstrap: str) -> None:
    asyncio.run(_sequence_rules(bootstrap, name("idem-raw")))


@pytest.mark.logwright_only(reason="restarts a private logwright process")
def test_sequences_are_still_known_after_a_restart(broker: BrokerProcess) -> None:
    topic = name("idem-restart")
    producer_id = asyncio.run(_sequence_rules(broker.bootstrap, topic))
    broker.kill()
    broker.start()
    asyncio.run(_after_restart(broker.bootstrap, topic, producer_id))


async def _sequence_rules(bootstrap: str, topic: str) -> int:
    await create_topic(bootstrap, topic)
    async with RawProducer(bootstrap, topic) as raw:
        producer_id, epoch = await raw.init_producer_id()
        assert epoch == 0
        assert await raw.produce(producer_id, 0, 0) == (NONE, 0)
        assert await raw.produce(producer_id, 0, 3) == (NONE, 3)
        assert await raw.produce(producer_id, 0, 0) == (NONE, 0), "a retry of an acknowledged batch"
        assert (await raw.produce(producer_id, 0, 9))[0] == OUT_OF_ORDER_SEQUENCE_NUMBER
        assert await raw.produce(producer_id, 1, 0) == (NONE, 6), "a new epoch starts at sequence 0"
        assert (await raw.produce(producer_id, 0, 6))[0] == INVALID_PRODUCER_EPOCH
    return producer_id


async def _after_restart(bootstrap: str, topic: str, producer_id: int) -> None:
    async with RawProducer(bootstrap, topic) as raw:
        assert await raw.produce(producer_id, 1, 0) == (NONE, 6), "duplicates are still known after a restart"
        assert await raw.produce(producer_id, 1, 3) == (NONE, 9)
        assert (await raw.init_producer_id())[0] > producer_id, "producer ids are never handed out twice"


@pytest.mark.differential
def test_a_producer_the_partition_does_not_know_may_start_at_any_sequence(bootstrap: str) -> None:
    """As Kafka 4.4 takes it (what lets a producer whose state expired carry on): the first batch of a producer on a
    partition is appended whatever its sequence, even for an id never handed out; from then on the rules hold."""

    async def scenario() -> None:
        topic = name("idem-unknown")
        await create_topic(bootstrap, topic)
        async with RawProducer(bootstrap, topic) as raw:
            producer_id, _ = await raw.init_producer_id()
            assert await raw.produce(producer_id, 0, 5) == (NONE, 0)
            assert await raw.produce(producer_id, 0, 8) == (NONE, 3)
            assert await raw.produce(producer_id, 0, 5) == (NONE, 0), "a retry"
            assert (await raw.produce(producer_id, 2, 7))[0] == OUT_OF_ORDER_SEQUENCE_NUMBER, "a known producer's " \
                "new epoch starts at 0"
            assert await raw.produce(producer_id, 2, 0) == (NONE, 6)
            assert await raw.produce(producer_id + 1_000, 3, 9) == (NONE, 9), "an id never handed out"

    asyncio.run(scenario())


@pytest.mark.logwright_only(reason="a private logwright process on a manual clock with a short expiration")
def test_an_idle_producer_is_forgotten_and_its_next_batch_taken_as_its_first(tmp_path: Any) -> None:
    """``producer.id.expiration.ms`` of broker time after its last batch on the partition, checked every
    ``producer.id.expiration.check.interval.ms``: DescribeProducers no longer lists it, its next batch is appended
    at its own sequence, and a retry of a batch from before is no longer known (as on Kafka 4.4). A producer with a
    transaction open on the partition is kept however long it is idle."""
    from .test_share_groups import advance_clock
    from .test_transactions import described_producers, transactional_producer

    broker = BrokerProcess(tmp_path / "data", extra_args=("--manual-clock",), config={
        "producer.id.expiration.ms": "60000", "producer.id.expiration.check.interval.ms": "10000"}).start()
    try:
        bootstrap, topic = broker.bootstrap, name("idem-expiry")

        async def before() -> int:
            await create_topic(bootstrap, topic)
            async with RawProducer(bootstrap, topic) as raw:
                producer_id, _ = await raw.init_producer_id()
                assert await raw.produce(producer_id, 0, 0) == (NONE, 0)
                assert await raw.produce(producer_id, 0, 3) == (NONE, 3)
            return producer_id

        producer_id = asyncio.run(before())
        transactional = transactional_producer(bootstrap, f"tx-{uuid.uuid4().hex[:6]}", timeout_ms=900_000)
        transactional.begin_transaction()
        transactional.produce(topic, value=b"open", partition=0)
        assert transactional.flush(30) == 0
        assert len(described_producers(bootstrap, topic, 0)) == 2
        advance_clock(bootstrap, 50_000)
        assert len(described_producers(bootstrap, topic, 0)) == 2, "idle 50 s of 60"
        advance_clock(bootstrap, 20_000)
        assert [state[4] for state in described_producers(bootstrap, topic, 0)] == [6], "only the open transaction's"

        async def after() -> None:
            async with RawProducer(bootstrap, topic) as raw:
                assert await raw.produce(producer_id, 0, 6) == (NONE, 7), "taken as its first"
                assert (await raw.produce(producer_id, 0, 0))[0] == OUT_OF_ORDER_SEQUENCE_NUMBER, "no longer known"

        asyncio.run(after())
        transactional.abort_transaction(30)
        broker.kill()
        broker.start()
        assert len(described_producers(bootstrap, topic, 0)) == 2, "kept across a restart"
    finally:
        broker.kill()


@pytest.mark.differential
def test_an_idempotent_producer_naming_its_id_and_epoch_gets_a_fresh_id(bootstrap: str) -> None:
    """KIP-360 leaves an idempotent producer's epoch bump to the client: Kafka answers every InitProducerId
    without a transactional id with a new producer id at epoch 0, whatever id and epoch it names, so a broker keeps
    no epoch per idempotent producer id."""
    from kio.schema.init_producer_id.v5 import request as init_v5
    from logwright.compat.registry import make
    from logwright.testing.clients import one_request

    def init(producer_id: int, producer_epoch: int) -> tuple[int, int, int]:
        deadline = time.monotonic() + 30
        while True:
            answer = one_request(bootstrap, make(init_v5.InitProducerIdRequest, transactional_id=None,
                                                 transaction_timeout=60_000, producer_id=producer_id,
                                                 producer_epoch=producer_epoch))
            if answer.error_code != COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
                return int(answer.error_code), int(answer.producer_id), int(answer.producer_epoch)
            time.sleep(0.1)

    code, first, epoch = init(-1, -1)
    assert (code, epoch) == (NONE, 0)
    named = [init(first, 0), init(first, 0), init(first, 7), init(first + 10_000, 3)]
    assert [(code, epoch) for code, _, epoch in named] == [(NONE, 0)] * 4, named
    assert len({first, *(producer_id for _, producer_id, _ in named)}) == 5, "a new id every time"
