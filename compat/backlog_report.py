"""A partition's backlog quota state as InspectCursor shows it: the quota, every subscription's backlog, evictions.

Computed on demand from the broker's state (`logwright.core.backlog.tracker` over `BrokerBacklogReads`), so it
needs no plugin running and says the same as the admission check would: the stored batches' headers from the
slowest subscription's position are read once per question, which suits an inspection, not a hot path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from logwright.compat.broker import Broker
from logwright.compat.plugin_facade import stored_batches
from logwright.core.backlog.backlog import slowest
from logwright.core.backlog.batch_index import BatchExtent
from logwright.core.backlog.eviction_points import EVICTION_POINTS_NAME, EvictionPoints
from logwright.core.backlog.evictions import BACKLOG_EVICTIONS, EvictionTotals, evictions_key
from logwright.core.backlog.quota import TOPIC_KEYS
from logwright.core.backlog.tracker import BacklogTracker
from logwright.core.log.catalog import TopicState


class BrokerBacklogReads:
    """`BacklogReads` over the broker itself (compat code may read it directly; plugins get a facade)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def now_ms(self) -> int:
        return self._broker.clock.now_ms()

    def broker_config(self, name: str) -> str:
        try:
            return self._broker.broker_config(name)
        except KeyError:  # the backlog_quota plugin is disabled: its broker defaults are not registered
            return "producer_request_hold" if name.endswith("policy") else "-1"

    def topic_names(self) -> tuple[str, ...]:
        return tuple(topic.name for topic in self._broker.topics())

    def topic_configs(self, topic: str) -> Mapping[str, str]:
        state = self._broker.topic(topic)
        return {key: value for key in TOPIC_KEYS if state is not None and (value := state.config(key)) is not None}

    def partition_ids(self, topic: str) -> tuple[int, ...] | None:
        state = self._broker.topic(topic)
        return tuple(state.partition_ids) if state is not None else None

    def log_range(self, partition_id: int) -> tuple[int, int]:
        state = self._broker.partition(partition_id)
        return state.log_start_offset, state.next_offset

    def entities(self, projection: str) -> Mapping[str, Any]:
        return self._broker.store.entities(projection)

    def batch_extents(self, partition_id: int, from_offset: int) -> Iterable[BatchExtent]:
        for batch in stored_batches(self._broker, partition_id, from_offset):
            yield BatchExtent(batch.base_offset, batch.record_count, batch.byte_size, batch.max_timestamp)


def _evicted(broker: Broker, subscription: str, partition_id: int) -> dict[str, Any] | None:
    try:
        totals = broker.store.state(BACKLOG_EVICTIONS.name, evictions_key(subscription, partition_id))
    except KeyError:  # the projection is registered by the backlog_quota plugin
        return None
    if not isinstance(totals, EvictionTotals):
        return None
    points = broker.store.entities(EVICTION_POINTS_NAME).get(subscription) if totals.kind == "group" else None
    return {"evictions": totals.evictions, "records": totals.records, "bytes": totals.bytes,
            "last_from_offset": totals.last_from_offset, "last_to_offset": totals.last_to_offset,
            "last_reason": totals.last_reason,
            "commits_raised_to": points.point(partition_id) if isinstance(points, EvictionPoints) else None}


def _unlimited(broker: Broker, tracker: BacklogTracker, topic: TopicState, partition_index: int,
               partition_id: int) -> list[dict[str, Any]]:
    log_start, log_end = broker.partition(partition_id).log_start_offset, broker.high_watermark(partition_id)
    listed: list[dict[str, Any]] = []
    for position in tracker.positions(topic.name, partition_index, partition_id):
        start = max(position.first_unsettled, log_start)
        records = max(0, log_end - start - len(position.settled.within(start, log_end - 1))) if start < log_end else 0
        listed.append({"subscription": position.subscription, "kind": position.kind, "records": records,
                       "bytes": None, "age_ms": None, "over": None,
                       "evicted": _evicted(broker, position.subscription, partition_id)})
    return listed


def report_tracker(broker: Broker) -> BacklogTracker:
    """A tracker for the reports of one question: it locates the subscriptions once per topic, so share it between
    the partitions asked about (a tracker per partition went over every subscription's state for each one)."""
    return BacklogTracker(BrokerBacklogReads(broker))


def backlog_report(broker: Broker, topic: TopicState, partition_index: int, partition_id: int,
                   tracker: BacklogTracker | None = None) -> dict[str, Any]:
    """``{quota: {bytes, records, age_ms, policy}, subscriptions: [{subscription, kind, records, bytes, age_ms,
    over, evicted}], slowest}`` for one partition; ``over`` names the limit a subscription is past (else null).

    Without a limit on the topic only records are counted (``bytes`` and ``age_ms`` null): bytes would mean
    reading every batch header of an unbounded backlog. ``tracker``: a `report_tracker` shared by the
    partitions of one question."""
    tracker = tracker or report_tracker(broker)
    quota = tracker.quota(topic.name)
    report = {"bytes": quota.bytes, "records": quota.records, "age_ms": quota.age_ms, "policy": quota.policy}
    if not quota.limited:
        return {"quota": report, "subscriptions": _unlimited(broker, tracker, topic, partition_index, partition_id),
                "slowest": None}
    now = broker.clock.now_ms()
    backlogs = tracker.backlogs(topic.name, partition_index, partition_id)
    worst = slowest(backlogs)
    return {
        "quota": report,
        "subscriptions": [{"subscription": position.subscription, "kind": position.kind, "records": backlog.records,
                           "bytes": backlog.bytes, "age_ms": backlog.age_ms(now),
                           "over": quota.exceeded_by(backlog, now) if quota.limited else None,
                           "evicted": _evicted(broker, position.subscription, partition_id)}
                          for position, backlog in backlogs],
        "slowest": worst[0].subscription if worst is not None else None,
    }
