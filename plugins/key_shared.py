"""Key_Shared: records with the same key hash go to one consumer, in order (Pulsar F26).

Each record's key hash (`logwright.core.cursors.key_hash.key_hash`: Murmur3_32 of the ordering key, the key,
or ``"NONE_KEY"``, mod 65536) is owned by one consumer. Consumers that declare no ranges share the
space by AUTO_SPLIT; consumers that declare ranges use STICKY; one subscription uses one policy.
Ownership is part of the `Membership` the caller records, so it survives restarts (W13).

Per-key order across joins and leaves: a consumer gets no record of a hash while any record of that
hash is in flight to another consumer (the hash is "draining", PIP-379). When the previous owner acks
or leaves, its records are released and, being at lower offsets, go out first to the new owner. This
is stricter than "an *earlier* record in flight" and needs no read position. The group config
``logwright.key_shared.allow.out.of.order.delivery=true`` lifts the rule, as Pulsar's
``allowOutOfOrderDelivery`` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from logwright.core.cursors.key_hash_ranges import auto_split_join, auto_split_leave, sticky_join, sticky_leave

from .api import (
    ConfigKey,
    ConfigKeyRegister,
    DispatchView,
    InvalidRequest,
    Membership,
    ModeConsumer,
    RangeSet,
    SubscriptionModeBase,
    SubscriptionModeRegister,
    boolean,
    hookimpl,
    in_flight_budget,
)

ALLOW_OUT_OF_ORDER = "logwright.key_shared.allow.out.of.order.delivery"


def draining_hashes(view: DispatchView, consumer_id: str, key_hash_of: Callable[[int], int]) -> set[int]:
    """Key hashes with records in flight to consumers other than ``consumer_id``."""
    return {key_hash_of(offset) for other, held in view.in_flight.items() if other != consumer_id for offset in held}


@dataclass(frozen=True, slots=True)
class KeySharedMode(SubscriptionModeBase):
    name: str = "key_shared"
    uses_key_hashes: bool = True

    def join(self, membership: Membership, consumer: ModeConsumer) -> Membership:
        others = [c for c in membership.consumers if c.consumer_id != consumer.consumer_id]
        if others and bool(others[0].hash_ranges) != bool(consumer.hash_ranges):
            policy = "STICKY (declared key-hash ranges)" if others[0].hash_ranges else "AUTO_SPLIT (no ranges)"
            raise InvalidRequest(f"key_shared subscription {membership.subscription!r} uses {policy}; consumer "
                                 f"{consumer.consumer_id!r} must do the same")
        if consumer.hash_ranges:
            ownership = sticky_join(membership.ownership, consumer.consumer_id, consumer.hash_ranges)
        else:
            ownership = auto_split_join(membership.ownership, consumer.consumer_id)
        return replace(membership.with_consumer(consumer), ownership=ownership)

    def leave(self, membership: Membership, consumer_id: str) -> Membership:
        leaving = membership.consumer(consumer_id)
        if leaving is None:
            return membership
        if leaving.hash_ranges:
            ownership = sticky_leave(membership.ownership, consumer_id)
        else:
            ownership = auto_split_leave(membership.ownership, consumer_id)
        return replace(membership.without_consumer(consumer_id), ownership=ownership)

    def eligible(self, view: DispatchView, consumer_id: str, candidates: RangeSet, limit: int) -> RangeSet:
        """Owned, not draining, within the consumer's budget; scans ``candidates`` in offset order until
        the budget is spent, so the caller should pass a bounded window of the backlog."""
        consumer = view.membership.consumer(consumer_id)
        if consumer is None:
            return RangeSet()
        budget = in_flight_budget(view, consumer, limit)
        if budget <= 0 or not candidates:
            return RangeSet()
        key_hash_of = view.key_hash_of
        if key_hash_of is None:
            raise ValueError("key_shared dispatch needs DispatchView.key_hash_of")
        allow_out_of_order = view.settings.get(ALLOW_OUT_OF_ORDER, "false").lower() == "true"
        blocked = set() if allow_out_of_order else draining_hashes(view, consumer_id, key_hash_of)
        owner_of = view.membership.ownership.owner_of
        chosen: list[tuple[int, int]] = []
        for offset in candidates:
            key_hash = key_hash_of(offset)
            if key_hash in blocked or owner_of(key_hash) != consumer_id:
                continue
            if chosen and chosen[-1][1] == offset - 1:
                chosen[-1] = (chosen[-1][0], offset)
            else:
                chosen.append((offset, offset))
            budget -= 1
            if budget == 0:
                break
        return RangeSet(tuple(chosen))


@hookimpl
def logwright_register_subscription_modes(register: SubscriptionModeRegister) -> None:
    register.add(KeySharedMode())


@hookimpl
def logwright_register_config_keys(register: ConfigKeyRegister) -> None:
    register.add(ConfigKey(
        ALLOW_OUT_OF_ORDER, "group", "false", boolean,
        "Whether a key_shared consumer may receive a key's records while earlier ones are still held by the "
        "key's previous owner (true trades per-key order for less waiting after joins).", "BOOLEAN"))
