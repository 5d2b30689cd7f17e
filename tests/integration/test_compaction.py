"""Compacted topics on a logwright process of the test's own: the changelog of a table, tombstones on the manual
clock, ``min.compaction.lag.ms``, restarts, SIGKILLs in the middle of a pass, and ``logwright check`` after it.

Record times are set by the producers from the broker's (manual) clock, since Kafka judges segments and lags by
record timestamps; LogwrightAdvanceClock answers once every pass that came due has run and is durable.
"""

from __future__ import annotations

import collections
import os
import random
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, TopicPartition

from .broker_process import BrokerProcess
from .compacted_topics import (
    SIZE_ROLLED,
    Entry,
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
from .test_faust import VOCABULARY, Worker, high_watermarks, wait_for_commits, wait_for_counts
from .test_faust import produce as faust_produce
from .test_share_group_offsets import describe as describe_share_offsets
from .test_share_groups import advance_clock, check_consistent, poll_batch, take_all
from .test_share_groups import consumer as share_consumer

pytestmark = pytest.mark.logwright_only(reason="a private broker on a manual clock, restarts and logwright check")

KEYS = 10
UPDATES = 1000


def changelog(keys: int, updates: int, value_bytes: int = 0) -> list[tuple[bytes | None, bytes | None]]:
    """A table's changelog: ``updates`` rounds over ``keys`` keys, each value naming its round."""
    padding = b"." * value_bytes
    return [(f"word-{index % keys}".encode(), b"%d" % (index // keys) + padding) for index in range(keys * updates)]


def expected_entries(records: list[tuple[bytes | None, bytes | None]], head_offset: int) -> list[Entry]:
    latest = latest_per_key(records)
    return sorted([(offset, key, value) for key, (offset, value) in latest.items()] + [(head_offset, b"head", b"roll")])


def kafka_python_read(bootstrap: str, topic: str, count: int) -> list[Entry]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        found: list[Entry] = []
        for message in consumer:
            found.append((message.offset, message.key, message.value))
            if len(found) == count:
                break
        return found
    finally:
        consumer.close()


def test_a_table_changelog_compacts_to_the_latest_value_per_key_and_stays_so(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = create_compacted(bootstrap)
    now = advance_clock(bootstrap, 0)
    records = changelog(KEYS, UPDATES)
    assert set(produce(bootstrap, topic, records, now, step_ms=1)) == {None}
    close_head(bootstrap, topic, now + len(records) + 10_000)
    advance_clock(bootstrap, 0)
    expected = expected_entries(records, len(records))
    assert [offset for offset, _, _ in expected] == [*range(len(records) - KEYS, len(records) + 1)]
    assert read_partition(bootstrap, topic) == expected, "a worker recovers its table from 11 of 10,001 records"
    assert kafka_python_read(bootstrap, topic, len(expected)) == expected
    assert clock_broker.stop() == 0, clock_broker.log_tail()
    clock_broker.start()
    assert read_partition(bootstrap, topic) == expected
    check_consistent(clock_broker)


def test_max_timestamp_after_its_record_was_compacted_away_is_kept_across_a_restart(
        clock_broker: BrokerProcess) -> None:
    """The kept maximum lives in the cleaner checkpoint and the segment models are rebuilt at start-up, so
    ListOffsets MAX_TIMESTAMP answers the same after a restart, and after appends past the old maximum."""
    bootstrap = clock_broker.bootstrap
    topic = create_compacted(bootstrap, SIZE_ROLLED)
    now = advance_clock(bootstrap, 0)
    first_kept = produce_max_then_replace(bootstrap, topic, now)
    advance_clock(bootstrap, 0)
    assert read_partition(bootstrap, topic)[:3] == first_kept
    assert max_timestamp(bootstrap, topic) == (now + 500, 1)
    assert clock_broker.stop() == 0, clock_broker.log_tail()
    clock_broker.start()
    assert max_timestamp(bootstrap, topic) == (now + 500, 1)
    assert produce(bootstrap, topic, [(b"d", b"1"), (b"e", b"1")], now + 700) == [None, None]
    assert max_timestamp(bootstrap, topic) == (now + 700, 18), "the first of two records tied in one batch"
    check_consistent(clock_broker)


def test_a_tombstone_stays_for_delete_retention_ms_then_goes(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = create_compacted(bootstrap, {"delete.retention.ms": "60000"})
    now = advance_clock(bootstrap, 0)
    assert produce(bootstrap, topic, [(b"a", b"1"), (b"b", b"2"), (b"a", None)], now) == [None] * 3
    close_head(bootstrap, topic, now + 10_000)
    advance_clock(bootstrap, 0)
    kept = [(1, b"b", b"2"), (2, b"a", None), (3, b"head", b"roll")]
    assert read_partition(bootstrap, topic) == kept
    advance_clock(bootstrap, 59_999)
    assert read_partition(bootstrap, topic) == kept
    advance_clock(bootstrap, 1)
    assert read_partition(bootstrap, topic) == [(1, b"b", b"2"), (3, b"head", b"roll")]
    assert clock_broker.stop() == 0, clock_broker.log_tail()
    clock_broker.start()
    assert read_partition(bootstrap, topic) == [(1, b"b", b"2"), (3, b"head", b"roll")]
    check_consistent(clock_broker)


def test_min_compaction_lag_keeps_new_records_until_they_are_old_enough(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = create_compacted(bootstrap, {"min.compaction.lag.ms": "60000"})
    now = advance_clock(bootstrap, 0)
    records = changelog(2, 5)
    assert set(produce(bootstrap, topic, records, now)) == {None}
    close_head(bootstrap, topic, now + 1000)
    advance_clock(bootstrap, 59_999)
    assert len(read_partition(bootstrap, topic)) == len(records) + 1
    advance_clock(bootstrap, 1)
    assert read_partition(bootstrap, topic) == expected_entries(records, len(records))
    check_consistent(clock_broker)


def test_a_sigkill_in_the_middle_of_a_pass_loses_nothing(broker: BrokerProcess) -> None:
    """Multi-slice passes (about 4 MiB, 0.3-0.5 s each) on the system clock, the broker killed 0-0.4 s after the
    record that makes each one due; ``LOGWRIGHT_COMPACTION_KILLS`` rounds (3 by default)."""
    topic = create_compacted(broker.bootstrap)
    records: list[tuple[bytes | None, bytes | None]] = []
    rounds = int(os.environ.get("LOGWRIGHT_COMPACTION_KILLS", "3"))
    generator = random.Random(16)
    for round_index in range(rounds):
        written = changelog(20, 500, value_bytes=400)
        now = int(time.time() * 1000)
        assert set(produce(broker.bootstrap, topic, written, now)) == {None}
        records += written
        close_head(broker.bootstrap, topic, now + 10_000)
        records.append((b"head", b"roll"))
        timer = threading.Timer(generator.uniform(0.0, 0.4), broker.kill)
        timer.start()
        timer.join()
        broker.start()
        latest = {key: value for key, value in records}
        found = {key: value for _, key, value in read_partition(broker.bootstrap, topic)}
        assert found == latest, f"round {round_index}: a key lost its latest value"
    expected = expected_entries(records[:-1], len(records) - 1)  # the last head is in the active segment
    entries = eventually(lambda: read_partition(broker.bootstrap, topic), lambda found: found == expected, 30)
    assert entries == expected
    check_consistent(broker)


def wait_past_segment_ms(bootstrap: str, changelog_topic: str, records: int, segment_ms: int = 100) -> None:
    """Until the changelog holds ``records`` and the wall clock is more than ``segment_ms`` past the newest: faust
    stamps its changelog records with its own clock when its producer sends them, and the next burst rolls the head
    segment only if it comes that much later (on a fast machine the second burst came 92 ms after a partition's
    first changelog batch, and that partition never rolled)."""
    deadline = time.monotonic() + 30
    while sum(high_watermarks(bootstrap, changelog_topic)) < records and time.monotonic() < deadline:
        time.sleep(0.05)
    newest = max(max_timestamp(bootstrap, changelog_topic, partition_index=index)[0] for index in range(2))
    while time.time() * 1000 <= newest + segment_ms:
        time.sleep(0.01)


def test_a_faust_worker_recovers_its_table_from_a_compacted_changelog(broker: BrokerProcess, tmp_path: Path) -> None:
    """faust-streaming's word count with its changelog created compacted beforehand with ``segment.ms=100``: of
    300 updates the changelog keeps about one per word (10) plus the head segment (the last 50 at most), and a
    second worker recovers its table from that and counts on."""
    bootstrap = broker.bootstrap
    app = f"wordcount-{uuid.uuid4().hex[:8]}"
    names = {"app": app, "input": f"words-{app}", "output": f"counts-{app}"}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    changelog = f"{app}-word_counts-changelog"
    created = admin.create_topics([NewTopic(names["input"], 2),
                                   NewTopic(changelog, 2, config={"cleanup.policy": "compact", "segment.ms": "100"})])
    for future in created.values():
        future.result(30)
    env = {**os.environ, "WORDCOUNT_APP_ID": app, "WORDCOUNT_BOOTSTRAP": bootstrap,
           "WORDCOUNT_DATADIR": str(tmp_path / "faust"), "WORDCOUNT_INPUT": names["input"],
           "WORDCOUNT_OUTPUT": names["output"]}
    chooser = random.Random(16)
    first = [chooser.choice(VOCABULARY) for _ in range(300)]
    worker = Worker(env, tmp_path / "worker-1.log")
    try:
        worker.wait_ready()
        for start, end in ((0, 250), (250, 300)):  # the last 50 updates roll the head segment and stay in it
            if start:
                wait_past_segment_ms(bootstrap, changelog, start)
            faust_produce(bootstrap, names["input"], first[start:end])
            wait_for_counts(bootstrap, app, dict(collections.Counter(first[:end])), worker)
        wait_for_commits(bootstrap, app, names["input"], high_watermarks(bootstrap, names["input"]))
        assert worker.stop() == 0, worker.log_tail()
    finally:
        worker.kill()
    # the cleaner's pass runs beside the broker's other work: on a loaded machine it may still be under way
    stored = eventually(lambda: sum(len(read_partition(bootstrap, changelog, partition=partition))
                                    for partition in range(2)), lambda count: count <= 10 + 50 + 10, 30)
    assert stored <= 10 + 50 + 10, f"the changelog still holds {stored} of the 300 updates"
    second = [chooser.choice(VOCABULARY[:4]) for _ in range(50)]
    worker = Worker(env, tmp_path / "worker-2.log")
    try:
        worker.wait_ready()
        faust_produce(bootstrap, names["input"], second)
        table = wait_for_counts(bootstrap, app, dict(collections.Counter(first + second)), worker)
        assert worker.stop() == 0, worker.log_tail()
    finally:
        worker.kill()
    assert sum(table.values()) == 350


def test_max_compaction_lag_cleans_a_partition_below_its_dirty_ratio(clock_broker: BrokerProcess) -> None:
    bootstrap = clock_broker.bootstrap
    topic = create_compacted(bootstrap, {"max.compaction.lag.ms": "60000", "min.cleanable.dirty.ratio": "0.99"})
    now = advance_clock(bootstrap, 0)
    assert set(produce(bootstrap, topic, [(b"a", b"%d" % n) for n in range(10)], now)) == {None}
    close_head(bootstrap, topic, now + 1000)  # offset 10; the first pass (nothing clean yet) keeps a=9 and it
    assert produce(bootstrap, topic, [(b"a", b"10")], now + 2000) == [None]  # rolls: the head's segment closes
    assert produce(bootstrap, topic, [(b"z", b"z")], now + 3000) == [None]  # rolls: a=10 is in a closed segment
    advance_clock(bootstrap, 0)
    dirty = [(9, b"a", b"9"), (10, b"head", b"roll"), (11, b"a", b"10"), (12, b"z", b"z")]
    assert read_partition(bootstrap, topic) == dirty, "2 of 3 batches dirty is below 0.99"
    advance_clock(bootstrap, 1000 + 60_000)  # the first dirty batch (the head, at now + 1000) is 60,000 ms old
    assert read_partition(bootstrap, topic) == dirty
    advance_clock(bootstrap, 1)
    assert read_partition(bootstrap, topic) == dirty[1:]
    check_consistent(clock_broker)


def test_a_share_group_reads_a_compacted_topic_and_settles_its_gaps(clock_broker: BrokerProcess) -> None:
    """librdkafka's ShareConsumer acknowledges the offsets compaction left empty as GAP: once every record is
    accepted the group's start offset is the end of the log and nothing is redelivered after the lock."""
    bootstrap, group = clock_broker.bootstrap, "compacted-share"
    topic = create_compacted(bootstrap)
    set_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    now = advance_clock(bootstrap, 0)
    records = changelog(3, 20)
    assert set(produce(bootstrap, topic, records, now)) == {None}
    close_head(bootstrap, topic, now + 10_000)
    advance_clock(bootstrap, 0)
    share = share_consumer(bootstrap, group, topic)
    try:
        taken = take_all(share, 4)
        assert sorted((m.offset(), m.key(), m.value()) for m in taken) == expected_entries(records, len(records))
        assert describe_share_offsets(bootstrap, group) == {(topic, 0): (len(records) + 1, 0)}
        advance_clock(bootstrap, 60_000)
        assert poll_batch(share, 2.0) == []
    finally:
        share.close()
