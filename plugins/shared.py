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

from .api import (
    MAX_UNACKED_PER_CONSUMER,
    ConfigKey,
    ConfigKeyRegister,
    DispatchView,
    ModeConsumer,
    SubscriptionModeBase,
    SubscriptionModeRegister,
    hookimpl,
    in_flight_budget,
    long_at_least,
)


@dataclass(frozen=True, slots=True)
class SharedMode(SubscriptionModeBase):
    name: str = "shared"

    def budget(self, view: DispatchView, consumer: ModeConsumer, limit: int) -> int:
        return in_flight_budget(view, consumer, limit)


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(SharedMode())


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(
        MAX_UNACKED_PER_CONSUMER, "group", "0", long_at_least(0),
        "Most records one consumer of a shared or key_shared subscription may hold unacknowledged; it gets no "
        "more until it acknowledges some. 0 means no limit (Pulsar's maxUnackedMessagesPerConsumer).", "INT"))
