"""Compacted topics as a Kafka client sees them, checked on Apache Kafka 4.4 too (``--against kafka``).

What DescribeConfigs says of the compaction configs and which values it refuses, that a record without a key
is refused, and what a consumer reads from offset 0 once the cleaner ran: each key's latest record at its own
offset (gaps elsewhere), tombstones kept within ``delete.retention.ms``, no record of an aborted transaction.
Kafka compacts only closed segments, so each scenario rolls one with a record far later than the rest, and
waits for Kafka's cleaner (it looks every ``log.cleaner.backoff.ms``, 15 s); logwright's cleaner is woken by
the roll itself.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from .compacted_topics import (
    SIZE_ROLLED,
    TIMEOUT_S,
    close_head,
    create_compacted,
    eventually,
    latest_per_key,
    max_timestamp,
    produce,
    produce_max_then_replace,
    read_partition,
)
from .group_configs import set_group_configs
from .test_share_group_offsets import describe as describe_share_offsets
from .test_share_groups import consumer as share_consumer
from .test_share_groups import take_all

pytestmark = pytest.mark.differential

CLEANER_WAIT_S = 90
INVALID_CONFIG = 40


def test_describe_configs_gives_kafkas_compaction_defaults(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"compaction-defaults-{int(time.time() * 1000)}"
    admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact"})])[topic].result(TIMEOUT_S)
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = _described_once_known(admin, resource)
    values = {name: (described[name].value, described[name].is_default) for name in (
        "cleanup.policy", "min.compaction.lag.ms", "max.compaction.lag.ms", "min.cleanable.dirty.ratio",
        "delete.retention.ms", "segment.ms", "segment.bytes")}
    assert values == {
        "cleanup.policy": ("compact", False), "min.compaction.lag.ms": ("0", True),
        "max.compaction.lag.ms": ("9223372036854775807", True), "min.cleanable.dirty.ratio": ("0.5", True),
        "delete.retention.ms": ("86400000", True), "segment.ms": ("604800000", True),
        "segment.bytes": ("1073741824", True),
    }


def _described_once_known(admin: AdminClient, resource: ConfigResource) -> dict[str, ConfigEntry]:
    """DescribeConfigs of a topic just created: on Kafka the broker answering may not know it yet (its metadata
    arrives from the controller a moment after CreateTopics answers: UNKNOWN_TOPIC_OR_PARTITION), as a client
    retries. logwright knows it at once."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            return admin.describe_configs([resource])[resource].result(TIMEOUT_S)  # type: ignore[no-any-return]
        except KafkaException as error:
            if error.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART or time.monotonic() >= deadline:
                raise
        time.sleep(0.1)


