"""Share group offset administration over cursors: describe, alter and delete, no I/O."""

from __future__ import annotations

import pytest
from logwright.core.cursors.cursor import CURSORS, CursorState, cursor_key
from logwright.core.errors import InvalidGroupId, NonEmptyGroup, UnknownGroup, UnknownPartition, UnknownTopic
from logwright.core.events import Event
from logwright.core.events.cursors import (
    RecordsAcked,
    RecordsAcquired,
    RecordsReleased,
    SubscriptionCreated,
    SubscriptionDeleted,
)
from logwright.core.events.share_groups import ShareGroupCreated
from logwright.core.log.catalog import TopicState
from logwright.core.projection import fold
from logwright.core.share_groups import share_group_offsets as offsets
from logwright.core.share_groups.share_groups import SHARE_GROUPS, ShareGroupState, ShareMember

TOPIC = TopicState("orders", b"o" * 16, (7, 8))


def cursor(events: list[Event], partition_id: int = 7) -> CursorState | None:
    state = fold(CURSORS, events).get(cursor_key("g", partition_id))
    return state if isinstance(state, CursorState) else None


def test_describe_reports_the_start_offset_and_a_lag_that_leaves_out_settled_records() -> None:
    events: list[Event] = [SubscriptionCreated("g", 7, "orders", 8),
                           RecordsAcquired("g", 7, "m", ((8, 19),), 1_000),
                           RecordsAcked("g", 7, "m", ((10, 11),)),
                           RecordsReleased("g", 7, "m", ((8, 9), (12, 19)))]
    assert offsets.describe(cursor(events), high_watermark=20) == offsets.PartitionOffsets(8, 10)
    events.append(RecordsAcked("g", 7, "m", ((8, 9),)))
    assert offsets.describe(cursor(events), high_watermark=20) == offsets.PartitionOffsets(12, 8)
    assert offsets.describe(None, high_watermark=20) == offsets.PartitionOffsets(-1, -1)


def test_alter_starts_the_partition_afresh_and_creates_a_missing_group() -> None:
    history: list[Event] = [SubscriptionCreated("g", 7, "orders", 0), RecordsAcquired("g", 7, "m", ((0, 4),), 1_000),
                            RecordsReleased("g", 7, "m", ((0, 4),)), RecordsAcked("g", 7, "m", ((6, 6),))]
    events = offsets.alter("g", None, [("orders", 7, 3)])
    assert events == [ShareGroupCreated("g", ""), SubscriptionCreated("g", 7, "orders", 3)]
    assert cursor([*history, *events]) == CursorState("g", "orders", 7, 2)
    assert fold(SHARE_GROUPS, events) == {"g": ShareGroupState("g")}
    assert offsets.alter("g", ShareGroupState("g"), []) == []


def test_only_an_empty_share_group_may_change_its_offsets() -> None:
    member = ShareMember("m", "client", "/127.0.0.1", None, ("orders",))
    with pytest.raises(InvalidGroupId):
        offsets.check_admin("", None, other_group=False, must_exist=False)
    with pytest.raises(UnknownGroup, match="not a share group"):
        offsets.check_admin("g", None, other_group=True, must_exist=False)
    with pytest.raises(UnknownGroup, match="does not exist"):
        offsets.check_admin("g", None, other_group=False, must_exist=True)
    with pytest.raises(NonEmptyGroup):
        offsets.check_admin("g", ShareGroupState("g", members=(member,)), other_group=False, must_exist=False)
    offsets.check_admin("g", None, other_group=False, must_exist=False)
    offsets.check_admin("g", ShareGroupState("g"), other_group=False, must_exist=True)


def test_delete_removes_every_partition_with_state_and_refuses_a_topic_without_any() -> None:
    states = {7: CursorState("g", "orders", 7, 4)}
    assert offsets.delete("g", "orders", TOPIC, states.get) == [SubscriptionDeleted("g", 7)]
    with pytest.raises(UnknownPartition, match="no offsets"):
        offsets.delete("g", "orders", TOPIC, {}.get)
    with pytest.raises(UnknownTopic):
        offsets.delete("g", "gone", None, states.get)


def test_partitions_are_resolved_by_index() -> None:
    assert offsets.partition_id_of("orders", TOPIC, 1) == 8
    with pytest.raises(UnknownPartition):
        offsets.partition_id_of("orders", TOPIC, 2)
    with pytest.raises(UnknownTopic):
        offsets.partition_id_of("gone", None, 0)
