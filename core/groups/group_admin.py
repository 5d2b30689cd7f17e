"""Decisions about a group's offsets and existence: who may commit, deleting groups and offsets, listing.

A group "exists" when it has members (the ``groups`` projection) or a head of committed offsets (the
``committed_offsets`` projection, kept when its last offset goes, until the group's expiry); a group that only stores
offsets is reported as Empty, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from logwright.core.errors import (
    CommitToNoGroup,
    DomainError,
    GroupSubscribedToTopic,
    IllegalGeneration,
    NonEmptyGroup,
    OffsetMetadataTooLarge,
    RebalanceInProgress,
    UnknownGroup,
    UnknownMember,
    quoted,
)
from logwright.core.events import GroupDeleted, OffsetDeleted
from logwright.core.groups.group_membership import current_member
from logwright.core.groups.group_offsets import GroupOffsets, deletion
from logwright.core.groups.groups import GroupMember, GroupPhase, GroupState

MAX_OFFSET_METADATA_BYTES = 4096
"""Kafka's ``offset.metadata.max.bytes`` default."""


def check_offset_commit(
    group_id: str, state: GroupState | None, has_offsets: bool, generation: int, member_id: str,
    group_instance_id: str | None,
) -> GroupMember | None:
    """Whether an OffsetCommit may be applied; returns the committing member, if it is one. As Kafka 4.4 checks a
    classic group's commits (answers compared in tests/integration/test_commit_checks.py):

    - a group that does not exist (no members, no committed offsets) takes only a "simple" commit (generation -1)
      and then exists; a generation names no group there (`CommitToNoGroup`);
    - generation -1 to a group without members is a simple commit, whatever member id it names;
    - otherwise the member must be current (its ``group.instance.id`` too) and name the current generation;
    - generation -1 with no member to a group with members is UNKNOWN_MEMBER_ID.
    """
    if state is None:
        if not has_offsets and generation >= 0:
            raise CommitToNoGroup(f"group {quoted(group_id)} does not exist; only a commit of generation -1 "
                                  "creates it")
        state = GroupState(group_id)  # a group of committed offsets only is an Empty classic group
    if generation < 0 and not state.members:
        return None
    member: GroupMember | None = None
    if generation >= 0 or member_id or group_instance_id is not None:
        member = current_member(state, member_id, group_instance_id)
        if generation != state.generation:
            raise IllegalGeneration(f"generation {generation} is not group {quoted(state.group_id)}'s "
                                    f"current generation {state.generation}")
    else:
        raise UnknownMember(f"group {quoted(state.group_id)} has members; only they may commit offsets")
    if state.phase == GroupPhase.COMPLETING_REBALANCE:
        raise RebalanceInProgress(f"group {quoted(state.group_id)} is completing a rebalance; sync first")
    return member


def check_offset_metadata(metadata: str | None, most: int = MAX_OFFSET_METADATA_BYTES) -> None:
    """Refuse a committed offset's metadata longer than ``offset.metadata.max.bytes`` (``most``), measured as Kafka
    4.4 measures it despite the key's name: Java's ``String.length()``, UTF-16 code units, not bytes (3,000 "é" are
    6,000 bytes in UTF-8 and pass the default; a character outside the BMP counts two)."""
    if metadata is None or len(metadata) * 2 <= most:  # each character is one or two units: no need to count
        return
    if len(metadata.encode("utf-16-le", "surrogatepass")) // 2 > most:
        raise OffsetMetadataTooLarge(f"offset metadata is limited to {most} characters")


def decide_delete_group(group_id: str, state: GroupState | None, offsets: GroupOffsets | None) -> GroupDeleted:
    if state is not None and state.members:
        raise NonEmptyGroup(f"group {quoted(group_id)} still has {len(state.members)} members")
    if state is None and offsets is None:
        raise UnknownGroup(f"group {quoted(group_id)} does not exist")
    return deletion(group_id, offsets)


@dataclass(frozen=True, slots=True)
class OffsetDeletion:
    events: tuple[OffsetDeleted, ...]
    errors: dict[tuple[str, int], DomainError]
    """Partitions refused, keyed by (topic, partition); the rest succeeded."""


def decide_offset_delete(
    group_id: str,
    state: GroupState | None,
    offsets: GroupOffsets | None,
    partitions: Sequence[tuple[str, int]],
    subscribed_topics: frozenset[str] | None,
) -> OffsetDeletion:
    """OffsetDelete: refused for topics a live member subscribes to.

    ``subscribed_topics`` is ``None`` when the members' subscriptions cannot be known (a group whose
    protocol type is not ``consumer``): such a group's offsets can be deleted only once it is empty.
    """
    if state is None and offsets is None:
        raise UnknownGroup(f"group {quoted(group_id)} does not exist")
    has_members = state is not None and bool(state.members)
    if has_members and subscribed_topics is None:
        raise NonEmptyGroup(f"group {quoted(group_id)} has members and its subscriptions are unknown")
    subscribed = subscribed_topics if has_members and subscribed_topics is not None else frozenset()
    events: list[OffsetDeleted] = []
    errors: dict[tuple[str, int], DomainError] = {}
    refusals: dict[str, DomainError] = {}  # one error per topic, its name quoted cut: an error per partition, each
    # naming a 32,767-character topic in full, was 951 MB for 30,000 partitions of a 153 KB request
    for topic, partition in partitions:
        if topic in subscribed:
            refusal = refusals.get(topic)
            if refusal is None:
                refusal = refusals[topic] = GroupSubscribedToTopic(
                    f"a member of {quoted(group_id)} subscribes to {quoted(topic)}")
            errors[(topic, partition)] = refusal
        elif offsets is not None and offsets.get(topic, partition) is not None:
            events.append(OffsetDeleted(group_id, topic, partition))
    return OffsetDeletion(tuple(events), errors)


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    phase: str


def list_groups(states: Iterable[GroupState], offsets_groups: Iterable[str]) -> list[GroupListing]:
    """Every group with members or offsets, sorted by id; offset-only groups are Empty."""
    listed = {state.group_id: GroupListing(state.group_id, state.protocol_type or "", state.phase) for state in states}
    for group_id in offsets_groups:
        listed.setdefault(group_id, GroupListing(group_id, "", GroupPhase.EMPTY))
    return [listed[group_id] for group_id in sorted(listed)]
