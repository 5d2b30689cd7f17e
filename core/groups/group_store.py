"""Where the group coordinator reads group state and stages group events.

The broker's store folds events into the ``groups`` projection as they are staged; `MemoryGroupStore`
does the same in memory with the same fold, for core tests and for checking that a refolded log
gives back the live state.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from logwright.core.events import Event
from logwright.core.groups.groups import GROUPS, GroupState


class GroupStore(Protocol):
    """Where group state is read and group events are staged (folded at once, written by group commit)."""

    def group(self, group_id: str) -> GroupState | None: ...

    def groups(self) -> Iterable[GroupState]: ...

    def stage(self, events: Sequence[Event]) -> None: ...


class MemoryGroupStore:
    """A `GroupStore` folding events in memory: the store of core tests and of refold checks."""

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self.events: list[Event] = []
        self._states: dict[str, GroupState] = {}
        self.stage(list(events))

    def group(self, group_id: str) -> GroupState | None:
        return self._states.get(group_id)

    def groups(self) -> Iterable[GroupState]:
        return list(self._states.values())

    def stage(self, events: Sequence[Event]) -> None:
        for event in events:
            self.events.append(event)
            for key in GROUPS.entity_keys(event):
                state = GROUPS.evolve(self._states.get(key), event, key)
                if state is None:
                    self._states.pop(key, None)
                else:
                    self._states[key] = state
