"""Dead-letter topics for share groups (KIP-1191's configs and headers) with confluent-kafka's `ShareConsumer`.

A record the group archives (the delivery limit reached, or REJECT) lands exactly once on the group's
``errors.deadletterqueue.topic.name``, read back with an ordinary consumer, in the same WriteBatch as the
archive. Manual clock, real broker process, ``logwright check`` at the end of each scenario.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, Consumer, KafkaError, Message, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, NewTopic
from logwright.client import Client, Timeout
from logwright.compat.coordinators.dead_letters import DEFERRED_RETRY_MS

from .broker_process import BrokerProcess
from .test_share_groups import advance_clock, check_consistent, commit, consumer, poll_batch, setup_topic, share_broker
from .test_update_features import SAFE_DOWNGRADE, UPGRADE, changed

__all__ = ["share_broker"]

DLQ_TOPIC_KEY = "errors.deadletterqueue.topic.name"
COPY_KEY = "errors.deadletterqueue.copy.record.enable"


def dead_letter_topic(bootstrap: str, enabled: bool = True, partitions: int = 1) -> str:
    name = f"dlq.{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"errors.deadletterqueue.group.enable": "true"} if enabled else {}
    admin.create_topics([NewTopic(name, partitions, config=configs)])[name].result(30)
    return name


def read_all(bootstrap: str, topic: str, expected: int, idle_polls: int = 4) -> list[Message]:
    """Every record of ``topic`` (a classic consumer from the earliest offset): at least ``expected``, and
    then a few empty polls to catch any extra copy."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex[:6]}",
                       "auto.offset.reset": "earliest", "enable.auto.commit": "false"})
    reader.subscribe([topic])
    found: list[Message] = []
    empty = 0
    for _ in range(120):
        message = reader.poll(0.5)
        if message is None:
            empty += 1
            if len(found) >= expected and empty >= idle_polls:
                break
            continue
        assert message.error() is None, message.error()
        found.append(message)
        empty = 0
    reader.close()
    return found


def headers_of(message: Message) -> dict[str, bytes | None]:
    return dict(message.headers() or [])


def release_until_archived(bootstrap: str, group: str, topic: str, limit: int, kill: BrokerProcess | None = None
                           ) -> list[int]:
    """RELEASE offset 0 every time it arrives until the group stops delivering it; its delivery counts."""
    counts: list[int] = []
    for _ in range(limit):
        share = consumer(bootstrap, group, topic)
        batch = poll_batch(share)
        assert [m.offset() for m in batch] == [0]
        counts.append(batch[0].delivery_count())
        share.acknowledge(batch[0], AcknowledgeType.RELEASE)
        assert commit(share) == {(topic, 0): None}
        share.close()
        if kill is not None:
            kill.kill()
            kill.start()
    return counts


@pytest.mark.parametrize("kill_between", [False, True], ids=["steady", "sigkill-between-attempts"])
def test_released_until_the_limit_lands_once_on_the_dead_letter_topic(share_broker: BrokerProcess,
                                                                      kill_between: bool) -> None:
    bootstrap, group = share_broker.bootstrap, f"dlq-limit-{uuid.uuid4().hex[:6]}"
    dlq = dead_letter_topic(bootstrap)
    topic = setup_topic(bootstrap, group, 1, **{"share.delivery.count.limit": "3", DLQ_TOPIC_KEY: dlq})
    counts = release_until_archived(bootstrap, group, topic, 3, share_broker if kill_between else None)
    assert counts == [1, 2, 3]
    copies = read_all(bootstrap, dlq, 1)
    assert len(copies) == 1, [(m.offset(), m.headers()) for m in copies]
    copy = copies[0]
    assert copy.partition() == 0 and copy.key() is None and copy.value() is None
    assert headers_of(copy) == {
        "__dlq.errors.topic": topic.encode(), "__dlq.errors.partition": b"0", "__dlq.errors.offset": b"0",
        "__dlq.errors.group": group.encode(), "__dlq.errors.delivery.count": b"3",
        "__dlq.errors.message": b"delivery count limit reached",
    }
    share = consumer(bootstrap, group, topic)
    assert poll_batch(share, 3.0) == [], "an archived record was delivered again"
    share.close()
    events = dead_lettered_events(share_broker)
    assert [(e["deliveries"], e["reason"], e["dead_letter_topic"]) for e in events] == [
        ([[0, 0, 3]], "delivery count limit reached", dlq)]
    check_consistent(share_broker)


