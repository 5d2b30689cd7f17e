"""Events of classic consumer groups (tags 20-26), of committed offsets (7-9), which KIP-848 groups share, and of an
empty group changing protocol (27)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from logwright.core.events.base import Event


@dataclass(frozen=True, slots=True)
class OffsetCommitted(Event):
    """A consumer group's committed position (the next offset to read) on one partition. ``expire_time_ms``: when it
    expires whatever the group does (OffsetCommit v2-v4's ``retention_time_ms`` after the commit), -1 for the broker's
    ``offsets.retention.minutes`` (`core.groups.offset_expiry`); version 1 (logs written before it) reads -1."""

    TAG: ClassVar[int] = 7
    VERSION: ClassVar[int] = 2
    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None
    commit_time_ms: int = 0
    expire_time_ms: int = -1

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 ends before ``expire_time_ms``: its default reads it."""
        return fields


@dataclass(frozen=True, slots=True)
class OffsetDeleted(Event):
    TAG: ClassVar[int] = 8
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupDeleted(Event):
    """A group went, with its committed offsets: ``partitions`` names them, so their rows go too."""

    TAG: ClassVar[int] = 9
    VERSION: ClassVar[int] = 2
    group: str
    partitions: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 named no partitions: offsets were one row per group, which the group's key named."""
        return [*fields, ()] if version == 1 else fields


CLASSIC, CONSUMER = "classic", "consumer"
"""The group types an `EmptyGroupConverted` names, as ListGroups (v5) names them."""


@dataclass(frozen=True, slots=True)
class EmptyGroupConverted(Event):
    """An empty group of one protocol gave its id to a joining member of the other, ``to`` ("classic" or
    "consumer"): its membership state goes, its committed offsets stay. Group ids are one namespace; Kafka 4.4
    converts an empty group the same way (a group with members is not converted: see docs/consumer-groups.md)."""

    TAG: ClassVar[int] = 27
    VERSION: ClassVar[int] = 2
    group: str
    to: str
    at_ms: int = 0
    """When, on the broker clock: a classic group made here is Empty from then (0: version 1, written before)."""

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 ends before ``at_ms``: its default reads it."""
        return fields


@dataclass(frozen=True, slots=True)
class RebalanceStarted(Event):
    """A classic group began a rebalance (PreparingRebalance): every member must rejoin."""

    TAG: ClassVar[int] = 20
    group: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class MemberJoined(Event):
    """A member joined or rejoined a classic group with these protocols (name, metadata)."""

    TAG: ClassVar[int] = 21
    group: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class MemberLeft(Event):
    """A member left, missed its session timeout or did not rejoin a rebalance in time (logs written before
    `MembersLeft`; still folded)."""

    TAG: ClassVar[int] = 22
    group: str
    member_id: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class MembersLeft(Event):
    """Members that left together: one LeaveGroup's entries, the members one timer pass expired, or those that
    did not rejoin a rebalance in time. One event for all of them, so the fold rebuilds the member tuple once: a
    `MemberLeft` each made a LeaveGroup of 10,000 members quadratic (1.1 s in the fold alone)."""

    TAG: ClassVar[int] = 26
    group: str
    member_ids: tuple[str, ...]
    reason: str = ""


@dataclass(frozen=True, slots=True)
class GenerationStarted(Event):
    """The join phase completed: a new generation with its protocol and leader (none when empty). ``at_ms``: when, on
    the broker clock; a group left without members is Empty from then, which its offsets' expiry counts from (0 in
    version 1, written before: its offsets then count from their commits, as Kafka's do without a state timestamp)."""

    TAG: ClassVar[int] = 23
    VERSION: ClassVar[int] = 2
    group: str
    generation: int
    protocol_name: str | None
    leader: str | None
    at_ms: int = 0

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 ends before ``at_ms``: its default reads it."""
        return fields


@dataclass(frozen=True, slots=True)
class AssignmentsSynced(Event):
    """The leader's assignments (member id, assignment bytes) for a generation: the group is Stable."""

    TAG: ClassVar[int] = 24
    group: str
    generation: int
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class StaticMemberReplaced(Event):
    """A static member (``group.instance.id``) rejoined under a new member id; the old id is fenced."""

    TAG: ClassVar[int] = 25
    group: str
    group_instance_id: str
    old_member_id: str
    new_member_id: str


@dataclass(frozen=True, slots=True)
class ClassicGroupUpgraded(Event):
    """A classic group with members became a consumer group (Kafka 4.4's online upgrade): a consumer-protocol member
    joined it. Its classic state goes; the consumer group events that follow rebuild its members, now classic
    members of a consumer group, at ``generation`` as their epoch. Committed offsets stay."""

    TAG: ClassVar[int] = 28
    group: str
    generation: int
    at_ms: int


@dataclass(frozen=True, slots=True)
class ConsumerGroupDowngraded(Event):
    """A consumer group whose members left but classic ones became a classic group (Kafka 4.4's online downgrade).
    Its consumer group state goes; the classic group events that follow rebuild it at ``generation`` (the group
    epoch) and start a rebalance, so the members rejoin the classic way. Committed offsets stay."""

    TAG: ClassVar[int] = 29
    group: str
    generation: int
    at_ms: int


GROUP_EVENT_TYPES: tuple[type[Event], ...] = (
    OffsetCommitted,
    OffsetDeleted,
    GroupDeleted,
    EmptyGroupConverted,
    ClassicGroupUpgraded,
    ConsumerGroupDowngraded,
    RebalanceStarted,
    MemberJoined,
    MemberLeft,
    MembersLeft,
    GenerationStarted,
    AssignmentsSynced,
    StaticMemberReplaced,
)
