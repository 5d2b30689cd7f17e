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

from logwright.plugins.api import (
    DEFAULT_DELIVERY_LIMIT,
    DELIVERY_LIMIT_KEY,
    Admission,
    AppendRequest,
    BackgroundTask,
    BackgroundTaskRegister,
    BrokerFacade,
    ConfigKey,
    ConfigKeyRegister,
    Membership,
    OutgoingRecord,
    PolicyViolation,
    Redeliver,
    ReleasedDelivery,
    SubscriptionModeBase,
    SubscriptionModeRegister,
    hookimpl,
    long_at_least,
)

BACKOFF_KEY = "logwright.example.backoff.ms"
MAX_RECORDS_KEY = "logwright.example.max.records.per.request"
HEARTBEAT_KEY = "logwright.example.heartbeat.ms"
HEARTBEAT_TOPIC = "logwright-example-heartbeat"
IDLE_CHECK_MS = 60_000
"""How often a switched-off heartbeat looks at its config again (broker time)."""


@dataclass(frozen=True, slots=True)
class FirstComeMode(SubscriptionModeBase):
    """Only what differs from the base: cumulative acks, and every partition to the first consumer."""

    name: str = "first_come"
    allows_cumulative_ack: bool = True

    def assigned_partitions(self, membership: Membership, consumer_id: str, partition_count: int) -> frozenset[int]:
        first = membership.consumers[0].consumer_id if membership.consumers else None
        return frozenset(range(partition_count)) if consumer_id == first else frozenset()


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
    limit = int(delivery.settings.get(DELIVERY_LIMIT_KEY, DEFAULT_DELIVERY_LIMIT))
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


async def heartbeat(broker: BrokerFacade) -> None:
    """Append the broker time to the heartbeat topic's partition 0 every interval of broker time."""
    while True:
        interval = int(broker.broker_config(HEARTBEAT_KEY))
        await broker.sleep(interval or IDLE_CHECK_MS)
        if not interval or broker.partition_count(HEARTBEAT_TOPIC) is None:
            continue
        now = broker.now_ms()
        await broker.append(HEARTBEAT_TOPIC, [OutgoingRecord(str(now).encode(), timestamp_ms=now)])


@hookimpl
def logwright_register_background_tasks(register: BackgroundTaskRegister) -> None:
    register.add(BackgroundTask("example-heartbeat", heartbeat,
                                f"appends the broker time to {HEARTBEAT_TOPIC} every {HEARTBEAT_KEY}"))
