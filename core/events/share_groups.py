"""Events of KIP-932 share group membership (tags 50-59) and of Failover's switch delay (tag 88).

Membership is persisted so that a restarted broker still knows who is in a group, what each member
subscribed to and which epoch it was given: a member that keeps heartbeating across the restart is not
fenced. Liveness (when a member last heartbeated) is not persisted, as for classic groups.

Deliveries are not here: they are cursor events (tags 30-39) of the subscription named after the group.
A running switch delay (``logwright.failover.switch.delay.ms``) is an event so a restart keeps it; the
``switch_delays`` projection folds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.cursors.subscription_mode import Membership
from logwright.core.events.base import Event

ShareAssignment = tuple[tuple[str, bytes, tuple[int, ...]], ...]
"""``(topic name, topic id, partition indexes)`` per assigned topic, sorted by topic name."""


@dataclass(frozen=True, slots=True)
class ShareGroupEvent(Event):
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareMemberJoined(ShareGroupEvent):
    """A member joined (ShareGroupHeartbeat with epoch 0); a rejoin of a known id replaces the member."""

    TAG: ClassVar[int] = 50
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topics: tuple[str, ...]
    lock_duration_ms: int = 0
    """The member's own acquisition lock (its ack timeout, declared with LogwrightConsumerOptions); 0: the group's."""


@dataclass(frozen=True, slots=True)
class ShareMemberSubscribed(ShareGroupEvent):
    """A member changed its subscription."""

    TAG: ClassVar[int] = 51
    subscribed_topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ShareMemberAssigned(ShareGroupEvent):
    """A member was given ``assignment`` under ``member_epoch`` (the group epoch moves to it)."""

    TAG: ClassVar[int] = 52
    member_epoch: int
    assignment: ShareAssignment


@dataclass(frozen=True, slots=True)
class ShareMemberLeft(ShareGroupEvent):
    """A member left (epoch -1) or was removed (``reason`` says which)."""

    TAG: ClassVar[int] = 53
    reason: str


@dataclass(frozen=True, slots=True)
class ShareMembershipChanged(ShareGroupEvent):
    """The subscription mode's view of the group after ``member_id`` joined or left (key-hash ownership
    included), recorded as a value so a restart rebuilds exactly the same dispatch."""

    TAG: ClassVar[int] = 54
    membership: Membership


@dataclass(frozen=True, slots=True)
class ShareGroupCreated(ShareGroupEvent):
    """An empty share group came into being without a member: AlterShareGroupOffsets on a group that did
    not exist creates it, as Kafka does. ``member_id`` is empty."""

    TAG: ClassVar[int] = 55


@dataclass(frozen=True, slots=True)
class ShareGroupDeleted(ShareGroupEvent):
    """An empty share group was deleted (DeleteGroups): it is gone, and its cursors with it (their own
    `SubscriptionDeleted` events). ``member_id`` is empty. Its config overrides stay, as in Kafka."""

    TAG: ClassVar[int] = 56


@dataclass(frozen=True, slots=True)
class SwitchDelayStarted(Event):
    """A membership change started ``group_id``'s switch delay: ``previous`` holds until ``until_ms``."""

    TAG: ClassVar[int] = 88
    group_id: str
    previous: Membership
    until_ms: int


SHARE_GROUP_EVENT_TYPES: tuple[type[Event], ...] = (
    ShareMemberJoined,
    ShareMemberSubscribed,
    ShareMemberAssigned,
    ShareMemberLeft,
    ShareMembershipChanged,
    ShareGroupCreated,
    ShareGroupDeleted,
)
"""The membership events the ``share_groups`` projection folds."""

SWITCH_DELAY_EVENT_TYPES: tuple[type[Event], ...] = (SwitchDelayStarted,)

