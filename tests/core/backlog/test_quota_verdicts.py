"""Quota verdicts at admission and exact evictions, through the tracker over an in-memory view of a broker."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest
from logwright.core.backlog import positions
from logwright.core.backlog import tracker as tracker_module
from logwright.core.backlog.backlog import Position
from logwright.core.backlog.batch_index import BatchExtent
from logwright.core.backlog.eviction import EVICTION_CONSUMER
from logwright.core.backlog.quota import Quota, limit_value, policy_value, quota_of
from logwright.core.backlog.tracker import Admit, BacklogTracker, Hold, Refuse
from logwright.core.cursors.cursor import CURSORS
from logwright.core.events import (
    BacklogEvicted,
    ConfigChanged,
    Event,
    GroupDeleted,
    OffsetCommitted,
    RecordsAcked,
    RecordsAppended,
    SubscriptionCreated,
)
from logwright.core.events.compaction import PartitionCompacted
from logwright.core.groups.group_offsets import GROUP_OFFSETS
from logwright.core.projection import fold

PARTITION = 3


class Broker:
    """The reads the tracker makes, over folded events: one topic ``t`` with one partition (id 3)."""

    def __init__(self, configs: Mapping[str, str], broker: Mapping[str, str] | None = None) -> None:
        self.configs = dict(configs)
        self.broker = dict(broker or {})
        self.events: list[Event] = []
        self.batches: list[BatchExtent] = []
        self.now = 1000

    def now_ms(self) -> int:
        return self.now

    def broker_config(self, name: str) -> str:
        return self.broker.get(name, "producer_request_hold" if name.endswith("policy") else "-1")

    def topic_names(self) -> tuple[str, ...]:
        return ("t",)

    def topic_configs(self, topic: str) -> Mapping[str, str]:
        return self.configs

    def partition_ids(self, topic: str) -> tuple[int, ...] | None:
        return (PARTITION,)

    def log_range(self, partition_id: int) -> tuple[int, int]:
        return 0, self.batches[-1].end_offset if self.batches else 0

    def entities(self, projection: str) -> Mapping[str, Any]:
        folding = {"cursors": CURSORS, GROUP_OFFSETS.name: GROUP_OFFSETS}[projection]  # KeyError: as if disabled
        return fold(folding, self.events)

    def batch_extents(self, partition_id: int, from_offset: int) -> Iterable[BatchExtent]:
        return [batch for batch in self.batches if batch.end_offset > from_offset]

    def append(self, tracker: BacklogTracker, records: int, size: int) -> None:
        base = self.log_range(PARTITION)[1]
        self.batches.append(BatchExtent(base, records, size, self.now))
        tracker.on_commit([RecordsAppended(PARTITION, base, records, size, self.now)])

    def commit(self, tracker: BacklogTracker, *events: Event) -> None:
        self.events.extend(events)
        tracker.on_commit(events)


def setup(policy: str, **limits: str) -> tuple[Broker, BacklogTracker]:
    configs = {f"logwright.backlog.quota.{name.replace('_', '.')}": value for name, value in limits.items()}
    broker = Broker({**configs, "logwright.backlog.quota.policy": policy})
    tracker = BacklogTracker(broker)
    broker.commit(tracker, OffsetCommitted("slow", "t", 0, 0), SubscriptionCreated("fast", PARTITION, "t", 0))
    return broker, tracker


def test_configs_validate_and_fall_back_to_the_broker_default() -> None:
    assert limit_value("-1") is None and limit_value("10") is None
    assert limit_value("0") is not None and limit_value("ten") is not None
    assert policy_value("consumer_backlog_eviction") is None and policy_value("drop") is not None
    defaults = {"logwright.backlog.quota.default.bytes": "500", "logwright.backlog.quota.default.policy":
                "producer_exception"}
    quota = quota_of({"logwright.backlog.quota.records": "9"}, lambda name: defaults.get(name, "-1"))
    assert quota == Quota(bytes=500, records=9, policy="producer_exception")
    topic_first = quota_of({"logwright.backlog.quota.bytes": "700"}, lambda name: defaults.get(name, "-1"))
    assert topic_first.bytes == 700, "a topic's own limit wins over the broker default (F13)"
    assert not quota_of({}, lambda name: "-1").limited


def test_no_quota_admits_whatever_the_backlog() -> None:
    broker, tracker = setup("producer_exception")
    for _ in range(50):
        broker.append(tracker, 10, 1000)
    assert tracker.admit("t", 0, PARTITION, 10, 1000) == Admit()


def test_the_request_that_would_cross_the_quota_is_held_at_once_and_admitted_after_the_ack() -> None:
    broker, tracker = setup("producer_request_hold", bytes="1000")
    for _ in range(9):
        broker.append(tracker, 1, 100)
    assert tracker.admit("t", 0, PARTITION, 1, 100) == Admit(), "exactly at the quota is within it"
    broker.append(tracker, 1, 100)
    verdict = tracker.admit("t", 0, PARTITION, 1, 1)
    assert isinstance(verdict, Hold)
    assert "logwright.backlog.quota.bytes=1000" in verdict.message and "consumer group 'slow'" in verdict.message
    broker.commit(tracker, OffsetCommitted("slow", "t", 0, 5), RecordsAcked("fast", PARTITION, "c", ((0, 9),)))
    assert tracker.admit("t", 0, PARTITION, 1, 100) == Admit()


def test_requests_of_one_turn_count_together_before_their_commit() -> None:
    broker, tracker = setup("producer_exception", records="10")
    assert tracker.admit("t", 0, PARTITION, 6, 60) == Admit()
    verdict = tracker.admit("t", 0, PARTITION, 6, 60)
    assert isinstance(verdict, Refuse)
    assert "logwright.backlog.quota.records=10" in verdict.message and "policy producer_exception" in verdict.message


def test_eviction_leaves_ninety_percent_with_the_append_and_explains_each_move() -> None:
    broker, tracker = setup("consumer_backlog_eviction", bytes="1000")
    broker.commit(tracker, RecordsAcked("fast", PARTITION, "c", ((0, 7),)))
    for _ in range(10):
        broker.append(tracker, 1, 100)
    verdict = tracker.admit("t", 0, PARTITION, 1, 100)
    assert isinstance(verdict, Admit)
    moved = {type(event).__name__: event for event in verdict.events}
    assert moved["OffsetCommitted"] == OffsetCommitted("slow", "t", 0, 2, commit_time_ms=1000)
    assert moved["BacklogEvicted"] == BacklogEvicted("slow", "group", "t", PARTITION, 0, 2, 2, 200,
                                                     "backlog quota logwright.backlog.quota.bytes=1000 exceeded; "
                                                     "evicted to 90%")
    assert len(verdict.events) == 2, "'fast' holds 200 bytes: it is not over the quota and does not move"


def test_every_subscription_over_the_quota_moves_to_ninety_percent_in_the_same_append() -> None:
    """The seeds' F18 moves the slowest cursor first, then looks again; here each subscription over the quota is
    evicted on its own, by one append, each with its own `BacklogEvicted`: a group's committed offset, a cursor's
    acknowledged range."""
    broker, tracker = setup("consumer_backlog_eviction", bytes="1000")
    for _ in range(10):
        broker.append(tracker, 1, 100)
    verdict = tracker.admit("t", 0, PARTITION, 1, 100)
    assert isinstance(verdict, Admit)
    evicted = {event.subscription: event for event in verdict.events if isinstance(event, BacklogEvicted)}
    assert sorted(evicted) == ["fast", "slow"]
    assert {(event.to_offset, event.records, event.bytes) for event in evicted.values()} == {(2, 2, 200)}
    assert OffsetCommitted("slow", "t", 0, 2, commit_time_ms=1000) in verdict.events
    assert RecordsAcked("fast", PARTITION, EVICTION_CONSUMER, ((0, 1),), True) in verdict.events
    assert len(verdict.events) == 4


def test_eviction_of_a_cursor_acknowledges_the_skipped_range() -> None:
    broker, tracker = setup("consumer_backlog_eviction", records="10")
    broker.commit(tracker, OffsetCommitted("slow", "t", 0, 30))
    for _ in range(20):
        broker.append(tracker, 1, 10)
    verdict = tracker.admit("t", 0, PARTITION, 2, 20)
    assert isinstance(verdict, Admit)
    acked, evicted = verdict.events
    assert acked == RecordsAcked("fast", PARTITION, EVICTION_CONSUMER, ((0, 12),), True)
    assert isinstance(evicted, BacklogEvicted) and (evicted.records, evicted.to_offset) == (13, 13)


def test_age_eviction_is_due_when_the_oldest_record_passes_the_limit() -> None:
    broker, tracker = setup("consumer_backlog_eviction", age_ms="10000")
    broker.commit(tracker, OffsetCommitted("slow", "t", 0, 100))
    broker.now = 0
    broker.append(tracker, 1, 10)
    broker.now = 8000
    broker.append(tracker, 1, 10)
    assert tracker.admit("t", 0, PARTITION, 1, 1) == Admit()
    assert tracker.next_age_deadline() == 10001
    broker.now = 10001
    acked, evicted = tracker.age_evictions()
    assert acked == RecordsAcked("fast", PARTITION, EVICTION_CONSUMER, ((0, 0),), True)
    assert isinstance(evicted, BacklogEvicted) and "age.ms=10000" in evicted.reason
    broker.commit(tracker, acked)
    assert tracker.next_age_deadline() == 18001


def test_subscriptions_started_after_the_first_check_are_learnt_from_commits() -> None:
    broker, tracker = setup("producer_exception", records="5")
    for _ in range(5):
        broker.append(tracker, 1, 10)
    broker.commit(tracker, OffsetCommitted("slow", "t", 0, 5), RecordsAcked("fast", PARTITION, "c", ((0, 4),)))
    assert tracker.admit("t", 0, PARTITION, 1, 10) == Admit()
    broker.commit(tracker, OffsetCommitted("late", "t", 0, 1), SubscriptionCreated("new", PARTITION, "t", 2))
    verdict = tracker.admit("t", 0, PARTITION, 2, 20)
    assert isinstance(verdict, Refuse) and "consumer group 'late'" in verdict.message
    broker.commit(tracker, OffsetCommitted("late", "t", 0, 5))
    assert tracker.admit("t", 0, PARTITION, 2, 20) == Admit(), "'new' holds 3 records: 5 with these two"
    verdict = tracker.admit("t", 0, PARTITION, 1, 10)
    assert isinstance(verdict, Refuse) and "subscription 'new'" in verdict.message, "6 with the two pending"


def test_a_config_change_is_seen_at_the_next_append() -> None:
    broker, tracker = setup("producer_exception")
    for _ in range(5):
        broker.append(tracker, 1, 100)
    assert tracker.admit("t", 0, PARTITION, 1, 100) == Admit()
    broker.configs["logwright.backlog.quota.records"] = "3"
    broker.commit(tracker, ConfigChanged("topic", "t", (("logwright.backlog.quota.records", "3"),)))
    assert isinstance(tracker.admit("t", 0, PARTITION, 1, 100), Refuse)


def test_compaction_has_the_index_read_again_from_the_rewritten_batches() -> None:
    broker, tracker = setup("producer_exception", bytes="1000")
    for _ in range(9):
        broker.append(tracker, 1, 100)
    assert isinstance(tracker.admit("t", 0, PARTITION, 1, 200), Refuse), "900 + 200 bytes"
    broker.batches = [BatchExtent(batch.base_offset, 1, 40, batch.max_timestamp) for batch in broker.batches]
    broker.commit(tracker, PartitionCompacted(PARTITION, 0, 9, 0, 0, 540))
    assert tracker.admit("t", 0, PARTITION, 1, 200) == Admit(), "360 + 200 bytes once compacted"


class Unmovable:
    """A kind of subscription no eviction moves, standing at offset 0 of the partition."""

    projection = "unmovable"

    def locate(self, states: Mapping[str, Any], topic: str,
               partition_ids: Sequence[int]) -> Iterable[tuple[int, str]]:
        return ((partition_id, "stuck") for partition_id in partition_ids)

    def read(self, key: str, state: Any, topic: str, partition_index: int, partition_id: int,
             states: Mapping[str, Any] = positions.NO_STATES) -> Position | None:
        return Position("stuck", "unmovable", partition_id, 0)

    def started_by(self, event: Event) -> tuple[str, int | str, str] | None:
        return None


def test_the_age_deadline_is_the_earliest_one_an_eviction_can_act_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(positions, "POSITION_SOURCES", [*positions.POSITION_SOURCES, Unmovable()])
    monkeypatch.setattr(tracker_module, "POSITION_SOURCES", positions.POSITION_SOURCES)
    broker, tracker = setup("consumer_backlog_eviction", age_ms="10000")
    broker.commit(tracker, OffsetCommitted("slow", "t", 0, 1), RecordsAcked("fast", PARTITION, "c", ((0, 0),), True))
    broker.now = 0
    broker.append(tracker, 1, 10)
    broker.now = 8000
    broker.append(tracker, 1, 10)
    assert tracker.next_age_deadline() == 18001, "not the unmovable subscription's 10001, due with nothing to do"


class CountingBroker(Broker):
    def __init__(self, configs: Mapping[str, str]) -> None:
        super().__init__(configs)
        self.lookups = 0

    def partition_ids(self, topic: str) -> tuple[int, ...] | None:
        self.lookups += 1
        return super().partition_ids(topic)


def test_a_group_that_starts_after_the_scan_counts_and_a_commit_looks_its_topic_up_once() -> None:
    """A commit of many offsets on one topic resolves the topic's partition ids once (5,000 lookups took 20 ms of
    an OffsetCommit's commit); before any partition was scanned it resolves none."""
    broker = CountingBroker({"logwright.backlog.quota.records": "10", "logwright.backlog.quota.policy":
                             "producer_exception"})
    tracker = BacklogTracker(broker)
    broker.commit(tracker, OffsetCommitted("early", "t", 0, 0))
    assert broker.lookups == 0, "nothing scanned yet: the scan will find the group"
    broker.append(tracker, 5, 50)
    assert tracker.admit("t", 0, PARTITION, 5, 50) == Admit(), "early's backlog of 5 plus 5 is the quota"
    broker.commit(tracker, OffsetCommitted("early", "t", 0, 5))
    assert tracker.admit("t", 0, PARTITION, 10, 100) == Admit()
    broker.lookups = 0
    broker.commit(tracker, *(OffsetCommitted(f"late-{n}", "t", 0, 0) for n in range(50)))
    assert broker.lookups == 1
    verdict = tracker.admit("t", 0, PARTITION, 6, 60)
    assert isinstance(verdict, Refuse), "the groups that started after the scan hold the 5 records too"
    assert "late-" in verdict.message


def test_only_a_change_on_an_age_evicting_topic_wakes_the_age_timer() -> None:
    """Every group, share or pop event woke the timer, which then read every partition of every age-evicting topic:
    11-67 ms a commit at 2,000-5,000 partitions, for an unrelated one-partition OffsetCommit too."""
    broker, tracker = setup("consumer_backlog_eviction", age_ms="10000")
    assert not tracker.on_commit([OffsetCommitted("other", "elsewhere", 0, 5)])
    assert not tracker.on_commit([RecordsAcked("fast", PARTITION + 1, "c", ((0, 0),))])
    assert tracker.on_commit([OffsetCommitted("slow", "t", 0, 1)])
    assert tracker.on_commit([RecordsAcked("fast", PARTITION, "c", ((0, 0),))])
    assert tracker.on_commit([GroupDeleted("slow")]), "no partition named: it may move one"
    quiet, quiet_tracker = setup("producer_request_hold", records="10")
    assert not quiet_tracker.on_commit([OffsetCommitted("slow", "t", 0, 1)]), "no topic evicts by age"