def test_reject_copies_key_value_headers_and_timestamp(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, f"dlq-reject-{uuid.uuid4().hex[:6]}"
    dlq = dead_letter_topic(bootstrap, partitions=2)
    topic = setup_topic(bootstrap, group, 0, partitions=3, **{DLQ_TOPIC_KEY: dlq, COPY_KEY: "true"})
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=b"k", value=b"poison", partition=2, timestamp=1_700_000_000_000,
                     headers=[("trace", b"t-1")])
    producer.produce(topic, key=b"k2", value=b"fine", partition=2)
    assert producer.flush(30) == 0
    share = consumer(bootstrap, group, topic)
    seen: list[Message] = []
    while len(seen) < 2:
        batch = poll_batch(share)
        assert batch
        for message in batch:
            share.acknowledge(message, AcknowledgeType.REJECT if message.value() == b"poison" else
                              AcknowledgeType.ACCEPT)
        seen.extend(batch)
        assert all(error is None for error in commit(share).values())
    share.close()
    copies = read_all(bootstrap, dlq, 1)
    assert len(copies) == 1
    copy = copies[0]
    assert copy.partition() == 2 % 2
    assert (copy.key(), copy.value(), copy.timestamp()[1]) == (b"k", b"poison", 1_700_000_000_000)
    headers = headers_of(copy)
    assert headers["trace"] == b"t-1"
    assert headers["__dlq.errors.partition"] == b"2" and headers["__dlq.errors.delivery.count"] == b"1"
    assert headers["__dlq.errors.message"] == b"rejected by consumer"
    check_consistent(share_broker)


def test_a_topic_without_group_enable_gets_no_copy_and_the_record_is_kept_until_the_copy_succeeds(
        share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, f"dlq-off-{uuid.uuid4().hex[:6]}"
    dlq = f"dlq.later-{uuid.uuid4().hex[:6]}"
    topic = setup_topic(bootstrap, group, 1, **{DLQ_TOPIC_KEY: dlq})  # accepted: the topic does not exist yet
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(dlq, 1)])[dlq].result(30)  # created later without group.enable
    share = consumer(bootstrap, group, topic)
    batch = poll_batch(share)
    share.acknowledge(batch[0], AcknowledgeType.REJECT)
    assert commit(share) == {(topic, 0): None}
    assert poll_batch(share, 2.0) == []
    assert read_all(bootstrap, dlq, 0, idle_polls=2) == []
    [deferred] = events_of(share_broker, "DeadLetterDeferred")
    assert "errors.deadletterqueue.group.enable=true" in str(deferred["error"])
    advance_clock(bootstrap, DEFERRED_RETRY_MS)  # kept, not archived: offered again
    [again] = poll_batch(share)
    assert again.value() == b"r0" and again.delivery_count() == 2
    entry = ConfigEntry("errors.deadletterqueue.group.enable", "true", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.TOPIC, dlq, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)
    share.acknowledge(again, AcknowledgeType.REJECT)
    assert commit(share) == {(topic, 0): None}
    share.close()
    [copy] = read_all(bootstrap, dlq, 1)
    assert dict(copy.headers() or [])["__dlq.errors.delivery.count"] == b"2"
    assert len(dead_lettered_events(share_broker)) == 1
    check_consistent(share_broker)


