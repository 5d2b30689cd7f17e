"""Pop consumption (RocketMQ 5's Pop) for logwright: the in-flight projection, the group configs, and the
``pop`` mode for share groups.

The pops themselves are the broker's (`logwright.compat.coordinators.pop_coordinator`, extension keys
32009-32014); this plugin registers what they need through the same hooks a third party uses: the in-flight
projection folded from the pop events, and the settings a group may change. Disabling the plugin
(``plugins.disabled=pop``) leaves the keys answering UNSUPPORTED_VERSION (35); events already logged stay readable.

For unmodified Kafka share consumers, ``logwright.subscription.mode=pop`` gives a share group pop semantics:
every member may acquire on every partition (no rebalance), the acquisition lock is the invisible time and
KIP-1222's RENEW changes it, and what the group archives goes to its pop dead-letter topic (``DLQ.<group>``)
with RocketMQ's properties, unless KIP-1191's ``errors.deadletterqueue.topic.name`` names another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from logwright.core.events import BacklogEvicted
from logwright.core.events.pop import POP_EVENT_TYPES
from logwright.core.pop import pop_commands
from logwright.core.pop.inflight import PROJECTION_NAME, table_in
from logwright.core.pop.inflight_fold import POP_INFLIGHT, POP_STATE_TYPES
from logwright.core.pop.pop_commands import (
    DEAD_LETTER_TOPIC_KEY,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_MAX_RECONSUME_TIMES,
    INIT_MODE_KEY,
    MAX_IN_FLIGHT_KEY,
    MAX_RECONSUME_REASON,
    MAX_RECONSUME_TIMES_KEY,
    default_dead_letter_topic,
    retry_delay_ms,
)

from .api import (
    SUBSCRIPTION_MODE_KEY,
    ArchivedRecords,
    ConfigKey,
    ConfigKeyRegister,
    DeadLetter,
    DispatchView,
    Event,
    ModeConsumer,
    ProjectionRegister,
    Redeliver,
    Reject,
    ReleasedDelivery,
    ReleaseDecision,
    StagedChange,
    SubscriptionModeBase,
    SubscriptionModeRegister,
    derives_from,
    hookimpl,
    in_flight_budget,
    long_at_least,
    long_between,
    one_of,
)

MODE = "pop"
KIP_1191_TOPIC_KEY = "errors.deadletterqueue.topic.name"
ROCKETMQ_PROPERTIES = (
    ("REAL_TOPIC", "{topic}"),
    ("RETRY_TOPIC", "%RETRY%{group}_{topic}"),
    ("ORIGIN_MESSAGE_ID", "{topic}-{partition}@{offset}"),
    ("RECONSUME_TIMES", "{delivery_count}"),
    ("logwright.pop.group", "{group}"),
)
"""RocketMQ's properties on a dead-letter copy, set only where the record does not carry them yet."""

_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def dead_letter_topic(value: str) -> str | None:
    """Empty (``DLQ.<group>``, RocketMQ's ``%DLQ%<group>`` in a legal name) or a legal, non-internal topic name."""
    if value == "":
        return None
    if value.startswith("__") or not _TOPIC_NAME.fullmatch(value) or value in (".", ".."):
        return (f"{DEAD_LETTER_TOPIC_KEY} must be a legal topic name (1-249 of a-z A-Z 0-9 . _ -, not starting "
                f"with '__'), got {value!r}")
    return None


@dataclass(frozen=True, slots=True)
class PopMode(SubscriptionModeBase):
    """Every member acquires on every partition, within its permits, as Shared does; what makes it pop is the
    release and dead-letter decisions below and the group's lock (the invisible time). ``decides_release``
    makes the share coordinator ask the release decision for every release of the group (not only with a
    backoff policy)."""

    name: str = MODE
    decides_release: bool = True

    def budget(self, view: DispatchView, consumer: ModeConsumer, limit: int) -> int:
        return in_flight_budget(view, consumer, limit)


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(PopMode())


