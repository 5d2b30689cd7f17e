"""A small third-party plugin that imports logwright only through `logwright.plugins.api`.

- ``newest`` subscription mode: the consumer that joined last takes every partition (only
  `assigned_partitions` differs from `SubscriptionModeBase`).
- A read-only switch (an admission wrapper): a topic with ``logwright.audit.read.only=true`` refuses
  appends with POLICY_VIOLATION.
- An audit tick (a background task): every ``logwright.audit.tick.ms`` of broker time (a broker config,
  off by default) it appends ``tick <time>`` to the topic ``audit-ticks``, if it exists, through the facade.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from logwright.plugins.api import (
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
    SubscriptionModeBase,
    SubscriptionModeRegister,
    boolean,
    hookimpl,
    long_at_least,
)

READ_ONLY_KEY = "logwright.audit.read.only"
TICK_KEY = "logwright.audit.tick.ms"
TICK_TOPIC = "audit-ticks"
IDLE_CHECK_MS = 60_000


@dataclass(frozen=True, slots=True)
class NewestMode(SubscriptionModeBase):
    name: str = "newest"

    def assigned_partitions(self, membership: Membership, consumer_id: str, partition_count: int) -> frozenset[int]:
        newest = membership.consumers[-1].consumer_id if membership.consumers else None
        return frozenset(range(partition_count)) if consumer_id == newest else frozenset()


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(NewestMode())


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(READ_ONLY_KEY, "topic", "false", boolean, "Refuse every append to the topic.", "BOOLEAN"))
    register.add(ConfigKey(TICK_KEY, "broker", "0", long_at_least(0),
                           f"Append a tick to {TICK_TOPIC} this often (broker time); 0: off.", "LONG"))


@hookimpl(wrapper=True)
def logwright_admit_append(request: AppendRequest) -> Generator[None, Admission, Admission]:
    admission = yield
    for append in request.appends:
        if append.topic_configs.get(READ_ONLY_KEY) == "true":
            admission = admission.refuse(append.partition_id, PolicyViolation(f"{append.topic} is read-only"))
    return admission


async def tick(broker: BrokerFacade) -> None:
    while True:
        interval = int(broker.broker_config(TICK_KEY))
        await broker.sleep(interval or IDLE_CHECK_MS)
        if interval and broker.partition_count(TICK_TOPIC) is not None:
            await broker.append(TICK_TOPIC, [OutgoingRecord(f"tick {broker.now_ms()}".encode())])


@hookimpl
def logwright_register_background_tasks(register: BackgroundTaskRegister) -> None:
    register.add(BackgroundTask("audit-tick", tick, f"appends a tick to {TICK_TOPIC} every {TICK_KEY}"))
