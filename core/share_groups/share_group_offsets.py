"""Share group offset administration (KIP-932's Describe/Alter/DeleteShareGroupOffsets) over cursors.

A share group keeps one cursor per partition (`core.cursor`). Kafka's share-partition start offset
(SPSO) is the cursor's ``mark_delete_position + 1``, its "delivery complete count" the offsets the cursor
settled above that, and the lag ``high watermark - SPSO - delivery complete count``. The rules are
Apache Kafka 4.4's, as a broker answers them (``tests/integration/test_share_group_offsets.py`` runs on
both):

- **Alter** starts a partition's state afresh at the given offset (any offset is kept as given, as Kafka
  does; offsets below the log start simply deliver from the log start), and creates the share group if
  it does not exist. Only an empty share group may be altered.
- **Delete** removes the state of every partition of a topic: the next consumer starts at
  ``share.auto.offset.reset`` again. The share group must exist and be empty; a topic without state is
  refused on its own.
- **Describe** reports -1 (no state) rather than an error for an unknown group, topic or partition.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from logwright.core.cursors.cursor import CursorState
from logwright.core.errors import InvalidGroupId, NonEmptyGroup, UnknownGroup, UnknownPartition, UnknownTopic, quoted
from logwright.core.events import Event
from logwright.core.events.cursors import SubscriptionCreated, SubscriptionDeleted
from logwright.core.events.share_groups import ShareGroupCreated
from logwright.core.log.catalog import TopicState
from logwright.core.share_groups.share_groups import ShareGroupState

UNINITIALIZED = -1
"""Start offset and lag of a partition the group has no state for (Kafka's ``UNINITIALIZED_START_OFFSET``)."""


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    start_offset: int
    lag: int


def describe(cursor: CursorState | None, high_watermark: int) -> PartitionOffsets:
    """The SPSO and lag of one partition's cursor, or `UNINITIALIZED` for both without one."""
    if cursor is None:
        return PartitionOffsets(UNINITIALIZED, UNINITIALIZED)
    start = cursor.mark_delete_position + 1
    if start == UNINITIALIZED:  # AlterShareGroupOffsets to -1: Kafka 4.4 reads it back as uninitialized, lag too
        return PartitionOffsets(UNINITIALIZED, UNINITIALIZED)
    complete = sum(last - first + 1 for first, last in cursor.settled.ranges)
    return PartitionOffsets(start, _as_long(high_watermark - start - complete))


def _as_long(value: int) -> int:
    """``value`` wrapped into a Java long, as Kafka's lag arithmetic wraps: a start offset AlterShareGroupOffsets
    set to -2**63 gives, at high watermark 20, lag -2**63 + 20 in Kafka 4.4 (a Python int would not fit the field)."""
    return (value + 2**63) % 2**64 - 2**63


def check_admin(group_id: str, group: ShareGroupState | None, other_group: bool, must_exist: bool) -> None:
    """Whether the group's offsets may be altered (``must_exist=False``) or deleted; raises the refusal.
    ``other_group``: a classic or consumer group holds the id (one namespace)."""
    if not group_id:
        raise InvalidGroupId("the group id must not be empty")
    if group is None and other_group:
        raise UnknownGroup(f"group {quoted(group_id)} is not a share group")
    if group is None and must_exist:
        raise UnknownGroup(f"share group {quoted(group_id)} does not exist")
    if group is not None and group.members:
        raise NonEmptyGroup(f"share group {quoted(group_id)} has {len(group.members)} members; its offsets can change "
                            "only while it is empty")


def partition_id_of(topic_name: str, topic: TopicState | None, index: int) -> int:
    """The partition id of partition ``index``; `UnknownTopic`/`UnknownPartition` if there is none."""
    if topic is None:
        raise UnknownTopic(f"topic {quoted(topic_name)} does not exist")
    if not 0 <= index < len(topic.partition_ids):
        raise UnknownPartition(f"topic {quoted(topic_name)} has no partition {index}")
    return topic.partition_ids[index]


def alter(group_id: str, group: ShareGroupState | None, starts: Sequence[tuple[str, int, int]]) -> list[Event]:
    """Events that start each ``(topic, partition id, start offset)`` afresh, creating the group if needed.

    The caller has passed `check_admin` and resolved the partitions.
    """
    events: list[Event] = [] if group is not None else [ShareGroupCreated(group_id, "")]
    events.extend(SubscriptionCreated(group_id, partition_id, topic, start) for topic, partition_id, start in starts)
    return events


def delete(group_id: str, topic_name: str, topic: TopicState | None,
           cursor_of: Callable[[int], CursorState | None]) -> list[SubscriptionDeleted]:
    """Events that delete the group's state on every partition of the topic; refused if it has none."""
    if topic is None:
        raise UnknownTopic(f"topic {quoted(topic_name)} does not exist")
    events = [SubscriptionDeleted(group_id, partition_id) for partition_id in topic.partition_ids
              if cursor_of(partition_id) is not None]
    if not events:
        raise UnknownPartition(f"share group {quoted(group_id)} has no offsets on topic {quoted(topic_name)} to delete")
    return events