@pytest.mark.parametrize("configs", [
    {"cleanup.policy": "compacted"},
    {"cleanup.policy": "compact,none"},
    {"min.compaction.lag.ms": "-1"},
    {"max.compaction.lag.ms": "0"},
    {"min.cleanable.dirty.ratio": "1.5"},
    {"segment.bytes": "1048575"},
    {"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"},
], ids=lambda configs: ",".join(f"{key}={value}" for key, value in configs.items()))
def test_invalid_compaction_configs_are_refused(bootstrap: str, configs: dict[str, str]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"compaction-invalid-{int(time.time() * 1000)}"
    with pytest.raises(KafkaException) as refused:
        admin.create_topics([NewTopic(topic, 1, 1, config={"cleanup.policy": "compact", **configs})]
                            )[topic].result(TIMEOUT_S)
    assert refused.value.args[0].code() == INVALID_CONFIG


def test_a_record_without_a_key_is_refused_on_a_compacted_topic(bootstrap: str) -> None:
    topic = create_compacted(bootstrap)
    assert produce(bootstrap, topic, [(None, b"no key")])[0].code() == KafkaError.INVALID_RECORD  # type: ignore[union-attr]
    assert produce(bootstrap, topic, [(b"k", b"keyed")]) == [None]
    assert [(key, value) for _, key, value in read_partition(bootstrap, topic)] == [(b"k", b"keyed")]


def test_a_consumer_reads_each_keys_latest_record_at_its_own_offset(bootstrap: str) -> None:
    topic = create_compacted(bootstrap)
    now = int(time.time() * 1000)
    records: list[tuple[bytes | None, bytes | None]] = [
        (f"key-{index % 5}".encode(), f"value-{index}".encode()) for index in range(100)]
    records.append((b"key-4", None))
    assert set(produce(bootstrap, topic, records, now, step_ms=1)) == {None}
    close_head(bootstrap, topic, now + 10_000)
    latest = latest_per_key(records)
    expected = sorted([(offset, key, value) for key, (offset, value) in latest.items()] + [(101, b"head", b"roll")])
    entries = eventually(lambda: read_partition(bootstrap, topic), lambda found: len(found) == len(expected),
                         CLEANER_WAIT_S)
    assert entries == expected
    assert (100, b"key-4", None) in entries, "a tombstone stays for delete.retention.ms (a day by default)"


def test_no_record_of_an_aborted_transaction_is_left_after_compaction(bootstrap: str) -> None:
    topic = create_compacted(bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{topic}-tx"})
    producer.init_transactions(TIMEOUT_S)
    now = int(time.time() * 1000)
    for values, commit in (([(b"a", b"a1"), (b"b", b"b1")], True), ([(b"a", b"a2"), (b"c", b"c2")], False),
                           ([(b"b", b"b3")], True)):
        producer.begin_transaction()
        for key, value in values:
            producer.produce(topic, value=value, key=key, partition=0, timestamp=now)
        if commit:
            producer.commit_transaction(TIMEOUT_S)
        else:
            producer.abort_transaction(TIMEOUT_S)
    close_head(bootstrap, topic, now + 10_000)

    def values(found: list[tuple[int, bytes | None, bytes | None]]) -> list[bytes | None]:
        return [value for _, _, value in found]

    expected = [b"a1", b"b3", b"roll"]
    entries = eventually(lambda: read_partition(bootstrap, topic), lambda found: values(found) == expected,
                         CLEANER_WAIT_S)
    assert values(entries) == expected
    assert [offset for offset, _, _ in entries] == sorted(offset for offset, _, _ in entries)
    assert values(read_partition(bootstrap, topic, "read_committed")) == expected


def test_turning_compaction_on_compacts_what_the_topic_already_holds(bootstrap: str) -> None:
    """A delete topic with updates and a keyless record becomes compacted through IncrementalAlterConfigs: the next
    roll makes the old records cleanable, and the cleaner drops the keyless one as Kafka's does."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = f"compaction-later-{int(time.time() * 1000)}"
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
    now = int(time.time() * 1000)
    records: list[tuple[bytes | None, bytes | None]] = [(b"a", b"1"), (None, b"no key"), (b"a", b"2"), (b"b", b"3")]
    assert produce(bootstrap, topic, records, now) == [None] * 4
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("segment.ms", "100", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(TIMEOUT_S)
    close_head(bootstrap, topic, now + 10_000)
    expected = [(2, b"a", b"2"), (3, b"b", b"3"), (4, b"head", b"roll")]
    entries = eventually(lambda: read_partition(bootstrap, topic), lambda found: found == expected, CLEANER_WAIT_S)
    assert entries == expected


def test_a_tombstone_is_kept_then_removed_once_delete_retention_ms_passed(bootstrap: str) -> None:
    """``delete.retention.ms=1000``: the first pass keeps the tombstone (and stamps its horizon); a pass after the
    horizon removes it. Kafka runs that pass when new dirty data makes the partition due (any, at a dirty ratio of
    0.01), so the scenario writes more after the horizon; logwright's cleaner would run it at the horizon anyway."""
    topic = create_compacted(bootstrap, {"delete.retention.ms": "1000", "min.cleanable.dirty.ratio": "0.01"})
    now = int(time.time() * 1000)
    assert produce(bootstrap, topic, [(b"a", b"1"), (b"b", b"1"), (b"a", None)], now) == [None] * 3
    close_head(bootstrap, topic, now + 1_000)
    kept = [(1, b"b", b"1"), (2, b"a", None), (3, b"head", b"roll")]
    assert eventually(lambda: read_partition(bootstrap, topic), lambda found: found == kept, CLEANER_WAIT_S) == kept
    time.sleep(1.5)
    assert produce(bootstrap, topic, [(b"b", b"2")], now + 2_000) == [None]
    close_head(bootstrap, topic, now + 3_000)
    gone = [(3, b"head", b"roll"), (4, b"b", b"2"), (5, b"head", b"roll")]  # the last head is not in a closed segment
    assert eventually(lambda: read_partition(bootstrap, topic), lambda found: found == gone, CLEANER_WAIT_S) == gone


def test_list_offsets_by_time_in_a_compaction_gap_answers_the_first_record_that_remains(bootstrap: str) -> None:
    """Batches [a@t, b@t+10], [b@t+20, c@t+30], [c@t+40]: compaction keeps a@t, b@t+20, c@t+40 and the head, so
    the first two batches are rewritten without their later record. A time whose records went answers the first
    record that remains at or after it, at its own offset, as Kafka's ``searchForTimestamp`` does past the batch
    its time index names (which no longer holds one)."""
    topic = create_compacted(bootstrap)
    now = int(time.time() * 1000)
    for records, first in (([(b"a", b"1"), (b"b", b"1")], now), ([(b"b", b"2"), (b"c", b"1")], now + 20),
                           ([(b"c", b"2")], now + 40)):
        assert produce(bootstrap, topic, records, first, step_ms=10) == [None] * len(records)
    close_head(bootstrap, topic, now + 10_000)
    kept = [(0, b"a", b"1"), (2, b"b", b"2"), (4, b"c", b"2"), (5, b"head", b"roll")]
    assert eventually(lambda: read_partition(bootstrap, topic), lambda found: found == kept, CLEANER_WAIT_S) == kept
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"t-{topic}"})
    try:
        answers = {}
        for delta in (0, 5, 10, 20, 21, 30, 35, 41, 10_000, 10_001):
            (found,) = consumer.offsets_for_times([TopicPartition(topic, 0, now + delta)], TIMEOUT_S)
            answers[delta] = found.offset
    finally:
        consumer.close()
    assert answers == {0: 0, 5: 2, 10: 2, 20: 2, 21: 4, 30: 4, 35: 4, 41: 5, 10_000: 5, 10_001: -1}



