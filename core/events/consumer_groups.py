"""Events of KIP-848 consumer groups (tags 70-79): membership, epochs, target and current assignments.

Everything a restarted broker needs to keep serving the group is here: each member's subscription and
assignor, the group epoch with the topic metadata it was computed for, the target assignment and each
member's reconciled assignment with its epoch. Liveness (last heartbeat, rebalance deadlines) is not
persisted, as for classic and share groups. Committed offsets stay `OffsetCommitted` events; a deleted
group is the shared `GroupDeleted`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from logwright.core.events.base import Event

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]
"""``(topic name, partition indexes)`` per topic, both sorted; topic ids are looked up at the wire."""

SubscriptionMetadata = tuple[tuple[str, bytes, int], ...]
"""``(topic name, topic id, partition count)`` of every topic some member subscribes to, sorted."""


@dataclass(frozen=True, slots=True)
class ConsumerGroupEvent(Event):
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ConsumerMemberSubscribed(ConsumerGroupEvent):
    """A member joined (epoch 0) or changed what it told the coordinator; its epoch and assignment stay.

    A member that speaks the classic protocol (JoinGroup, SyncGroup, Heartbeat) inside a consumer group has a
    ``classic_session_timeout_ms`` and the ``classic_protocols`` (name, metadata) of its last JoinGroup, as Kafka's
    ``ConsumerGroupMemberMetadataValue.ClassicMemberMetadata``; a consumer-protocol member has ``None`` and ``()``.
    Version 1 (logs written before classic members) ends before them: the defaults read it."""

    TAG: ClassVar[int] = 70
    VERSION: ClassVar[int] = 2
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    server_assignor: str | None
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    classic_session_timeout_ms: int | None = None
    classic_protocols: tuple[tuple[str, bytes], ...] = ()

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        return fields


@dataclass(frozen=True, slots=True)
class ConsumerGroupEpochBumped(ConsumerGroupEvent):
    """Membership, a subscription or a subscribed topic changed: the group moves to ``group_epoch``.
    ``member_id`` is the member whose heartbeat noticed it (empty for a timeout)."""

    TAG: ClassVar[int] = 71
    group_epoch: int
    subscription_metadata: SubscriptionMetadata


@dataclass(frozen=True, slots=True)
class ConsumerTargetAssignmentComputed(ConsumerGroupEvent):
    """The server-side ``assignor`` computed the target assignment of ``assignment_epoch`` (the group epoch)."""

    TAG: ClassVar[int] = 72
    assignment_epoch: int
    assignor: str
    targets: tuple[tuple[str, TopicPartitions], ...]
    """``(member id, partitions)`` for every member, sorted by member id."""
    computed_at_ms: int = 0
    """Broker time of the computation, from which the next one waits the group's assignment interval (KIP-1263); 0
    (an empty group's, and every target computed before logwright paced them): the next change is assigned at once."""


@dataclass(frozen=True, slots=True)
class ConsumerMemberReconciled(ConsumerGroupEvent):
    """A member's current assignment moved towards its target: what it owns now, what it must revoke first."""

    TAG: ClassVar[int] = 73
    member_epoch: int
    previous_member_epoch: int
    state: str
    assigned: TopicPartitions
    revoking: TopicPartitions


@dataclass(frozen=True, slots=True)
class ConsumerMemberLeft(ConsumerGroupEvent):
    """A member left (epoch -1), timed out or was fenced (``reason`` says which); its partitions are free."""

    TAG: ClassVar[int] = 74
    reason: str


@dataclass(frozen=True, slots=True)
class ConsumerStaticMemberReplaced(ConsumerGroupEvent):
    """A static member (instance id) that had left temporarily (epoch -2) rejoined as ``member_id``:
    it takes over ``old_member_id``'s assignment and target without a rebalance."""

    TAG: ClassVar[int] = 75
    old_member_id: str


CONSUMER_GROUP_EVENT_TYPES: tuple[type[Event], ...] = (
    ConsumerMemberSubscribed,
    ConsumerGroupEpochBumped,
    ConsumerTargetAssignmentComputed,
    ConsumerMemberReconciled,
    ConsumerMemberLeft,
    ConsumerStaticMemberReplaced,
)
