"""Shared: every consumer may take any available record, within its permits (Pulsar F25, KIP-932).

Dispatch is pull-based: each consumer's fetch takes the next available records, so records are dealt
round-robin among the consumers that ask, and a record is locked to one consumer at a time. A
consumer holding as many unacknowledged records as its cap (its own ``max_in_flight`` or the group's
``logwright.max.unacked.per.consumer``) gets nothing until it acknowledges some. Cumulative
acknowledgement is refused: consumers hold interleaved records, so "up to here" would settle records
another consumer is still working on.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.core.config.configs import ConfigKey, long_at_least
from logwright.core.cursors.subscription_mode import (
    MAX_UNACKED_PER_CONSUMER,
    DispatchView,
    Membership,
    ModeConsumer,
    first_offsets,
    in_flight_budget,
)
from logwright.core.rangeset import RangeSet

from .registrars import ConfigKeyRegister, SubscriptionModeRegister
from .spec import hookimpl


@dataclass(frozen=True, slots=True)
class SharedMode:
    name: str = "shared"
    allows_cumulative_ack: bool = False
    uses_key_hashes: bool = False

    def join(self, membership: Membership, consumer: ModeConsumer) -> Membership:
        return membership.with_consumer(consumer)

    def leave(self, membership: Membership, consumer_id: str) -> Membership:
        return membership.without_consumer(consumer_id)

    def assigned_partitions(self, membership: Membership, consumer_id: str, partition_count: int) -> frozenset[int]:
        if membership.consumer(consumer_id) is None:
            return frozenset()
        return frozenset(range(partition_count))

    def eligible(self, view: DispatchView, consumer_id: str, candidates: RangeSet, limit: int) -> RangeSet:
        consumer = view.membership.consumer(consumer_id)
        if consumer is None:
            return RangeSet()
        return first_offsets(candidates, in_flight_budget(view, consumer, limit))


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(SharedMode())


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(
        MAX_UNACKED_PER_CONSUMER, "group", "0", long_at_least(0),
        "Most records one consumer of a shared or key_shared subscription may hold unacknowledged; it gets no "
        "more until it acknowledges some. 0 means no limit (Pulsar's maxUnackedMessagesPerConsumer).", "INT"))