@pytest.mark.parametrize("value", ["__consumer_offsets", "__x", "bad name", "a" * 250])
def test_invalid_dead_letter_topic_names_are_refused_with_a_message(share_broker: BrokerProcess, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": share_broker.bootstrap})
    entry = ConfigEntry(DLQ_TOPIC_KEY, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.GROUP, f"g-{uuid.uuid4().hex[:6]}", incremental_configs=[entry])
    with pytest.raises(Exception) as refused:
        admin.incremental_alter_configs([resource])[resource].result(30)
    error = refused.value.args[0]
    assert error.code() == KafkaError.INVALID_CONFIG and DLQ_TOPIC_KEY in error.str()


def refusal(bootstrap: str, group: str, value: str) -> str:
    """The INVALID_CONFIG message setting ``errors.deadletterqueue.topic.name`` to ``value`` gets."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entry = ConfigEntry(DLQ_TOPIC_KEY, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
    with pytest.raises(Exception) as refused:
        admin.incremental_alter_configs([resource])[resource].result(30)
    error = refused.value.args[0]
    assert error.code() == KafkaError.INVALID_CONFIG
    return str(error.str())


def test_dead_letter_topics_refused_by_prefix_source_topic_and_group_enable(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, f"dlq-checks-{uuid.uuid4().hex[:6]}"
    assert "must start with 'dlq.'" in refusal(bootstrap, group, "errors-topic")
    disabled = dead_letter_topic(bootstrap, enabled=False)
    assert "errors.deadletterqueue.group.enable=true" in refusal(bootstrap, group, disabled)
    source = f"dlq.source-{uuid.uuid4().hex[:6]}"
    setup_topic_named(bootstrap, source)
    share = consumer(bootstrap, group, source)
    assert poll_batch(share, 3.0) == []  # joined: the group now consumes ``source``
    assert "consumes" in refusal(bootstrap, group, source)
    share.close()


def setup_topic_named(bootstrap: str, name: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, config={"errors.deadletterqueue.group.enable": "true"})])[name].result(30)


def dead_lettered_events(broker: BrokerProcess) -> list[dict[str, object]]:
    """The ``DeadLettered`` events of the broker's log (read beside the running broker)."""
    return events_of(broker, "DeadLettered")


def events_of(broker: BrokerProcess, event_type: str) -> list[dict[str, object]]:
    """The events of one type in the broker's log (read beside the running broker)."""
    command = [sys.executable, "-m", "logwright", "events", "--data-dir", str(broker.data_dir), "--json"]
    listed = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    events = [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]
    return [event for event in events if event.get("type") == event_type]


async def nacked_until_dead_lettered(client: Client, topic: str, subscription: str) -> list[int]:
    """The redelivery counts the subscription's one record is received with, nacked each time (redelivered a second
    later on the manual clock), until it is no longer redelivered (it went to the dead-letter topic)."""
    consumer = await client.subscribe(topic, subscription, initial_position="earliest",
                                      negative_ack_redelivery_delay_ms=1_000)
    counts = []
    while True:
        try:
            message = await consumer.receive(timeout=2 if counts else 20)
        except Timeout:
            return counts
        counts.append(message.redelivery_count)
        await consumer.negative_acknowledge(message)
        await client.advance_clock(1_000)


@pytest.mark.parametrize("legacy", [False, True], ids=["default", "legacy"])
def test_pulsar_max_deliveries_dead_letters_a_nacked_record_to_topic_subscription_dlq(clock_broker: BrokerProcess,
                                                                                      legacy: bool) -> None:
    """With ``<subscription>-DLQ`` there (Pulsar's legacy ``<namespace>/<subscription>-DLQ``, which its client takes
    when that topic exists), the copy goes there and ``<topic>-<subscription>-DLQ`` is not created."""
    bootstrap, subscription = clock_broker.bootstrap, "orders-sub"
    topic = setup_topic(bootstrap, subscription, 1, **{"logwright.dead.letter.max.deliveries": "3"})
    default = f"{topic}-{subscription}-DLQ"
    dlq = f"{subscription}-DLQ" if legacy else default
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(dlq, 1)])[dlq].result(30)

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        assert await nacked_until_dead_lettered(client, topic, subscription) == [0, 1, 2]
        await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
    copies = read_all(bootstrap, dlq, 1)
    assert len(copies) == 1
    assert copies[0].value() == b"r0"
    headers = headers_of(copies[0])
    assert (headers["REAL_TOPIC"], headers["ORIGIN_MESSAGE_ID"], headers["RECONSUMETIMES"]) == (
        topic.encode(), f"{topic}-0@0".encode(), b"3")
    assert not any(name.startswith("__dlq.") for name in headers)
    assert (default in admin.list_topics(timeout=30).topics) == (not legacy)
    check_consistent(clock_broker)


def test_pulsar_max_redeliver_count_shows_counts_0_to_it_then_dead_letters_and_empties_the_backlog(
        clock_broker: BrokerProcess) -> None:
    """The seeds' F10 scenario: maxRedeliverCount=3 on a Shared subscription, every delivery nacked. The application
    sees the record with redelivery counts 0, 1, 2 and 3 (Pulsar's count, one delivery more than max.deliveries=3);
    the next redelivery goes to ``<topic>-<subscription>-DLQ``, created on first use, with REAL_TOPIC and
    ORIGIN_MESSAGE_ID, and the subscription's backlog is 0. With initialSubscriptionName ``dlq-sub`` the dead-letter
    topic has that subscription holding the copy: its consumer gets it though it subscribes from the latest."""
    bootstrap, subscription = clock_broker.bootstrap, "orders-sub"
    topic = setup_topic(bootstrap, subscription, 1, **{"logwright.dead.letter.max.redeliver.count": "3",
                                                       "logwright.dead.letter.initial.subscription": "dlq-sub"})
    dlq = f"{topic}-{subscription}-DLQ"

    async def scenario() -> None:
        client = await Client.connect(bootstrap)
        assert await nacked_until_dead_lettered(client, topic, subscription) == [0, 1, 2, 3]
        [cursor] = await client.inspect(subscription, topic)
        assert cursor["backlog"] == 0 and cursor["mark_delete_position"] == 0
        [held] = await client.inspect("dlq-sub", dlq)
        assert held["backlog"] == 1
        dead_letters = await client.subscribe(dlq, "dlq-sub", initial_position="latest")
        copy = await dead_letters.receive(timeout=20)
        assert (copy.value, copy.redelivery_count) == (b"r0", 0)
        await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 120))
    [copy] = read_all(bootstrap, dlq, 1)
    assert copy.value() == b"r0"
    headers = headers_of(copy)
    assert (headers["REAL_TOPIC"], headers["ORIGIN_MESSAGE_ID"]) == (topic.encode(), f"{topic}-0@0".encode())
    check_consistent(clock_broker)


