"""The example plugin (`examples/plugin-example`) inside a real broker: every hook kind observed on the wire.

The plugin is built and installed with pip into a directory on the broker process's ``PYTHONPATH``, found
through its entry point as a user's installed plugin would be. Its admission wrapper refuses oversized
produce requests, its release decision sets the redelivery delay of records nacked, released or expired,
and its background task writes heartbeats on the broker clock, which the manual clock drives here.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from logwright.client import Client

from tests.example_plugin import install_example_plugin

from .broker_process import BrokerProcess
from .group_configs import set_group_configs
from .test_share_groups import check_consistent

pytestmark = pytest.mark.logwright_only(reason="loads logwright's example plugin")

HEARTBEAT_TOPIC = "logwright-example-heartbeat"
MAX_RECORDS_KEY = "logwright.example.max.records.per.request"
LOCK_MS = 15_000


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_example_plugin(tmp_path_factory.mktemp("example-plugin"))


@pytest.fixture
def plugin_broker(plugin_site: Path, tmp_path: Path) -> Iterator[BrokerProcess]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(plugin_site))
        process = BrokerProcess(tmp_path / "data", config={"logwright.example.heartbeat.ms": "1000"},
                                extra_args=("--manual-clock",)).start()
    try:
        yield process
    finally:
        process.kill()


def create_topic(bootstrap: str, name: str, **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, config=configs)])[name].result(30)


def test_the_admission_wrapper_refuses_oversized_requests_per_partition(plugin_broker: BrokerProcess) -> None:
    capped, free = f"capped-{uuid.uuid4().hex[:6]}", f"free-{uuid.uuid4().hex[:6]}"
    create_topic(plugin_broker.bootstrap, capped, **{MAX_RECORDS_KEY: "3"})
    create_topic(plugin_broker.bootstrap, free)
    outcomes: dict[tuple[str, bytes], KafkaError | None] = {}

    def report(error: KafkaError | None, message: object) -> None:
        outcomes[(message.topic(), message.value())] = error  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": plugin_broker.bootstrap, "linger.ms": 200, "retries": 0})
    for i in range(5):  # one request: five records to each topic
        producer.produce(capped, value=f"c{i}".encode(), on_delivery=report)
        producer.produce(free, value=f"f{i}".encode(), on_delivery=report)
    assert producer.flush(30) == 0
    refused = {outcomes[(capped, f"c{i}".encode())] for i in range(5)}
    assert len(refused) == 1 and refused.pop().code() == KafkaError.POLICY_VIOLATION  # type: ignore[union-attr]
    assert all(outcomes[(free, f"f{i}".encode())] is None for i in range(5)), "the other partition is appended"
    for i in range(2):
        producer.produce(capped, value=f"ok{i}".encode(), on_delivery=report)
    assert producer.flush(30) == 0
    assert outcomes[(capped, b"ok0")] is None and outcomes[(capped, b"ok1")] is None
    consumer = Consumer({"bootstrap.servers": plugin_broker.bootstrap, "group.id": "watermarks"})
    assert consumer.get_watermark_offsets(TopicPartition(capped, 0), 30) == (0, 2)
    assert consumer.get_watermark_offsets(TopicPartition(free, 0), 30) == (0, 5)
    consumer.close()
    check_consistent(plugin_broker)


def test_the_release_decision_sets_the_backoff_of_nacks_and_expired_locks(plugin_broker: BrokerProcess) -> None:
    topic = f"backoff-{uuid.uuid4().hex[:6]}"
    create_topic(plugin_broker.bootstrap, topic)
    set_group_configs(plugin_broker.bootstrap, "backoff", {"logwright.example.backoff.ms": "1000"})
    producer = Producer({"bootstrap.servers": plugin_broker.bootstrap})
    producer.produce(topic, value=b"poison")
    assert producer.flush(30) == 0

    async def scenario() -> None:
        client = await Client.connect(plugin_broker.bootstrap)
        consumer = await client.subscribe(topic, "backoff", initial_position="earliest", ack_timeout_ms=LOCK_MS,
                                          negative_ack_redelivery_delay_ms=60_000)
        for count in (1, 2):
            message = await consumer.receive(timeout=30)
            assert message.delivery_count == count
            now = await client.advance_clock(0)
            await consumer.negative_acknowledge(message)  # the client asks for 60 s; the plugin decides
            [cursor] = await client.inspect("backoff", topic)
            assert cursor["redeliveries"][0]["available_at_ms"] - now == 1000 * 2 ** (count - 1)
            await client.advance_clock(1000 * 2 ** (count - 1))
        message = await consumer.receive(timeout=30)
        assert message.delivery_count == 3
        expired_at = await client.advance_clock(LOCK_MS)  # never acknowledged: the lock runs out
        [cursor] = await client.inspect("backoff", topic)
        assert cursor["in_flight"] == [] and cursor["redeliveries"][0]["available_at_ms"] == expired_at + 4000
        await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
    check_consistent(plugin_broker)


def test_the_background_task_runs_on_the_broker_clock(plugin_broker: BrokerProcess) -> None:
    create_topic(plugin_broker.bootstrap, HEARTBEAT_TOPIC)

    async def advance_three_times() -> list[int]:
        client = await Client.connect(plugin_broker.bootstrap)
        times = [await client.advance_clock(1000) for _ in range(3)]
        await client.close()
        return times

    times = asyncio.run(asyncio.wait_for(advance_three_times(), 60))
    consumer = Consumer({"bootstrap.servers": plugin_broker.bootstrap, "group.id": "heartbeats",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    assert consumer.get_watermark_offsets(TopicPartition(HEARTBEAT_TOPIC, 0), 30) == (0, 3), \
        "each advance answered after the task had written its heartbeat"
    consumer.subscribe([HEARTBEAT_TOPIC])
    values: list[int] = []
    while len(values) < 3:
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        values.append(int(message.value()))
    consumer.close()
    assert values == times
    check_consistent(plugin_broker)
