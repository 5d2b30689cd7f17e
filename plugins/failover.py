"""Failover: one active consumer per partition, the others stand by (Pulsar F24).

Consumers are sorted by priority (0 is the highest) then by name (then id, so equal names still sort
the same way every time); only the highest-priority level is eligible, and partition ``i`` goes to
``eligible[i % len(eligible)]``. A non-partitioned topic is partition 0, so it goes to the first in
that order (Pulsar's newer brokers use a hash ring of names there; a fixed order is easier to predict
and survives restarts through the membership the caller records). When a consumer leaves, the order
is recomputed over those that remain; the caller releases the leaver's unacknowledged records, so the
new active consumer receives everything from mark-delete + 1 and no acknowledgement is lost.

A new active consumer starts on a partition only once no other consumer holds records there: when a
higher-priority consumer joins while the previous active one still works, it waits for those acks (or
their lock expiry) instead of Pulsar's rewind, so the switch-over neither duplicates nor reorders.

Switch delay (Pulsar's ``activeConsumerFailoverDelayTimeMillis``, default 1 s): after a membership change
that gives a partition a different active consumer, nobody acquires on it for
``logwright.failover.switch.delay.ms`` of broker time, counted from the first change (changes within the
delay neither extend nor shorten it); then whoever is active then starts from the first unsettled
record. A consumer that reconnects within the delay is active again when it ends and the standby never
received anything in between, so a quick reconnect does not flap. A partition that had no active
consumer (the first join) starts at once. A running delay is an event (`SwitchDelayStarted`), so a
restarted broker keeps it until it ends on the broker clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .api import (
    ConfigKey,
    ConfigKeyRegister,
    DispatchView,
    Membership,
    ModeConsumer,
    RangeSet,
    SubscriptionModeBase,
    SubscriptionModeRegister,
    first_offsets,
    hookimpl,
    long_at_least,
)

SWITCH_DELAY_KEY = "logwright.failover.switch.delay.ms"
DEFAULT_SWITCH_DELAY_MS = 1000


def eligible_order(membership: Membership) -> tuple[ModeConsumer, ...]:
    """The consumers that may be active, in the order partitions are dealt to them."""
    if not membership.consumers:
        return ()
    top = min(consumer.priority for consumer in membership.consumers)
    return tuple(sorted((c for c in membership.consumers if c.priority == top),
                        key=lambda c: (c.name, c.consumer_id)))


def active_consumer(membership: Membership, partition_index: int) -> str | None:
    order = eligible_order(membership)
    return order[partition_index % len(order)].consumer_id if order else None


@dataclass(frozen=True, slots=True)
class FailoverMode(SubscriptionModeBase):
    name: str = "failover"
    allows_cumulative_ack: bool = True

    def assigned_partitions(self, membership: Membership, consumer_id: str, partition_count: int) -> frozenset[int]:
        order = eligible_order(membership)
        if not order:
            return frozenset()
        return frozenset(p for p in range(partition_count) if order[p % len(order)].consumer_id == consumer_id)

    def handover_delay_ms(self, settings: Mapping[str, str]) -> int:
        return int(settings.get(SWITCH_DELAY_KEY, DEFAULT_SWITCH_DELAY_MS))

    def eligible(self, view: DispatchView, consumer_id: str, candidates: RangeSet, limit: int) -> RangeSet:
        if active_consumer(view.membership, view.partition_index) != consumer_id:
            return RangeSet()
        if any(held for other, held in view.in_flight.items() if other != consumer_id):
            return RangeSet()
        handover = view.handover
        if handover is not None and view.now_ms < handover.until_ms:
            before = active_consumer(handover.previous, view.partition_index)
            if before is not None and before != consumer_id:
                return RangeSet()
        return first_offsets(candidates, limit)


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(FailoverMode())


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(
        SWITCH_DELAY_KEY, "group", str(DEFAULT_SWITCH_DELAY_MS), long_at_least(0),
        "After the active consumer of a failover partition changes, how long (broker time) nobody acquires on it, "
        "so a consumer that reconnects quickly takes it back without the standby having started; 0 switches at "
        "once (Pulsar's activeConsumerFailoverDelayTimeMillis).", "LONG"))