def test_pulsar_limit_is_set_in_deliveries_or_in_redeliveries_not_both(share_broker: BrokerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": share_broker.bootstrap})
    group = f"g-{uuid.uuid4().hex[:6]}"

    def alter(**values: str) -> None:
        resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
            ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET) for key, value in values.items()])
        admin.incremental_alter_configs([resource])[resource].result(30)

    alter(**{"logwright.dead.letter.max.deliveries": "3"})
    with pytest.raises(Exception) as refused:
        alter(**{"logwright.dead.letter.max.redeliver.count": "3"})
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    assert "set one of them" in refused.value.args[0].str()
    alter(**{"logwright.dead.letter.max.deliveries": "0", "logwright.dead.letter.max.redeliver.count": "3"})


def test_sigkills_while_a_share_group_rejects_and_releases_leave_every_record_once_on_the_dead_letter_topic(
        share_broker: BrokerProcess) -> None:
    """The broker is SIGKILLed at random moments (mostly while a consumer's acknowledgements are in flight)
    while odd offsets are REJECTed and even ones RELEASEd to a limit of 2. After each restart the locks left
    behind are expired on the manual clock. In the end every record is on the DLQ exactly once: none lost
    (archived without its copy), none duplicated (copied twice). ``LOGWRIGHT_DLQ_KILLS`` raises the count
    (the opt-in run); CI runs a handful."""
    bootstrap, group = share_broker.bootstrap, f"dlq-crash-{uuid.uuid4().hex[:6]}"
    total, kills = 40, int(os.environ.get("LOGWRIGHT_DLQ_KILLS", "4"))
    dlq = dead_letter_topic(bootstrap)
    topic = setup_topic(bootstrap, group, total, **{"share.delivery.count.limit": "2", DLQ_TOPIC_KEY: dlq,
                                                    "share.record.lock.duration.ms": "15000"})
    rng = random.Random(13)
    for _ in range(kills):
        share = consumer(bootstrap, group, topic, **{"max.poll.records": "5"})
        killer = threading.Timer(rng.uniform(0.05, 1.5), share_broker.kill)
        killer.start()
        with contextlib.suppress(Exception):
            while share_broker.alive():
                for message in poll_batch(share, 1.0):
                    share.acknowledge(message, AcknowledgeType.REJECT if message.offset() % 2 else
                                      AcknowledgeType.RELEASE)
                commit(share)
        killer.join()
        share.close()
        share_broker.start()
        share_broker.advance_clock(15_001)  # locks held at the kill run out: delivered again or archived
    share = consumer(bootstrap, group, topic)
    while batch := poll_batch(share, 3.0):
        for message in batch:
            share.acknowledge(message, AcknowledgeType.REJECT if message.offset() % 2 else AcknowledgeType.RELEASE)
        commit(share)
    share.close()
    copies = read_all(bootstrap, dlq, total)
    offsets = sorted(int(headers_of(m)["__dlq.errors.offset"] or b"-1") for m in copies)
    assert offsets == list(range(total)), f"{len(copies)} copies: {offsets}"
    check_consistent(share_broker)


