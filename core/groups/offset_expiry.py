"""Committed offsets' expiry and the removal of groups left empty: Kafka 4.4's group metadata cleanup.

Every ``offsets.retention.check.interval.ms`` Kafka's coordinator looks at every group (share groups aside): it
expires the offsets its expiry condition allows, and deletes the group when it then has no offsets, no transaction
holding offsets for it, and no members. `cleanup` decides the same for one group, from its states; the broker's
`compat.coordinators.group_expiry` runs it on the broker clock. The condition is Kafka's
(``OffsetExpirationCondition``):

- an offset committed with an explicit retention (OffsetCommit v2-v4) expires at its ``expire_time_ms``;
- otherwise ``offsets.retention.minutes`` after a base time: for an Empty classic group with a protocol type, when it
  became Empty (or, unknown, the commit); for a group of committed offsets only (no protocol type), for a KIP-848
  consumer group and for a Stable classic ``consumer`` group whose subscriptions can be read, the commit;
- a topic a member subscribes to keeps its offsets; a classic group in any other case keeps all of them;
- a partition with a transactional offset not yet committed or aborted keeps its offset.

Kafka counts the retention from the group's last state change only while it is Empty; a commit there does not move
it. The broker clock is the only time read here: tests advance it instead of waiting a week.
"""

from __future__ import annotations

from collections.abc import Collection, Set
from dataclasses import dataclass

from logwright.core.consumer_groups.consumer_groups import ConsumerGroupState
from logwright.core.events import Event, OffsetDeleted
from logwright.core.groups.group_offsets import CommittedOffset, GroupOffsets, deletion
from logwright.core.groups.groups import GroupPhase, GroupState

CHECK_INTERVAL_MS = 600_000
"""Kafka's ``offsets.retention.check.interval.ms`` default."""


@dataclass(frozen=True, slots=True)
class Expiry:
    """When a group's offsets expire: ``from_commit`` counts the retention from each commit, else from
    ``empty_since_ms``; offsets of ``subscribed`` topics never expire."""

    from_commit: bool
    empty_since_ms: int = 0
    subscribed: Set[str] = frozenset()

    def expired(self, committed: CommittedOffset, now_ms: int, retention_ms: int) -> bool:
        if committed.expire_time_ms >= 0:
            return now_ms >= committed.expire_time_ms
        base = committed.commit_time_ms if self.from_commit or self.empty_since_ms <= 0 else self.empty_since_ms
        return now_ms - base >= retention_ms


def expiry(classic: GroupState | None, consumer: ConsumerGroupState | None,
           classic_subscriptions: Set[str] | None) -> Expiry | None:
    """The group's expiry condition; ``None`` when nothing of it expires now (a classic group with members that is
    not a Stable ``consumer`` group whose subscriptions, ``classic_subscriptions``, can be read)."""
    if consumer is not None:
        return Expiry(True, subscribed=frozenset(name for name, _, _ in consumer.subscription_metadata)
                      if consumer.members else frozenset())
    if classic is None or not classic.protocol_type:
        return Expiry(True)  # offsets only, a "simple" group: each offset by its commit
    if classic.phase == GroupPhase.EMPTY and not classic.members:
        return Expiry(False, classic.empty_since_ms)
    if (classic.phase == GroupPhase.STABLE and classic.protocol_type == "consumer"
            and classic_subscriptions is not None):
        return Expiry(True, subscribed=classic_subscriptions)
    return None


@dataclass(frozen=True, slots=True)
class Cleanup:
    """What one pass does to a group: ``events`` to stage (expired offsets, or the group's deletion with whatever
    offsets it had left), and whether the group goes (``deleted``)."""

    events: tuple[Event, ...]
    deleted: bool


NOTHING = Cleanup((), False)


def cleanup(group_id: str, classic: GroupState | None, consumer: ConsumerGroupState | None,
            offsets: GroupOffsets | None, classic_subscriptions: Set[str] | None,
            pending: Collection[tuple[str, int]], now_ms: int, retention_ms: int) -> Cleanup:
    """Expire the group's offsets that are due; delete the group once it is empty, all its offsets expired and no
    transaction holds offsets of it (``pending``: the partitions such transactions name)."""
    condition = expiry(classic, consumer, classic_subscriptions)
    if condition is None:
        return NOTHING
    expired: list[tuple[str, int]] = []
    kept = False
    for topic, partition, committed in offsets if offsets is not None else ():
        if (topic not in condition.subscribed and (topic, partition) not in pending
                and condition.expired(committed, now_ms, retention_ms)):
            expired.append((topic, partition))
        else:
            kept = True
    exists = offsets is not None or classic is not None or consumer is not None
    if not kept and not pending and exists and _empty(classic, consumer):
        return Cleanup((deletion(group_id, offsets),), True)
    return Cleanup(tuple(OffsetDeleted(group_id, topic, partition) for topic, partition in expired), False)


def _empty(classic: GroupState | None, consumer: ConsumerGroupState | None) -> bool:
    """Kafka's ``isEmpty``: no members, and a classic group's state is Empty."""
    if consumer is not None:
        return not consumer.members
    return classic is None or classic.phase == GroupPhase.EMPTY and not classic.members
