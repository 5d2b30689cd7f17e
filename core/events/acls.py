"""ACL events (tags 80-87) and the ``acls`` projection: one entity per binding, keyed by `AclBinding.key`.

CreateAcls and DeleteAcls each record one event naming the bindings they added or removed, so the log
says who could do what at any sequence, and a restarted broker serves the same ACLs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from logwright.core.acls.acls import AclBinding, AclFilter, select
from logwright.core.events import Event
from logwright.core.projection import Projection


@dataclass(frozen=True, slots=True)
class AclsCreated(Event):
    """New bindings (none of them stored before)."""

    TAG: ClassVar[int] = 80
    bindings: tuple[AclBinding, ...]


@dataclass(frozen=True, slots=True)
class AclsDeleted(Event):
    """Stored bindings removed by DeleteAcls filters."""

    TAG: ClassVar[int] = 81
    bindings: tuple[AclBinding, ...]


ACL_EVENT_TYPES: tuple[type[Event], ...] = (AclsCreated, AclsDeleted)


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, AclsCreated | AclsDeleted):
        return tuple(binding.key for binding in event.bindings)
    return ()


def _evolve(state: AclBinding | None, event: Event, key: str) -> AclBinding | None:
    if isinstance(event, AclsCreated):
        return next((binding for binding in event.bindings if binding.key == key), state)
    if isinstance(event, AclsDeleted):
        return None
    return state


ACLS: Projection[AclBinding] = Projection("acls", _keys, _evolve, frozenset(ACL_EVENT_TYPES))


def decide_delete(existing: Mapping[str, AclBinding],
                  filters: Iterable[AclFilter]) -> tuple[list[list[AclBinding]], AclsDeleted | None]:
    """Each filter's matches (a binding two filters match is reported under both, removed once, as
    Kafka does) and the event removing them all; ``None`` when nothing matched."""
    matched = [select(existing.values(), acl_filter) for acl_filter in filters]
    removed = {binding.key: binding for matches in matched for binding in matches}
    return matched, (AclsDeleted(tuple(removed.values())) if removed else None)
