"""Backlog quotas (Pulsar's ``backlogQuota``, seed 001), exact and checked at admission.

Topic configs ``logwright.backlog.quota.bytes``, ``.records``, ``.age.ms`` (-1: no limit) and ``.policy``
(``producer_request_hold``, the default; ``producer_exception``; ``consumer_backlog_eviction``), each falling
back to the broker's ``logwright.backlog.quota.default.*``. The backlog of a topic's partition is its slowest
subscription's (`logwright.core.backlog`): exact records and stored bytes between the position and the log
end, less what was settled individually, and the age of the oldest unsettled record.

Every append is checked in ``logwright_admit_append`` against the backlog it would leave: *hold* answers
`AppendHeld` (the produce request waits and is asked again after each commit, `compat.kafka.produce_hold`),
*exception* refuses with POLICY_VIOLATION naming the quota and the subscription, *eviction* stages the
moves and `BacklogEvicted` events with the append; ``logwright_derive_events`` raises an evicted group's member
commits below the eviction point to it (`logwright.core.backlog.eviction_points`). Age limits with eviction
are kept by the background task, which sleeps until the next record goes over its limit on the broker clock
and is woken by commits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator, Iterable, Mapping
from typing import Any

from logwright.core.backlog.batch_index import BatchExtent
from logwright.core.backlog.eviction_points import (
    COMMIT_TYPES,
    EVICTION_POINTS,
    EVICTION_POINTS_STATE_TAGS,
    GroupView,
    adjust_commits,
)
from logwright.core.backlog.evictions import BACKLOG_EVICTIONS, EVICTION_STATE_TAGS
from logwright.core.backlog.quota import (
    AGE_KEY,
    BYTES_KEY,
    HOLD,
    POLICY_KEY,
    RECORDS_KEY,
    TOPIC_KEYS,
    broker_default_key,
    limit_value,
    policy_value,
    quota_of,
)
from logwright.core.backlog.tracker import Admit, BacklogTracker, Hold, Refuse
from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState
from logwright.core.groups.groups import GroupState
from logwright.core.log.catalog import TopicState, topic_key
from logwright.core.log.partition_log import PartitionState, partition_key

from .api import (
    Admission,
    AppendHeld,
    AppendRequest,
    BackgroundTask,
    BackgroundTaskRegister,
    BrokerFacade,
    ConfigKey,
    ConfigKeyRegister,
    DomainError,
    Event,
    PolicyViolation,
    ProjectionRegister,
    StagedChange,
    acts_on_topics,
    derives_from,
    hookimpl,
)

_DOCS = {
    BYTES_KEY: ("Largest backlog, in stored bytes, of the topic's slowest subscription on a partition; -1: none.",
                "LONG"),
    RECORDS_KEY: ("Most unsettled records the topic's slowest subscription may have on a partition; -1: none.",
                  "LONG"),
    AGE_KEY: ("Oldest an unsettled record may be (by its batch's newest timestamp), in ms; -1: none.", "LONG"),
    POLICY_KEY: ("What happens past a backlog quota: producer_request_hold (hold the produce request until the "
                 "backlog drains or it times out), producer_exception (refuse it), consumer_backlog_eviction "
                 "(skip the slowest subscriptions' oldest records down to 90% of the quota).", "STRING"),
}


class FacadeReads:
    """`BacklogReads` over a plugin's `BrokerFacade`."""

    def __init__(self, facade: BrokerFacade) -> None:
        self._facade = facade

    def now_ms(self) -> int:
        return self._facade.now_ms()

    def broker_config(self, name: str) -> str:
        return self._facade.broker_config(name)

    def _topic(self, topic: str) -> TopicState | None:
        state = self._facade.entities("catalog").get(topic_key(topic))
        return state if isinstance(state, TopicState) else None

    def topic_names(self) -> tuple[str, ...]:
        return tuple(state.name for state in self._facade.entities("catalog").values()
                     if isinstance(state, TopicState))

    def topic_configs(self, topic: str) -> Mapping[str, str]:
        state = self._topic(topic)
        return {key: value for key in TOPIC_KEYS
                if state is not None and (value := state.config(key)) is not None}

    def partition_ids(self, topic: str) -> tuple[int, ...] | None:
        state = self._topic(topic)
        return tuple(state.partition_ids) if state is not None else None

    def log_range(self, partition_id: int) -> tuple[int, int]:
        state = self._facade.entities("partitions").get(partition_key(partition_id))
        return (state.log_start_offset, state.next_offset) if isinstance(state, PartitionState) else (0, 0)

    def entities(self, projection: str) -> Mapping[str, Any]:
        return self._facade.entities(projection)

    def batch_extents(self, partition_id: int, from_offset: int) -> Iterable[BatchExtent]:
        for batch in self._facade.stored_batches(partition_id, from_offset):
            yield BatchExtent(batch.base_offset, batch.record_count, batch.byte_size, batch.max_timestamp)