@hookimpl
def logwright_decide_release(delivery: ReleasedDelivery) -> ReleaseDecision | None:
    """A pop-mode group's records that came back (RELEASE, lock expiry, a consumer gone): past
    ``logwright.pop.max.reconsume.times`` archived (and so dead-lettered), whatever ``share.delivery.count.limit``
    says; otherwise back after the delay the consumer asked for, else the next level of the group's backoff policy
    (RocketMQ's 1 s .. 2 h table when it has none)."""
    settings = delivery.settings
    if settings.get(SUBSCRIPTION_MODE_KEY) != MODE:
        return None
    limit = int(settings.get(MAX_RECONSUME_TIMES_KEY, DEFAULT_MAX_RECONSUME_TIMES))
    if delivery.delivery_count - 1 >= limit:
        return Reject(MAX_RECONSUME_REASON)
    if delivery.requested_delay_ms:
        return Redeliver(delivery.requested_delay_ms)
    return Redeliver(retry_delay_ms(settings, delivery.delivery_count))


@hookimpl
def logwright_decide_archive(archived: ArchivedRecords) -> DeadLetter | None:
    """A pop-mode share group's archived records, and a pop group's records past its max reconsume times (the
    pop coordinator asks with the mode set to ``pop``), go to its pop dead-letter topic (KIP-1191's topic, when
    set, is the ``dead_letter`` plugin's to answer)."""
    settings = archived.settings
    if settings.get(SUBSCRIPTION_MODE_KEY) != MODE or settings.get(KIP_1191_TOPIC_KEY):
        return None
    named = settings.get(DEAD_LETTER_TOPIC_KEY, "")
    return DeadLetter(named or default_dead_letter_topic(archived.subscription), copy_record=True,
                      headers_once=ROCKETMQ_PROPERTIES, auto_create=not named)


@hookimpl
@derives_from((BacklogEvicted,), batches=False)
def logwright_derive_events(staged: StagedChange) -> list[Event] | None:
    """A backlog eviction of a pop group (``consumer_backlog_eviction``: a `BacklogEvicted` of kind ``pop``) skips
    its records below the eviction's ``to_offset``: the entries in flight there are dropped and the pop position
    moves up to it if it was below (`pop_commands.evict`), staged with the eviction in one WriteBatch."""
    derived: list[Event] = []
    for event in staged.events:
        if type(event) is BacklogEvicted and event.kind == "pop":  # a pop group (`PopPositions`)
            table = table_in(staged.rows(PROJECTION_NAME), event.subscription, event.partition_id)
            if table is not None:
                derived.extend(pop_commands.evict(table, event.to_offset, staged.now_ms,
                                                  f"backlog eviction: {event.reason}"))
    return derived or None


@hookimpl
def logwright_register_projections(register: ProjectionRegister) -> None:
    register.add(POP_INFLIGHT, POP_EVENT_TYPES, POP_STATE_TYPES)


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(MAX_RECONSUME_TIMES_KEY, "group", str(DEFAULT_MAX_RECONSUME_TIMES), long_at_least(0),
                           "RocketMQ's maxReconsumeTimes for pop consumers: a record that failed (nack or invisible "
                           "time ran out) more often goes to the dead-letter topic instead of coming back.", "LONG"))
    register.add(ConfigKey(DEAD_LETTER_TOPIC_KEY, "group", "", dead_letter_topic,
                           "Where popped records past the max reconsume times are copied; empty: DLQ.<group> "
                           "(RocketMQ's %DLQ%<group>), created with one partition if auto.create.topics.enable."))
    register.add(ConfigKey(MAX_IN_FLIGHT_KEY, "group", str(DEFAULT_MAX_IN_FLIGHT), long_between(1, 1_000_000),
                           "Records of one partition a pop group may hold popped and unsettled (RocketMQ's "
                           "popCkOffsetMaxQueueSize); pops take no new records of a partition at the limit, "
                           "revived ones still come.", "INT"))
    register.add(ConfigKey(INIT_MODE_KEY, "group", "latest", one_of("latest", "earliest"),
                           "Where a group's first pop of a partition starts: the log end (RocketMQ's MAX) or the "
                           "log start (MIN)."))
