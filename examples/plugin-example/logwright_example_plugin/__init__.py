"""A worked example plugin: a ``first_come`` subscription mode and exponential redelivery backoff.

- ``first_come``: the consumer that joined first is active on every partition; when it leaves, the
  next one in join order takes over (the behaviour of Pulsar's older failover on a non-partitioned
  topic). It is registered through the same hook as the built-in modes.
- Records released or expired are redelivered after ``logwright.example.backoff.ms * 2 ** (count - 1)``
  milliseconds, a group config this plugin adds; at the delivery limit it says nothing, so the built-in
  plugin archives them.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.core.configs import ConfigKey, long_at_least
from logwright.core.plugin_decisions import Redeliver, ReleasedDelivery
from logwright.core.rangeset import RangeSet
from logwright.core.subscription_mode import DispatchView, Membership, ModeConsumer, first_offsets
from logwright.plugins.registrars import ConfigKeyRegister, SubscriptionModeRegister
from logwright.plugins.spec import hookimpl

BACKOFF_KEY = "logwright.example.backoff.ms"


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


@hookimpl
def logwright_decide_release(delivery: ReleasedDelivery) -> Redeliver | None:
    base = int(delivery.settings.get(BACKOFF_KEY, "0"))
    limit = int(delivery.settings.get("share.delivery.count.limit", "5"))
    if base == 0 or delivery.delivery_count >= limit:
        return None
    return Redeliver(base * 2 ** (delivery.delivery_count - 1))
