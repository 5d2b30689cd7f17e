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
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.core.rangeset import RangeSet
from logwright.core.subscription_mode import DispatchView, Membership, ModeConsumer, first_offsets

from .registrars import SubscriptionModeRegister
from .spec import hookimpl


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
class FailoverMode:
    name: str = "failover"
    allows_cumulative_ack: bool = True
    uses_key_hashes: bool = False

    def join(self, membership: Membership, consumer: ModeConsumer) -> Membership:
        return membership.with_consumer(consumer)

    def leave(self, membership: Membership, consumer_id: str) -> Membership:
        return membership.without_consumer(consumer_id)

    def assigned_partitions(self, membership: Membership, consumer_id: str, partition_count: int) -> frozenset[int]:
        order = eligible_order(membership)
        if not order:
            return frozenset()
        return frozenset(p for p in range(partition_count) if order[p % len(order)].consumer_id == consumer_id)

    def eligible(self, view: DispatchView, consumer_id: str, candidates: RangeSet, limit: int) -> RangeSet:
        if active_consumer(view.membership, view.partition_index) != consumer_id:
            return RangeSet()
        if any(held for other, held in view.in_flight.items() if other != consumer_id):
            return RangeSet()
        return first_offsets(candidates, limit)


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(FailoverMode())