@pytest.fixture
def dlq_broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A broker of the test's own: logwright, or with ``--against kafka`` a Kafka 4.4 node formatted with
    ``share.version=2`` (with 1, Kafka archives rejected records and writes nothing to the DLQ); started with the
    broker configs a test gives it (indirect parametrization)."""
    config: dict[str, str] = getattr(request, "param", {})
    if request.config.getoption("--against", default="logwright") == "kafka":
        sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))
        from kafka_peer import KafkaPeer

        with KafkaPeer(tmp_path / "kafka", config=config, features={"share.version": 2}) as kafka:
            yield kafka.bootstrap
        return
    process = BrokerProcess(tmp_path / "data", config=config).start()
    try:
        yield process.bootstrap
    finally:
        process.kill()


def reject_one_record(bootstrap: str, group: str, dlq: str) -> str:
    """A two-partition topic whose ``group`` dead-letters to ``dlq``, one record on partition 1, which a share
    consumer receives alone and REJECTs; the topic."""
    topic = setup_topic(bootstrap, group, 0, partitions=2, **{DLQ_TOPIC_KEY: dlq})
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=b"k", value=b"poison", partition=1)
    assert producer.flush(30) == 0
    share = consumer(bootstrap, group, topic)
    batch = poll_batch(share, 60.0)
    assert [(m.partition(), m.offset()) for m in batch] == [(1, 0)]
    share.acknowledge(batch[0], AcknowledgeType.REJECT)
    assert commit(share) == {(topic, 1): None}
    share.close()
    return topic


@pytest.mark.differential
@pytest.mark.parametrize("dlq_broker", [{"errors.deadletterqueue.auto.create.topics.enable": "true"}], indirect=True)
def test_a_missing_dead_letter_topic_is_created_as_kafka_creates_it(dlq_broker: str) -> None:
    """With ``errors.deadletterqueue.auto.create.topics.enable``, the first archived record creates the group's
    dead-letter topic: the broker's default partitions, ``errors.deadletterqueue.group.enable=true`` and
    ``message.timestamp.type=CreateTime`` set on it, and the copy on it."""
    bootstrap, group = dlq_broker, f"dlq-auto-{uuid.uuid4().hex[:6]}"
    dlq = f"dlq.auto-{uuid.uuid4().hex[:8]}"
    reject_one_record(bootstrap, group, dlq)
    [copy] = read_all(bootstrap, dlq, 1)
    assert headers_of(copy)["__dlq.errors.offset"] == b"0"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_topics(TopicCollection([dlq]))[dlq].result(30)
    resource = ConfigResource(ConfigResource.Type.TOPIC, dlq)
    configs = admin.describe_configs([resource])[resource].result(30)
    assert (len(described.partitions), configs["errors.deadletterqueue.group.enable"].value,
            configs["message.timestamp.type"].value) == (1, "true", "CreateTime")
    assert {name for name, entry in configs.items() if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value} == {
        "errors.deadletterqueue.group.enable", "message.timestamp.type"}


@pytest.mark.differential
def test_reject_writes_kip_1191_headers_like_kafka(dlq_broker: str) -> None:
    bootstrap, group = dlq_broker, f"dlq-diff-{uuid.uuid4().hex[:6]}"
    dlq = dead_letter_topic(bootstrap, partitions=1)
    topic = reject_one_record(bootstrap, group, dlq)
    [copy] = read_all(bootstrap, dlq, 1)
    headers = headers_of(copy)
    assert (copy.partition(), copy.key(), copy.value()) == (0, None, None)
    assert {name for name in headers if name.startswith("__dlq.")} == {
        "__dlq.errors.topic", "__dlq.errors.partition", "__dlq.errors.offset", "__dlq.errors.group",
        "__dlq.errors.delivery.count", "__dlq.errors.message"}, headers
    assert (headers["__dlq.errors.topic"], headers["__dlq.errors.partition"], headers["__dlq.errors.offset"],
            headers["__dlq.errors.group"], headers["__dlq.errors.delivery.count"]) == (
        topic.encode(), b"1", b"0", group.encode(), b"1"), headers


@pytest.mark.differential
def test_share_version_1_archives_a_rejected_record_without_a_copy(dlq_broker: str) -> None:
    """``kafka-features downgrade --feature share.version=1`` keeps share groups but turns KIP-1191's copies off:
    a REJECTed record is archived and nothing is written to the group's dead-letter topic, as Kafka 4.4 does; back
    at 2 the next one is copied."""
    bootstrap, tag = dlq_broker, uuid.uuid4().hex[:6]
    dlq = dead_letter_topic(bootstrap, partitions=1)
    changed(bootstrap, ("share.version", 1, SAFE_DOWNGRADE))
    reject_one_record(bootstrap, f"dlq-level-1-{tag}", dlq)
    assert read_all(bootstrap, dlq, 0, idle_polls=6) == []
    changed(bootstrap, ("share.version", 2, UPGRADE))
    topic = reject_one_record(bootstrap, f"dlq-level-2-{tag}", dlq)
    [copy] = read_all(bootstrap, dlq, 1)
    assert headers_of(copy)["__dlq.errors.topic"] == topic.encode()
