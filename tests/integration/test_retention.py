"""Time and size retention (``retention.ms``, ``retention.bytes``) on a logwright process on a manual clock:
whole segments go from the oldest on, the log start moves (ListOffsets earliest, OFFSET_OUT_OF_RANGE below it),
the active segment goes too once every record expired, a compact-only topic keeps everything, and
``logwright check`` agrees afterwards; no segment goes sooner than ``log.retention.check.interval.ms`` after its
newest append (a record stamped 1970 stays readable that long, as on Kafka)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .broker_process import BrokerProcess
from .compacted_topics import TIMEOUT_S, produce, read_partition
from .test_share_groups import advance_clock, check_consistent

pytestmark = pytest.mark.logwright_only(reason="a private broker on a manual clock and logwright check")


@pytest.fixture
def quick_check_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A manual-clock broker whose check interval is 1 s, for the tests of the predicates."""
    process = BrokerProcess(tmp_path / "data", config={"log.retention.check.interval.ms": "1000"},
                            extra_args=("--manual-clock",)).start()
    try:
        yield process
    finally:
        process.kill()


def create(bootstrap: str, configs: dict[str, str]) -> str:
    topic = f"retained-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(TIMEOUT_S)
    return topic


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), TIMEOUT_S)
        return int(low), int(high)
    finally:
        consumer.close()


def fetch_error_from(bootstrap: str, topic: str, offset: int) -> int | None:
    """The error a consumer with ``auto.offset.reset=error`` meets fetching from ``offset`` (None: a record)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"f-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "error", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, offset)])
        for _ in range(20):
            message = consumer.poll(1.0)
            if message is None:
                continue
            error = message.error()
            return None if error is None else int(error.code())
        raise AssertionError("no answer from the fetch")
    finally:
        consumer.close()


@pytest.mark.parametrize("policy", ["delete", "compact,delete", "compact"])
def test_retention_ms_deletes_expired_segments_then_the_active_one(quick_check_broker: BrokerProcess,
                                                                   policy: str) -> None:
    clock_broker = quick_check_broker
    bootstrap = clock_broker.bootstrap
    topic = create(bootstrap, {"cleanup.policy": policy, "retention.ms": "60000", "segment.ms": "10000"})
    now = advance_clock(bootstrap, 0)
    records = [(b"k%d" % index, b"v%d" % index) for index in range(7)]
    assert produce(bootstrap, topic, records[:3], now) == [None] * 3  # segment 0-2, newest at now
    assert produce(bootstrap, topic, records[3:6], now + 20_000) == [None] * 3  # rolls: segment 3-5
    assert produce(bootstrap, topic, records[6:], now + 40_000) == [None]  # rolls: the active segment 6
    advance_clock(bootstrap, 60_000)
    assert watermarks(bootstrap, topic) == (0, 7)  # now - newest == retention.ms: not yet
    advance_clock(bootstrap, 1)
    if policy == "compact":
        assert watermarks(bootstrap, topic) == (0, 7)  # no delete policy: no time retention
        assert [entry[0] for entry in read_partition(bootstrap, topic)] == list(range(7))
        check_consistent(clock_broker)
        return
    assert watermarks(bootstrap, topic) == (3, 7)
    assert fetch_error_from(bootstrap, topic, 0) == KafkaError._AUTO_OFFSET_RESET
    assert fetch_error_from(bootstrap, topic, 3) is None
    advance_clock(bootstrap, 20_000)
    assert watermarks(bootstrap, topic) == (6, 7)
    advance_clock(bootstrap, 19_999)
    assert watermarks(bootstrap, topic) == (6, 7)  # the active segment stays while a record in it is young
    advance_clock(bootstrap, 1)
    assert watermarks(bootstrap, topic) == (7, 7)  # every record expired: Kafka rolls and deletes it too
    assert clock_broker.stop() == 0, clock_broker.log_tail()
    clock_broker.start()
    assert watermarks(bootstrap, topic) == (7, 7)
    check_consistent(clock_broker)


def test_retention_bytes_keeps_the_newest_segments_above_the_limit(quick_check_broker: BrokerProcess) -> None:
    clock_broker = quick_check_broker
    bootstrap = clock_broker.bootstrap
    limit = 1_500_000
    topic = create(bootstrap, {"retention.bytes": str(limit), "retention.ms": "-1", "segment.bytes": "1048576"})
    value = b"x" * 100_000
    assert produce(bootstrap, topic, [(None, value)] * 40, None, **{"batch.size": 100}) == [None] * 40
    advance_clock(bootstrap, 1_000)  # the check interval since the appends
    low, high = watermarks(bootstrap, topic)
    assert high == 40
    kept = high - low
    # whole segments of about ten 100 kB batches go while the rest stays at least 1.5 MB
    assert 15 <= kept <= 26, (low, high)
    assert fetch_error_from(bootstrap, topic, low - 1) == KafkaError._AUTO_OFFSET_RESET
    assert fetch_error_from(bootstrap, topic, low) is None
    check_consistent(clock_broker)


def test_a_record_stamped_1970_stays_readable_for_the_check_interval(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = create(bootstrap, {})  # the default 7-day retention and 5-minute check interval
    assert produce(bootstrap, topic, [(b"old", b"1970")], 1) == [None]
    assert [entry[0] for entry in read_partition(bootstrap, topic)] == [0]
    advance_clock(bootstrap, 299_000)
    assert watermarks(bootstrap, topic) == (0, 1)
    assert fetch_error_from(bootstrap, topic, 0) is None
    advance_clock(bootstrap, 1_000)  # five minutes after the append: Kafka's check would have come
    assert watermarks(bootstrap, topic) == (1, 1)
    check_consistent(clock_broker)


def test_size_retention_waits_for_the_check_interval_too(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = create(bootstrap, {"retention.bytes": "1500000", "retention.ms": "-1", "segment.bytes": "1048576"})
    assert produce(bootstrap, topic, [(None, b"x" * 100_000)] * 40, None, **{"batch.size": 100}) == [None] * 40
    assert watermarks(bootstrap, topic) == (0, 40)
    advance_clock(bootstrap, 299_999)
    assert watermarks(bootstrap, topic) == (0, 40)
    advance_clock(bootstrap, 1)
    low, high = watermarks(bootstrap, topic)
    assert high == 40 and 15 <= high - low <= 26, (low, high)


def test_after_a_restart_existing_records_wait_one_check_interval(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = create(bootstrap, {})
    assert produce(bootstrap, topic, [(b"old", b"1970")], 1) == [None]
    advance_clock(bootstrap, 200_000)
    assert clock_broker.stop() == 0, clock_broker.log_tail()
    clock_broker.start()  # append times are not stored: the record counts as appended at the start
    assert watermarks(bootstrap, topic) == (0, 1)
    advance_clock(bootstrap, 299_000)
    assert watermarks(bootstrap, topic) == (0, 1)
    advance_clock(bootstrap, 1_000)
    assert watermarks(bootstrap, topic) == (1, 1)
