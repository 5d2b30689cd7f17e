"""A worked example plugin: one of each kind of hook, each observable through the wire.

- ``first_come`` subscription mode: the consumer that joined first is active on every partition; when it
  leaves, the next one in join order takes over (the behaviour of Pulsar's older failover on a
  non-partitioned topic). It is registered through the same hook as the built-in modes.
- Redelivery backoff (a decision): records released or expired are redelivered after
  ``logwright.example.backoff.ms * 2 ** (count - 1)`` milliseconds, a group config this plugin adds; at
  the delivery limit it says nothing, so the built-in plugin archives them.
- A produce quota (a wrapper around admission): a topic whose ``logwright.example.max.records.per.request``
  is set refuses, with POLICY_VIOLATION, any partition of a produce request that carries more records.
- A heartbeat (a background task): every ``logwright.example.heartbeat.ms`` of broker time (a broker
  config, off by default) the broker's time is appended to the topic ``logwright-example-heartbeat``,
  if it exists. It waits on the broker clock, so ``serve --manual-clock`` drives it in tests.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from logwright.compat.broker import Broker
from logwright.compat.kafka.produce import produce_partition
from logwright.compat.wire.record_batch import build_batch
from logwright.compat.wire.records import Record
from logwright.core.config.configs import ConfigKey, long_at_least
from logwright.core.cursors.plugin_decisions import Admission, AppendRequest, Redeliver, ReleasedDelivery
from logwright.core.cursors.subscription_mode import DispatchView, Membership, ModeConsumer, first_offsets
from logwright.core.errors import PolicyViolation
from logwright.core.rangeset import RangeSet
from logwright.plugins.registrars import (
    BackgroundTask,
    BackgroundTaskRegister,
    ConfigKeyRegister,
    SubscriptionModeRegister,
)
from logwright.plugins.spec import hookimpl

BACKOFF_KEY = "logwright.example.backoff.ms"
MAX_RECORDS_KEY = "logwright.example.max.records.per.request"
HEARTBEAT_KEY = "logwright.example.heartbeat.ms"
HEARTBEAT_TOPIC = "logwright-example-heartbeat"
IDLE_CHECK_MS = 60_000
"""How often a switched-off heartbeat looks at its config again (broker time)."""


@dataclass(frozen=True, slots=True)
class FirstComeMode:
    name: str = "first_come"
    allows_cumulative_ack: bool = True
    uses_key_hashes: bool = False

    def join(self, membership: Membership, consumer: ModeConsumer) -> Membership:
        return membership.with_consumer(consumer)

    def leave(self, membership: Membership, consumer_id: str) -> Membership:
        return membership.without_consumer(consumer_id)

    def assigned_partitions(self, membership: Membership, consumer_id: str, partition_count: int) -> frozenset[int]:
        first = membership.consumers[0].consumer_id if membership.consumers else None
        return frozenset(range(partition_count)) if consumer_id == first else frozenset()

    def eligible(self, view: DispatchView, consumer_id: str, candidates: RangeSet, limit: int) -> RangeSet:
        if view.partition_index not in self.assigned_partitions(view.membership, consumer_id, view.partition_count):
            return RangeSet()
        return first_offsets(candidates, limit)


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(FirstComeMode())


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(BACKOFF_KEY, "group", "0", long_at_least(0),
                           "First redelivery delay of the example plugin's backoff; 0 turns it off.", "LONG"))
    register.add(ConfigKey(MAX_RECORDS_KEY, "topic", "0", long_at_least(0),
                           "Most records one produce request may append to one partition; 0: no limit.", "LONG"))
    register.add(ConfigKey(HEARTBEAT_KEY, "broker", "0", long_at_least(0),
                           f"Append the broker's time to {HEARTBEAT_TOPIC} this often (broker time); 0: off.", "LONG"))


@hookimpl
def logwright_decide_release(delivery: ReleasedDelivery) -> Redeliver | None:
    base = int(delivery.settings.get(BACKOFF_KEY, "0"))
    limit = int(delivery.settings.get("share.delivery.count.limit", "5"))
    if base == 0 or delivery.delivery_count >= limit:
        return None
    return Redeliver(base * 2 ** (delivery.delivery_count - 1))


@hookimpl(wrapper=True)
def logwright_admit_append(request: AppendRequest) -> Generator[None, Admission, Admission]:
    admission = yield
    for append in request.appends:
        limit = int(append.topic_configs.get(MAX_RECORDS_KEY, "0"))
        if limit and append.record_count > limit:
            admission = admission.refuse(append.partition_id, PolicyViolation(
                f"{append.topic}-{append.partition_index}: {append.record_count} records in one request, "
                f"over {MAX_RECORDS_KEY}={limit}"))
    return admission


async def heartbeat(broker: Broker) -> None:
    """Append the broker time to the heartbeat topic's partition 0 every interval of broker time."""
    while True:
        interval = int(broker.broker_config(HEARTBEAT_KEY))
        await broker.sleep(interval or IDLE_CHECK_MS)
        topic = broker.topic(HEARTBEAT_TOPIC)
        if not interval or topic is None:
            continue
        now = broker.clock.now_ms()
        produce_partition(broker, topic, 0, build_batch([Record(0, now, None, str(now).encode())]))


@hookimpl
def logwright_register_background_tasks(register: BackgroundTaskRegister) -> None:
    register.add(BackgroundTask("example-heartbeat", heartbeat,
                                f"appends the broker time to {HEARTBEAT_TOPIC} every {HEARTBEAT_KEY}"))