class BacklogQuotaPlugin:
    """One broker's backlog quotas: the host registers one per broker (`plugin_for_host`), so two brokers in one
    process keep apart; the tracker exists while the broker's background task runs."""

    def __init__(self) -> None:
        self.tracker: BacklogTracker | None = None
        self._facade: BrokerFacade | None = None

    @hookimpl
    def logwright_register_config_keys(self, register: ConfigKeyRegister) -> None:
        for key in TOPIC_KEYS:
            doc, value_type = _DOCS[key]
            validate = policy_value if key == POLICY_KEY else limit_value
            register.add(ConfigKey(key, "topic", None, validate,
                                   doc + f" Unset: the broker's {broker_default_key(key)}.", value_type))
            register.add(ConfigKey(broker_default_key(key), "broker", HOLD if key == POLICY_KEY else "-1", validate,
                                   f"The default of topic config {key}. " + doc, value_type))

    @hookimpl
    def logwright_register_projections(self, register: ProjectionRegister) -> None:
        register.add(BACKLOG_EVICTIONS, (), EVICTION_STATE_TAGS)
        register.add(EVICTION_POINTS, (), EVICTION_POINTS_STATE_TAGS)

    @hookimpl
    @derives_from(COMMIT_TYPES, batches=False, while_rows=EVICTION_POINTS.name)
    def logwright_derive_events(self, staged: StagedChange) -> list[Event] | None:
        """Keep an evicted group's member commits at its eviction point (`core.backlog.eviction_points`); never asked
        while no group has one (``while_rows``)."""
        points = staged.rows(EVICTION_POINTS.name)
        if not points or COMMIT_TYPES.isdisjoint(map(type, staged.events)):
            return None
        return adjust_commits(staged.events, GroupView(points, _partition_id_in(staged), _has_members_in(staged)))

    @hookimpl
    def logwright_register_background_tasks(self, register: BackgroundTaskRegister) -> None:
        register.add(BackgroundTask("backlog_quota", self.run, "Follows the backlog of topics with a quota and "
                                    "evicts records past an age limit on the broker clock."))

    @hookimpl(wrapper=True)
    @acts_on_topics(lambda topic_configs, broker_config: quota_of(topic_configs, broker_config).limited)
    def logwright_admit_append(self, request: AppendRequest) -> Generator[None, Admission, Admission]:
        admission = yield
        tracker, facade = self.tracker, self._facade
        if tracker is None or facade is None:
            return admission
        refusals: list[tuple[int, DomainError]] = []  # given at once: one admission a refusal was quadratic
        for append in request.appends:
            if admission.error_for(append.partition_id) is not None:
                continue
            verdict = tracker.admit(append.topic, append.partition_index, append.partition_id, append.record_count,
                                    append.byte_size, append.topic_configs)
            if isinstance(verdict, Admit):
                if verdict.events:
                    facade.stage(verdict.events)
            elif isinstance(verdict, Hold):
                refusals.append((append.partition_id, AppendHeld(verdict.message)))
            elif isinstance(verdict, Refuse):
                refusals.append((append.partition_id, PolicyViolation(verdict.message)))
        return admission.refusing(refusals)

    async def run(self, facade: BrokerFacade) -> None:
        """Follow commits, and evict records past an age limit when the earliest one comes due: one deadline on
        the broker clock (`BrokerFacade.deadline_timer`), asked again after each commit that may move it."""
        backlog = BacklogTracker(FacadeReads(facade))
        stuck = False
        """Due, yet nothing could move: wait for the next commit rather than look again and again."""

        def next_deadline() -> int | None:
            return None if stuck else backlog.next_age_deadline()

        def tick() -> None:
            nonlocal stuck
            evictions = backlog.age_evictions()
            if evictions:
                facade.stage(evictions)
            stuck = not evictions

        timer = facade.deadline_timer("backlog_quota", next_deadline, tick)

        def on_commit(events: Any) -> None:
            nonlocal stuck
            if backlog.on_commit(events):
                stuck = False
                timer.wake()

        facade.add_commit_listener(on_commit)
        self.tracker, self._facade = backlog, facade
        try:
            await asyncio.get_running_loop().create_future()  # the timer works until the broker ends the task
        finally:
            timer.close()
            self.tracker = self._facade = None


def _partition_id_in(staged: StagedChange) -> Callable[[str, int], int | None]:
    catalog = staged.rows("catalog")

    def partition_id(topic: str, partition_index: int) -> int | None:
        state = catalog.get(topic_key(topic))
        if not isinstance(state, TopicState) or not 0 <= partition_index < len(state.partition_ids):
            return None
        return int(state.partition_ids[partition_index])
    return partition_id


def _has_members_in(staged: StagedChange) -> Callable[[str], bool]:
    classic, consumer = staged.rows("groups"), staged.rows("consumer_groups")

    def has_members(group: str) -> bool:
        return any(isinstance(state, GroupState | ConsumerGroupState) and bool(state.members)
                   for state in (classic.get(group), consumer.get(group)))
    return has_members


def plugin_for_host() -> BacklogQuotaPlugin:
    """What the plugin host registers for this built-in: a fresh object per broker."""
    return BacklogQuotaPlugin()
