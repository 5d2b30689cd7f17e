"""Every kind of subscription as a backlog `Position`: the extension point for new kinds of subscription.

A `PositionSource` lists the positions it knows on one partition. The backlog plugin asks each source in
`POSITION_SOURCES` order; classic and KIP-848 groups (committed offsets, the ``group_offsets``
projection) and cursors (share groups and logwright subscriptions of every mode, the ``cursors``
projection) are built in. A new kind of subscription (the Pop mode's per-queue state, say) appends its
own source: nothing else of the backlog code changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from logwright.core.cursors.cursor import CursorState
from logwright.core.groups.group_offsets import GroupOffsets

from .backlog import Position


class PositionSource(Protocol):
    """Where one kind of subscription stands, read from its projection's states."""

    projection: str
    """The projection holding this kind's state (its commits are what move the backlog)."""

    def positions(self, states: Any, topic: str, partition_index: int, partition_id: int) -> Iterable[Position]:
        """The positions on ``partition_id`` (``partition_index`` of ``topic``) found in ``states``, the
        projection's entities (a mapping of entity key to state)."""
        ...


class CursorPositions:
    """Share groups and logwright subscriptions: the mark-delete position and the settled ranges above it."""

    projection = "cursors"

    def positions(self, states: Any, topic: str, partition_index: int, partition_id: int) -> Iterable[Position]:
        prefix = f"{partition_id}/"
        for key, state in states.items():
            if key.startswith(prefix) and isinstance(state, CursorState):
                yield from_cursor(state)


class GroupPositions:
    """Classic and KIP-848 consumer groups: the committed offset (the next record to read), nothing settled above."""

    projection = "group_offsets"

    def positions(self, states: Any, topic: str, partition_index: int, partition_id: int) -> Iterable[Position]:
        for group, state in states.items():
            if isinstance(state, GroupOffsets):
                committed = state.get(topic, partition_index)
                if committed is not None and committed.offset >= 0:
                    yield Position(group, "group", partition_id, committed.offset)


def from_cursor(state: CursorState) -> Position:
    return Position(state.subscription, "cursor", state.partition_id, state.mark_delete_position + 1, state.settled)


POSITION_SOURCES: list[PositionSource] = [GroupPositions(), CursorPositions()]
"""The kinds of subscription the backlog counts; append a source to count a new kind."""
