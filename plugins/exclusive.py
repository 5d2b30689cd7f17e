"""Exclusive: one consumer per subscription; a second one is refused with `ConsumerBusy` (Pulsar F23).

The consumer gets every partition and every available record, and may acknowledge cumulatively. When
it leaves, the next consumer to join starts from the cursor (mark-delete + 1), because everything the
first one held unacknowledged is released by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from logwright.core.cursors.subscription_mode import DispatchView, Membership, ModeConsumer, first_offsets
from logwright.core.errors import ConsumerBusy
from logwright.core.rangeset import RangeSet

from .registrars import SubscriptionModeRegister
from .spec import hookimpl


@dataclass(frozen=True, slots=True)
class ExclusiveMode:
    name: str = "exclusive"
    allows_cumulative_ack: bool = True
    uses_key_hashes: bool = False

    def join(self, membership: Membership, consumer: ModeConsumer) -> Membership:
        for present in membership.consumers:
            if present.consumer_id != consumer.consumer_id:
                raise ConsumerBusy(
                    f"exclusive subscription {membership.subscription!r} already has consumer "
                    f"{present.consumer_id!r}; {consumer.consumer_id!r} may attach once it leaves"
                )
        return membership.with_consumer(consumer)

    def leave(self, membership: Membership, consumer_id: str) -> Membership:
        return membership.without_consumer(consumer_id)

    def assigned_partitions(self, membership: Membership, consumer_id: str, partition_count: int) -> frozenset[int]:
        if membership.consumer(consumer_id) is None:
            return frozenset()
        return frozenset(range(partition_count))

    def eligible(self, view: DispatchView, consumer_id: str, candidates: RangeSet, limit: int) -> RangeSet:
        if view.membership.consumer(consumer_id) is None:
            return RangeSet()
        return first_offsets(candidates, limit)


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(ExclusiveMode())
