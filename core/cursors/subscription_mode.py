"""The contract of a subscription mode (Exclusive, Failover, Shared, Key_Shared, or a plugin's own).

A mode decides three things for the share-group coordinator, all pure and from plain values:

- who may join (`SubscriptionMode.join`) and what the membership becomes, key-hash ownership included,
  after a join or a leave; the caller records the new `Membership` (or its ownership) in an event, so a
  restart rebuilds exactly the same assignment (seed weakness W13);
- which partitions of a topic a consumer may acquire from (`assigned_partitions`);
- which of the available records a consumer may acquire now (`eligible`), as a `RangeSet` handed to
  `core.cursor_commands.acquire(..., eligible=...)`.

Modes are plain objects handed out once by the plugin host; dispatch calls them directly, never
through pluggy. They hold no state of their own: everything they need comes in the arguments.
`SubscriptionModeBase` does the membership bookkeeping, so a mode states only how it differs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from logwright.core.cursors.key_hash_ranges import HashRange, KeyHashOwnership
from logwright.core.errors import InvalidRequest
from logwright.core.rangeset import RangeSet

SUBSCRIPTION_MODE_KEY = "logwright.subscription.mode"
"""Group config naming the mode (registered by the plugin host with the registered modes as its values)."""
DEFAULT_MODE = "shared"


@dataclass(frozen=True, slots=True)
class ModeConsumer:
    """One consumer as a mode sees it.

    ``consumer_id`` is unique within the subscription (a share group's member id); ``name`` is the
    consumer name Failover sorts by; ``priority`` is Pulsar's ``priorityLevel`` (0 is the highest);
    ``hash_ranges`` are a Key_Shared STICKY declaration (empty: AUTO_SPLIT); ``max_in_flight`` caps the
    records it may hold unacknowledged (0: no cap).
    """

    consumer_id: str
    name: str = ""
    priority: int = 0
    hash_ranges: tuple[HashRange, ...] = ()
    max_in_flight: int = 0


@dataclass(frozen=True, slots=True)
class Membership:
    """A subscription's consumers in join order, and who owns which key hashes (Key_Shared only)."""

    subscription: str
    consumers: tuple[ModeConsumer, ...] = ()
    ownership: KeyHashOwnership = KeyHashOwnership()

    def consumer(self, consumer_id: str) -> ModeConsumer | None:
        for consumer in self.consumers:
            if consumer.consumer_id == consumer_id:
                return consumer
        return None

    def with_consumer(self, consumer: ModeConsumer) -> Membership:
        """Add at the end of the join order, or replace in place when the consumer rejoins."""
        if self.consumer(consumer.consumer_id) is None:
            return replace(self, consumers=(*self.consumers, consumer))
        return replace(self, consumers=tuple(consumer if c.consumer_id == consumer.consumer_id else c
                                             for c in self.consumers))

    def without_consumer(self, consumer_id: str) -> Membership:
        return replace(self, consumers=tuple(c for c in self.consumers if c.consumer_id != consumer_id))


@dataclass(frozen=True, slots=True)
class Handover:
    """A change of membership whose delay is still running (Failover's active-consumer switch delay).

    ``previous`` is the membership when the delay began; until ``until_ms`` a mode with a switch delay
    lets no consumer acquire on a partition whose active consumer differs from the one in ``previous``.
    Changes within the delay do not extend it (Pulsar does not reschedule its pending read either).
    """

    previous: Membership
    until_ms: int


@dataclass(frozen=True, slots=True)
class DispatchView:
    """What `SubscriptionMode.eligible` may look at for one partition of one subscription.

    ``in_flight`` maps each consumer to the offsets it holds on this partition. ``key_hash_of`` returns
    an offset's key hash (from the index written at append; only modes with ``uses_key_hashes`` call it,
    for candidates and for records in flight). ``settings`` are the group's effective configs.
    """

    membership: Membership
    partition_index: int
    partition_count: int
    in_flight: Mapping[str, RangeSet] = field(default_factory=dict)
    key_hash_of: Callable[[int], int] | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    now_ms: int = 0
    handover: Handover | None = None
    """The subscription's running switch delay, if any (see `handover_delay_ms`)."""


@runtime_checkable
class SubscriptionMode(Protocol):
    """A dispatch policy for one subscription; see the module docstring for how it is used."""

    @property
    def name(self) -> str:
        """The value of the group config ``logwright.subscription.mode`` that selects this mode."""
        ...

    @property
    def allows_cumulative_ack(self) -> bool:
        """Whether "everything up to here" acknowledgements make sense (single-active modes only)."""
        ...

    @property
    def uses_key_hashes(self) -> bool:
        """Whether `eligible` reads key hashes; when false the caller need not look them up."""
        ...

    def join(self, membership: Membership, consumer: ModeConsumer) -> Membership:
        """The membership with ``consumer`` added (or updated, if it rejoins).

        Raises `ConsumerBusy` if the mode refuses another consumer, `InvalidRequest` if the consumer's
        own declaration is wrong. Must be deterministic: the caller stores the result in an event.
        """
        ...

    def leave(self, membership: Membership, consumer_id: str) -> Membership:
        """The membership without ``consumer_id`` (unchanged if it is not a member)."""
        ...

    def assigned_partitions(self, membership: Membership, consumer_id: str, partition_count: int) -> frozenset[int]:
        """Indexes ``0..partition_count-1`` of one topic that ``consumer_id`` may acquire from."""
        ...

    def eligible(self, view: DispatchView, consumer_id: str, candidates: RangeSet, limit: int) -> RangeSet:
        """The offsets of ``candidates`` (available records, in order) that ``consumer_id`` may acquire now.

        At most ``limit`` offsets, the lowest eligible ones; a subset of ``candidates``.
        """
        ...


@dataclass(frozen=True, slots=True)
class SubscriptionModeBase:
    """The membership bookkeeping every mode shares, so a mode overrides only what differs.

    Consumers join at the end of the join order (a rejoin replaces them in place) and leave without a
    trace; each member may acquire on every partition; `eligible` gives a member the lowest candidates
    of a partition it is assigned, up to `budget`. Subclass it as a frozen dataclass with a default
    ``name`` (``name: str = "my_mode"``) and override `join` (to refuse or to track ownership),
    `assigned_partitions` (to deal partitions), `budget` (to cap what one consumer takes) or `eligible`.
    """

    name: str
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

    def budget(self, view: DispatchView, consumer: ModeConsumer, limit: int) -> int:
        """How many records ``consumer`` may acquire in this call; ``limit`` unless the mode caps it."""
        return limit

    def eligible(self, view: DispatchView, consumer_id: str, candidates: RangeSet, limit: int) -> RangeSet:
        consumer = view.membership.consumer(consumer_id)
        if consumer is None or view.partition_index not in self.assigned_partitions(
                view.membership, consumer_id, view.partition_count):
            return RangeSet()
        return first_offsets(candidates, self.budget(view, consumer, limit))


def handover_delay_ms(mode: SubscriptionMode, settings: Mapping[str, str]) -> int:
    """How long ``mode`` holds a partition back after its active consumer changed; 0 for modes without a delay.

    A mode opts in by defining ``handover_delay_ms(settings) -> int`` (Failover does); the caller then
    records a `Handover` at each membership change and passes it in `DispatchView.handover`.
    """
    delay = getattr(mode, "handover_delay_ms", None)
    return int(delay(settings)) if callable(delay) else 0


def require_cumulative_ack(mode: SubscriptionMode, subscription: str) -> None:
    """Refuse a cumulative acknowledgement on a mode where consumers hold interleaved records."""
    if not mode.allows_cumulative_ack:
        raise InvalidRequest(
            f"subscription {subscription!r} is {mode.name}: cumulative acknowledgement is only allowed on "
            "exclusive and failover subscriptions; acknowledge each record instead"
        )


MAX_UNACKED_PER_CONSUMER = "logwright.max.unacked.per.consumer"
"""Group config: records one consumer may hold unacknowledged in Shared and Key_Shared (0: no cap)."""


def in_flight_budget(view: DispatchView, consumer: ModeConsumer, limit: int) -> int:
    """How many more records ``consumer`` may acquire: ``limit``, capped by the lower non-zero of its own
    ``max_in_flight`` and the group's ``logwright.max.unacked.per.consumer``, minus what it holds.

    Pulsar blocks a consumer at the cap until it drops to half of it; here it may take more as soon as
    it is below the cap, which needs no remembered "blocked" flag and never delivers more than the cap.
    """
    caps = [cap for cap in (consumer.max_in_flight, int(view.settings.get(MAX_UNACKED_PER_CONSUMER, "0"))) if cap > 0]
    if not caps:
        return limit
    held = view.in_flight.get(consumer.consumer_id)
    return max(0, min(limit, min(caps) - (len(held) if held is not None else 0)))


def first_offsets(candidates: RangeSet, limit: int) -> RangeSet:
    """The lowest ``limit`` offsets of ``candidates``."""
    if limit <= 0:
        return RangeSet()
    chosen: list[tuple[int, int]] = []
    for first, last in candidates.ranges:
        take_last = min(last, first + limit - 1)
        chosen.append((first, take_last))
        limit -= take_last - first + 1
        if limit == 0:
            break
    return RangeSet.from_ranges(chosen)
