"""What the share group offset APIs (keys 90-92) share: the group checks and cursor lookups.

The decisions are `core.share_group_offsets`; this module reads what they need from the broker.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from logwright.compat.broker import Broker
from logwright.compat.coordinators.share_coordinator import share_coordinator
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import make
from logwright.core.cursors.cursor import CursorState, cursor_key
from logwright.core.share_groups.share_group_offsets import check_admin
from logwright.core.share_groups.share_groups import ShareGroupState

LEADER_EPOCH = 0
"""One broker that never changes leader: every share-partition reports epoch 0, as a fresh Kafka does."""


def admin_group(broker: Broker, group_id: str, must_exist: bool) -> ShareGroupState | None:
    """The share group whose offsets are to change, after `check_admin` (which raises the refusal)."""
    coordinator = share_coordinator(broker)
    group = coordinator.group(group_id)
    check_admin(group_id, group, group is None and coordinator.held_by_other_kind(group_id), must_exist)
    return group


def cursors_of(broker: Broker, group_id: str) -> Callable[[int], CursorState | None]:
    """Partition id → the group's cursor on it, if it has one."""

    def cursor_of(partition_id: int) -> CursorState | None:
        state = broker.store.state("cursors", cursor_key(group_id, partition_id))
        return state if isinstance(state, CursorState) else None

    return cursor_of


def answer(response_type: type[Any], code: ErrorCode, message: str | None, topics: tuple[Any, ...] = ()) -> Any:
    """An Alter/DeleteShareGroupOffsets response: the top-level error (or none) and each topic's results."""
    return make(response_type, throttle_time=datetime.timedelta(0), error_code=code, error_message=message,
                responses=topics)
