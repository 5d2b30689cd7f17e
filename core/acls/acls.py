"""The ``acls`` projection (one entity per binding, keyed by `AclBinding.key`) and the DeleteAcls decision.

The binding and filter types live in `core.acls.bindings`, which the ACL events import; they are
re-exported here so callers keep one import for everything about ACLs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from logwright.core.acls.bindings import (
    CLUSTER_NAME,
    WILDCARD,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    check_binding,
    check_filter,
    new_bindings,
    select,
)
from logwright.core.events.acls import ACL_EVENT_TYPES, AclsCreated, AclsDeleted
from logwright.core.events.base import Event
from logwright.core.projection import Projection

__all__ = [
    "ACLS", "CLUSTER_NAME", "WILDCARD", "AclBinding", "AclFilter", "AclOperation", "AclPermissionType",
    "PatternType", "ResourceType", "check_binding", "check_filter", "decide_delete", "new_bindings", "select",
]


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, AclsCreated | AclsDeleted):
        return tuple(binding.key for binding in event.bindings)
    return ()


_created: list[tuple[AclsCreated, dict[str, AclBinding]]] = []
"""The last `AclsCreated` folded and its bindings by key: the fold asks once per binding of the event, and a
search of the event's bindings for each made a CreateAcls of 4,000 ACLs take 1.5 s."""


def _binding_created(event: AclsCreated, key: str) -> AclBinding | None:
    if not _created or _created[0][0] is not event:
        _created[:] = [(event, {binding.key: binding for binding in event.bindings})]
    return _created[0][1].get(key)


def _evolve(state: AclBinding | None, event: Event, key: str) -> AclBinding | None:
    if isinstance(event, AclsCreated):
        return _binding_created(event, key) or state
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
