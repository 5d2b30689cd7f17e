"""KIP-848 consumer groups (``group.protocol=consumer``) with confluent-kafka 2.16.1 over TCP.

Members share a 6-partition topic with no record consumed twice while members join and leave; committed
offsets resume the group; a broker restart keeps members, epochs and assignments. The scenarios marked
differential pass on Apache Kafka 4.4 as they are (its default 5 s heartbeat interval makes them slower
there); restarts and the manual clock need a private logwright process.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from .broker_process import BrokerProcess
from .consumer_protocol_wire import describe
from .test_share_groups import check_consistent

PARTITIONS = 6


def _topic(bootstrap: str) -> str:
    """A fresh topic of `PARTITIONS`, once Metadata lists all of them: Kafka's group coordinator maps a classic
    member's assignment through the same metadata image and drops a topic it does not know yet (an upgraded classic
    member once kept nothing of what it owned, compat-kafka-fast in session 89)."""
    name = f"kip848-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS)])[name].result(30)
    deadline = time.monotonic() + 30
    while len(admin.list_topics(name, 30).topics[name].partitions) < PARTITIONS:
        assert time.monotonic() < deadline, f"{name} was created but Metadata does not list it"
        time.sleep(0.05)
    return name


def _produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for value in range(start, start + count):
        producer.produce(topic, value=str(value).encode(), partition=value % PARTITIONS)
    assert producer.flush(30) == 0


def _member(bootstrap: str, group: str, topic: str) -> Consumer:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    return consumer


class Work:
    """Who consumed what; every record is committed right after it is read, so a record read twice is a
    partition handed over before its old owner had revoked it (or a lost commit)."""

    def __init__(self) -> None:
        self.readers: dict[int, list[int]] = {}

    def poll_all(self, members: dict[int, Consumer]) -> None:
        for number, member in members.items():
            message = member.poll(0.05)
            if message is None or message.error():
                continue
            self.readers.setdefault(int(message.value()), []).append(number)
            self.commit(member, message)

    def commit(self, member: Consumer, message: Message) -> None:
        """Commit right after the read; a second refusal fails the scenario."""
        for attempt in range(2):
            try:
                member.commit(message, asynchronous=False)
                break
            except KafkaException:
                if attempt:
                    raise

    def until(self, members: dict[int, Consumer], done: int, layout: int, timeout_s: float = 120) -> list[set[int]]:
        """Poll until ``done`` records are read and every member has ``layout`` partitions (0: any split)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.poll_all(members)
            owned = [{tp.partition for tp in member.assignment()} for member in members.values()]
            spread = all(len(partitions) == layout for partitions in owned) if layout else all(owned)
            if len(self.readers) >= done and spread:
                return owned
        raise AssertionError(f"read {len(self.readers)} of {done}; assignments {owned}")

    def read_once(self, count: int) -> None:
        assert sorted(self.readers) == list(range(count))
        twice = {value: readers for value, readers in self.readers.items() if len(readers) > 1}
        assert not twice, f"records read more than once: {sorted(twice.items())[:10]}"


def _disjoint_cover(owned: list[set[int]]) -> None:
    assert sum(len(partitions) for partitions in owned) == PARTITIONS
    assert set().union(*owned) == set(range(PARTITIONS))


@pytest.mark.differential
def test_members_join_and_leave_without_reading_a_record_twice(bootstrap: str) -> None:
    topic = _topic(bootstrap)
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    _produce(bootstrap, topic, 0, 300)
    work = Work()
    members = {1: _member(bootstrap, group, topic), 2: _member(bootstrap, group, topic)}
    try:
        _disjoint_cover(work.until(members, 300, layout=3))
        members[3] = _member(bootstrap, group, topic)
        _produce(bootstrap, topic, 300, 300)
        _disjoint_cover(work.until(members, 600, layout=2))
        members.pop(2).close()
        _produce(bootstrap, topic, 600, 300)
        _disjoint_cover(work.until(members, 900, layout=3))
        work.read_once(900)
    finally:
        for member in members.values():
            member.close()

    _produce(bootstrap, topic, 900, 30)
    resumed = {4: _member(bootstrap, group, topic)}
    try:
        work.until(resumed, 930, layout=PARTITIONS)
    finally:
        resumed[4].close()
    work.read_once(930)


@pytest.fixture
def private_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    process = BrokerProcess(tmp_path / "data", config={"group.consumer.heartbeat.interval.ms": "500",
                                                            "group.consumer.min.heartbeat.interval.ms": "500"}).start()
    try:
        yield process
    finally:
        process.kill()


@pytest.mark.logwright_only(reason="restarts the broker")
def test_a_restarted_broker_keeps_the_group(private_broker: BrokerProcess) -> None:
    bootstrap = private_broker.bootstrap
    topic = _topic(bootstrap)
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    _produce(bootstrap, topic, 0, 120)
    work = Work()
    members = {1: _member(bootstrap, group, topic), 2: _member(bootstrap, group, topic)}
    try:
        before = work.until(members, 120, layout=3)
        described = describe(bootstrap, group)
        assert described.group_state == "Stable"
        assert private_broker.stop() == 0
        private_broker.start()
        _produce(bootstrap, topic, 120, 120)
        after = work.until(members, 240, layout=3)
        assert after == before
        again = describe(bootstrap, group)
        assert (again.group_epoch, again.assignment_epoch) == (described.group_epoch, described.assignment_epoch)
        assert [(m.member_id, m.member_epoch) for m in again.members] == [
            (m.member_id, m.member_epoch) for m in described.members]
        work.read_once(240)
    finally:
        for member in members.values():
            member.close()
    check_consistent(private_broker)
