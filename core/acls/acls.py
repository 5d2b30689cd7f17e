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