def test_list_offsets_max_timestamp_after_its_record_is_compacted_answers_the_largest_that_remains(
        bootstrap: str) -> None:
    """a@t+1000 holds the partition's largest timestamp until a@t+10 replaces it; b and c tie at t+500 below it.
    Once compaction removed a@t+1000, ListOffsets MAX_TIMESTAMP (-3, KIP-734) answers the largest timestamp that
    remains and its first record (b, the earlier of the tie), as Kafka's cleaned segments' maxTimestampSoFar
    do, not (-1, -1). A later maximum in an open transaction is answered to READ_UNCOMMITTED only: Kafka drops
    a found record at or past the last stable offset rather than looking for another."""
    topic = create_compacted(bootstrap, SIZE_ROLLED)
    now = int(time.time() * 1000)
    first_kept = produce_max_then_replace(bootstrap, topic, now)
    entries = eventually(lambda: read_partition(bootstrap, topic), lambda found: found[:3] == first_kept,
                         CLEANER_WAIT_S)
    assert entries[:3] == first_kept
    assert max_timestamp(bootstrap, topic) == (now + 500, 1)
    assert max_timestamp(bootstrap, topic, read_committed=True) == (now + 500, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, key=b"d", value=b"1", partition=0, timestamp=now + 2_000)
    assert producer.flush(TIMEOUT_S) == 0
    try:
        assert max_timestamp(bootstrap, topic) == (now + 2_000, 18)
        assert max_timestamp(bootstrap, topic, read_committed=True) == (-1, -1)
    finally:
        producer.abort_transaction(TIMEOUT_S)


def test_a_share_group_settles_the_offsets_of_a_batch_the_cleaner_removed_whole(bootstrap: str, target: str) -> None:
    """Two batches, every key of the first written again in the second: the cleaner removes the first batch whole
    (offsets 0-13 hold no batch at all) and keeps the second's last three records. A share group reading from the
    earliest offset gets those three and the head, and once it accepted them nothing is left behind, lag 0: the
    offsets of the removed batch are acquired with the first batch returned (librdkafka's log: "Acquired Records
    from offset 0 to 60", on both brokers), and KIP-932 clients acknowledge offsets without a record as gaps.

    The start offset differs on purpose: Kafka's share coordinator persists the acknowledgement of the head (60)
    with the start offset it had before it (60, lag 0) and moves it past the head only at the group's next write;
    logwright's cursor moves with the acknowledgement (61)."""
    group = f"compacted-share-{uuid.uuid4().hex[:8]}"
    topic = create_compacted(bootstrap)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    now = int(time.time() * 1000)
    records: list[tuple[bytes | None, bytes | None]] = [(b"key-%d" % (index % 3), b"%d" % index)
                                                        for index in range(60)]
    for part in (records[:14], records[14:]):
        assert set(produce(bootstrap, topic, part, now, **{"linger.ms": 1000})) == {None}
    close_head(bootstrap, topic, now + 10_000)
    kept = [(57, b"key-0", b"57"), (58, b"key-1", b"58"), (59, b"key-2", b"59"), (60, b"head", b"roll")]
    assert eventually(lambda: read_partition(bootstrap, topic), lambda found: found == kept, CLEANER_WAIT_S) == kept
    share = share_consumer(bootstrap, group, topic)
    try:
        taken = take_all(share, len(kept))
    finally:
        share.close()
    assert sorted((m.offset(), m.key(), m.value()) for m in taken) == kept
    settled = {(topic, 0): (60 if target == "kafka" else 61, 0)}
    deadline = time.monotonic() + TIMEOUT_S
    while (found := describe_share_offsets(bootstrap, group)) != settled and time.monotonic() < deadline:
        time.sleep(0.5)  # Kafka's share coordinator persists a moment after the acknowledgement
    assert found == settled
