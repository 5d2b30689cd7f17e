"""Exclusive: one consumer per subscription; a second one is refused with `ConsumerBusy` (Pulsar F23).

The consumer gets every partition and every available record, and may acknowledge cumulatively. When
it leaves, the next consumer to join starts from the cursor (mark-delete + 1), because everything the
first one held unacknowledged is released by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

from .api import ConsumerBusy, Membership, ModeConsumer, SubscriptionModeBase, SubscriptionModeRegister, hookimpl


@dataclass(frozen=True, slots=True)
class ExclusiveMode(SubscriptionModeBase):
    name: str = "exclusive"
    allows_cumulative_ack: bool = True

    def join(self, membership: Membership, consumer: ModeConsumer) -> Membership:
        for present in membership.consumers:
            if present.consumer_id != consumer.consumer_id:
                raise ConsumerBusy(
                    f"exclusive subscription {membership.subscription!r} already has consumer "
                    f"{present.consumer_id!r}; {consumer.consumer_id!r} may attach once it leaves"
                )
        return membership.with_consumer(consumer)


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(ExclusiveMode())
