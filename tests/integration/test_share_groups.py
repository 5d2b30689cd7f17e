"""KIP-932 share groups with confluent-kafka's `ShareConsumer` (explicit acknowledgement) against a real broker.

The broker runs on a manual clock (``serve --manual-clock``): lock expiry is tested by advancing that
clock through the LogwrightAdvanceClock extension API, never by sleeping. Every scenario ends with
``logwright check`` on the stopped broker's data directory.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, KafkaError, KafkaException, Message, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from .broker_process import BrokerProcess
from .group_configs import set_group_configs

ADVANCE_CLOCK_KEY = 32001
LOCK_MS = 15000


@pytest.fixture
def share_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path / "data", extra_args=("--manual-clock",)).start()
    try:
        yield process
    finally:
        process.kill()


def advance_clock(bootstrap: str, milliseconds: int) -> int:
    """Move the broker's manual clock; when this returns, expired locks are released and durable."""
    host, port = bootstrap.rsplit(":", 1)
    client_id = b"share-tests"
    body = struct.pack(">hhih", ADVANCE_CLOCK_KEY, 0, 7, len(client_id)) + client_id + struct.pack(">q", milliseconds)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", _read(sock, 4))[0]
        correlation_id, error_code, now_ms = struct.unpack(">ihq", _read(sock, size))
    assert correlation_id == 7 and error_code == 0
    return int(now_ms)


def _read(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        assert chunk, "the broker closed the connection"
        data += chunk
    return data


def setup_topic(bootstrap: str, group: str, records: int, partitions: int = 1, **configs: str) -> str:
    """A fresh topic with ``records`` records and a share group that starts at the earliest offset."""
    topic = f"share-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(30)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest", **configs})
    produce(bootstrap, topic, [f"r{i}" for i in range(records)])
    return topic


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value=value.encode())
    assert producer.flush(30) == 0


def consumer(bootstrap: str, group: str, topic: str, **config: str) -> ShareConsumer:
    share = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "share.acknowledgement.mode": "explicit", **config})
    share.subscribe([topic])
    return share


def poll_batch(share: ShareConsumer, timeout_s: float = 30.0) -> list[Message]:
    """The next non-empty batch (every message must then be acknowledged), or [] after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        messages = [m for m in share.poll(0.5)]
        for message in messages:
            assert message.error() is None, message.error()
        if messages:
            return messages
    return []


def commit(share: ShareConsumer) -> dict[tuple[str, int], KafkaError | None]:
    results = share.commit_sync(30)
    return {(tp.topic, tp.partition): (error.args[0] if error is not None else None) for tp, error in results.items()}


def check_consistent(broker: BrokerProcess) -> None:
    assert broker.stop() == 0, broker.log_tail()
    command = [sys.executable, "-m", "logwright", "check", "--data-dir", str(broker.data_dir)]
    check = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert check.returncode == 0 and "consistent" in check.stdout, check.stdout + check.stderr


def take_all(share: ShareConsumer, count: int, ack: AcknowledgeType = AcknowledgeType.ACCEPT) -> list[Message]:
    taken: list[Message] = []
    while len(taken) < count:
        batch = poll_batch(share)
        assert batch, f"only {len(taken)} of {count} records arrived"
        for message in batch:
            share.acknowledge(message, ack)
        taken.extend(batch)
        assert all(error is None for error in commit(share).values())
    return taken


def test_accept_settles_records(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "accept-group"
    topic = setup_topic(bootstrap, group, 5)
    first = consumer(bootstrap, group, topic)
    taken = take_all(first, 5)
    assert sorted(m.offset() for m in taken) == [0, 1, 2, 3, 4]
    assert {m.value() for m in taken} == {f"r{i}".encode() for i in range(5)}
    assert all(m.delivery_count() == 1 for m in taken)
    first.close()
    produce(bootstrap, topic, ["late"])
    second = consumer(bootstrap, group, topic)
    batch = poll_batch(second)
    assert [(m.offset(), m.value(), m.delivery_count()) for m in batch] == [(5, b"late", 1)]
    second.acknowledge(batch[0])
    assert commit(second) == {(topic, 0): None}
    assert poll_batch(second, 2.0) == []
    second.close()
    check_consistent(share_broker)


def test_release_redelivers_with_a_higher_delivery_count(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "release-group"
    topic = setup_topic(bootstrap, group, 3)
    share = consumer(bootstrap, group, topic)
    seen: list[tuple[int, int]] = []
    while len(seen) < 3:
        batch = poll_batch(share)
        assert batch
        for message in batch:
            seen.append((message.offset(), message.delivery_count()))
            release = message.offset() == 1
            share.acknowledge(message, AcknowledgeType.RELEASE if release else AcknowledgeType.ACCEPT)
        assert all(error is None for error in commit(share).values())
    assert sorted(seen) == [(0, 1), (1, 1), (2, 1)]
    again = poll_batch(share)
    assert [(m.offset(), m.value(), m.delivery_count()) for m in again] == [(1, b"r1", 2)]
    share.acknowledge(again[0])
    assert commit(share) == {(topic, 0): None}
    share.close()
    check_consistent(share_broker)


def test_reject_is_never_redelivered(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "reject-group"
    topic = setup_topic(bootstrap, group, 3)
    share = consumer(bootstrap, group, topic)
    taken: list[int] = []
    while len(taken) < 3:
        batch = poll_batch(share)
        assert batch
        for message in batch:
            taken.append(message.offset())
            reject = message.offset() == 1
            share.acknowledge(message, AcknowledgeType.REJECT if reject else AcknowledgeType.ACCEPT)
        assert all(error is None for error in commit(share).values())
    produce(bootstrap, topic, ["after"])
    batch = poll_batch(share)
    assert [(m.offset(), m.value(), m.delivery_count()) for m in batch] == [(3, b"after", 1)]
    share.acknowledge(batch[0])
    commit(share)
    assert poll_batch(share, 2.0) == []
    share.close()
    check_consistent(share_broker)


def test_lock_expiry_redelivers_to_another_consumer(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "expiry-group"
    topic = setup_topic(bootstrap, group, 3, **{"share.record.lock.duration.ms": str(LOCK_MS)})
    holder = consumer(bootstrap, group, topic)
    held: list[Message] = []
    while len(held) < 3:
        batch = poll_batch(holder)
        assert batch
        held.extend(batch)
    other = consumer(bootstrap, group, topic)
    assert poll_batch(other, 3.0) == [], "records under a lock were delivered to a second consumer"
    advance_clock(bootstrap, LOCK_MS + 1)
    redelivered: list[Message] = []
    while len(redelivered) < 3:
        batch = poll_batch(other)
        assert batch, "expired locks were not redelivered"
        for message in batch:
            other.acknowledge(message)
        redelivered.extend(batch)
        assert all(error is None for error in commit(other).values())
    assert sorted((m.offset(), m.delivery_count()) for m in redelivered) == [(0, 2), (1, 2), (2, 2)]
    for message in held:
        holder.acknowledge(message)
    outcome = commit(holder)
    assert outcome[(topic, 0)] is not None and outcome[(topic, 0)].code() == KafkaError.INVALID_RECORD_STATE
    holder.close()
    other.close()
    check_consistent(share_broker)


def test_two_consumers_share_one_partition_without_overlap(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "pair-group"
    total = 200
    topic = setup_topic(bootstrap, group, 0)
    for start in range(0, total, 10):  # stored batches of ten: a ShareFetch acquires whole batches (KIP-932)
        produce(bootstrap, topic, [f"r{i}" for i in range(start, start + 10)])
    pair = [consumer(bootstrap, group, topic, **{"max.poll.records": "10"}) for _ in range(2)]
    offsets: list[list[int]] = [[], []]
    deadline = time.monotonic() + 90
    while sum(map(len, offsets)) < total and time.monotonic() < deadline:
        for index, share in enumerate(pair):
            batch = poll_batch(share, 1.0)
            for message in batch:
                share.acknowledge(message)
            offsets[index].extend(m.offset() for m in batch)
            if batch:
                assert all(error is None for error in commit(share).values())
    first, second = set(offsets[0]), set(offsets[1])
    assert len(offsets[0]) == len(first) and len(offsets[1]) == len(second)
    assert not first & second, f"delivered to both: {sorted(first & second)[:10]}"
    assert first | second == set(range(total))
    assert first and second, "one consumer got every record"
    for share in pair:
        share.close()
    check_consistent(share_broker)


def test_delivery_count_survives_a_broker_kill(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "restart-share-group"
    topic = setup_topic(bootstrap, group, 1)
    share = consumer(bootstrap, group, topic)
    counts = []
    for _ in range(3):
        batch = poll_batch(share)
        assert [m.offset() for m in batch] == [0]
        counts.append(batch[0].delivery_count())
        share.acknowledge(batch[0], AcknowledgeType.RELEASE)
        assert commit(share) == {(topic, 0): None}
    assert counts == [1, 2, 3]
    share.close()
    share_broker.kill()
    share_broker.start()
    after = consumer(bootstrap, group, topic)
    batch = poll_batch(after)
    assert [(m.offset(), m.delivery_count()) for m in batch] == [(0, 4)], "the count of 3 was not kept"
    after.acknowledge(batch[0])
    assert commit(after) == {(topic, 0): None}
    after.close()
    check_consistent(share_broker)


@pytest.mark.parametrize(("key", "value"), [
    ("logwright.subscription.mode", "round_robin"),
    ("share.record.lock.duration.ms", "1000"),
    ("share.delivery.count.limit", "11"),
    ("share.auto.offset.reset", "yesterday"),
])
def test_invalid_share_group_configs_are_refused_with_a_message(bootstrap: str, key: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    group = f"config-{uuid.uuid4().hex[:8]}"
    entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[entry])
    with pytest.raises(Exception) as refused:
        admin.incremental_alter_configs([resource])[resource].result(30)
    error = refused.value.args[0]
    assert error.code() == KafkaError.INVALID_CONFIG and key in error.str()


def test_share_group_configs_are_stored_and_described(bootstrap: str, target: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    group = f"config-{uuid.uuid4().hex[:8]}"
    values = {"logwright.subscription.mode": "key_shared", "share.delivery.count.limit": "3",
              "share.record.lock.duration.ms": "20000", "share.auto.offset.reset": "by_duration:PT1H"}
    if target == "kafka":  # the subscription mode is logwright's own group config; Kafka refuses unknown keys
        del values["logwright.subscription.mode"]
    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in values.items()]
    resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)
    deadline = time.monotonic() + 30  # Kafka's brokers learn group configs from the metadata log a bit later
    while True:
        described = admin.describe_configs([ConfigResource(ConfigResource.Type.GROUP, group)])
        configs = next(iter(described.values())).result(30)
        found = {key: configs[key].value for key in values if key in configs}
        if found == values or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert found == values


def test_the_subscription_mode_cannot_change_while_the_group_has_members(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "mode-change-group"
    topic = setup_topic(bootstrap, group, 2, **{"logwright.subscription.mode": "failover"})
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def set_mode(mode: str) -> None:
        resource = ConfigResource(ConfigResource.Type.GROUP, group, incremental_configs=[
            ConfigEntry("logwright.subscription.mode", mode, incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(30)

    member = consumer(bootstrap, group, topic)
    taken = take_all(member, 2)
    assert len(taken) == 2
    with pytest.raises(KafkaException) as refused:
        set_mode("key_shared")
    error = refused.value.args[0]
    assert error.code() == KafkaError.INVALID_CONFIG
    assert "is 'failover' and it has 1 members: it cannot become 'key_shared'" in error.str()
    set_mode("failover")  # naming the mode it already has is no change
    member.close()
    set_mode("key_shared")  # empty now: it applies from the next join
    described = admin.describe_configs([ConfigResource(ConfigResource.Type.GROUP, group)])
    assert next(iter(described.values())).result(30)["logwright.subscription.mode"].value == "key_shared"
    check_consistent(share_broker)


def test_an_exclusive_share_group_refuses_a_second_member_clearly(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "exclusive-group"
    topic = setup_topic(bootstrap, group, 3, **{"logwright.subscription.mode": "exclusive"})
    first = consumer(bootstrap, group, topic)
    taken = take_all(first, 3)
    assert sorted(m.offset() for m in taken) == [0, 1, 2]
    second = consumer(bootstrap, group, topic)
    with pytest.raises(KafkaException) as refused:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            second.poll(0.5)
    assert refused.value.args[0].code() == KafkaError.GROUP_MAX_SIZE_REACHED
    with contextlib.suppress(KafkaException):
        second.close()
    first.close()
    check_consistent(share_broker)


def test_key_shared_keeps_each_key_on_one_consumer(share_broker: BrokerProcess) -> None:
    bootstrap, group = share_broker.bootstrap, "key-shared-group"
    topic = setup_topic(bootstrap, group, 0, **{"logwright.subscription.mode": "key_shared"})
    pair = [consumer(bootstrap, group, topic) for _ in range(2)]
    for share in pair:  # both join before any record exists, so the key space is split once
        assert poll_batch(share, 2.0) == []
    producer = Producer({"bootstrap.servers": bootstrap})
    keys = [f"key-{i}" for i in range(20)]
    for round_ in range(5):
        for key in keys:
            producer.produce(topic, key=key.encode(), value=f"{key}/{round_}".encode())
    assert producer.flush(30) == 0
    owners: dict[bytes, set[int]] = {}
    order: dict[bytes, list[bytes]] = {}
    seen = 0
    deadline = time.monotonic() + 90
    while seen < 100 and time.monotonic() < deadline:
        for index, share in enumerate(pair):
            batch = poll_batch(share, 1.0)
            for message in batch:
                owners.setdefault(message.key(), set()).add(index)
                order.setdefault(message.key(), []).append(message.value())
                share.acknowledge(message)
            seen += len(batch)
            if batch:
                assert all(error is None for error in commit(share).values())
    assert seen == 100
    assert all(len(holders) == 1 for holders in owners.values()), owners
    assert {next(iter(holders)) for holders in owners.values()} == {0, 1}, "one consumer owned every key"
    for key, values in order.items():
        assert values == [f"{key.decode()}/{r}".encode() for r in range(5)]
    for share in pair:
        share.close()
    check_consistent(share_broker)
