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
    "ACLS", "CLUSTER_NAME", "WILDCARD", "AclBinding", "AclIndex", "AclFilter", "AclOperation", "AclPermissionType",
    "PatternType", "ResourceType", "check_binding", "check_filter", "decide_delete", "deletion", "new_bindings",
    "select",
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


class AclIndex:
    """The stored bindings indexed by resource name, principal and host, so a filter naming one of them reads only
    the bindings that share it (the smallest such list), and a filter decided once serves every copy of it.

    DeleteAcls matched every filter against every ACL: 2,000 filters over 10,000 ACLs were 20 M matches, seconds on
    the event loop. A filter that names no string still reads every binding; such filters differ only by their
    enum fields, so a request holds at most a few thousand distinct ones."""

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        self._every = sorted(bindings, key=lambda binding: binding.key)
        self._by_name: dict[str, list[AclBinding]] = {}
        self._by_principal: dict[str, list[AclBinding]] = {}
        self._by_host: dict[str, list[AclBinding]] = {}
        for binding in self._every:
            self._by_name.setdefault(binding.resource_name, []).append(binding)
            self._by_principal.setdefault(binding.principal, []).append(binding)
            self._by_host.setdefault(binding.host, []).append(binding)
        self._prefix_lengths = sorted({len(binding.resource_name) for binding in self._every
                                       if binding.pattern_type == PatternType.PREFIXED})
        self._decided: dict[AclFilter, list[AclBinding]] = {}
        self.read = 0
        """Bindings read so far: what a caller that gives way between filters counts."""

    def matching(self, acl_filter: AclFilter) -> list[AclBinding]:
        """The bindings ``acl_filter`` matches, sorted by key (as `select`)."""
        found = self._decided.get(acl_filter)
        if found is None:
            candidates = self._candidates(acl_filter)
            self.read += len(candidates)
            found = self._decided[acl_filter] = sorted(
                (binding for binding in candidates if acl_filter.matches(binding)), key=lambda b: b.key)
        return found

    def _candidates(self, acl_filter: AclFilter) -> list[AclBinding]:
        lists: list[list[AclBinding]] = []
        if acl_filter.principal is not None:
            lists.append(self._by_principal.get(acl_filter.principal, []))
        if acl_filter.host is not None:
            lists.append(self._by_host.get(acl_filter.host, []))
        if acl_filter.resource_name is not None:
            lists.append(self._named(acl_filter.resource_name, acl_filter.pattern_type == PatternType.MATCH))
        return min(lists, key=len) if lists else self._every

    def _named(self, name: str, match: bool) -> list[AclBinding]:
        """The bindings a filter naming ``name`` may match: of that name, or for MATCH also the wildcard and the
        prefixes of ``name`` (looked up at the lengths prefixed bindings have)."""
        named = self._by_name.get(name, [])
        if not match:
            return named
        names = {name, WILDCARD} | {name[:length] for length in self._prefix_lengths if length < len(name)}
        return [binding for each in names for binding in self._by_name.get(each, ())]


def decide_delete(existing: Mapping[str, AclBinding] | AclIndex,
                  filters: Iterable[AclFilter]) -> tuple[list[list[AclBinding]], AclsDeleted | None]:
    """Each filter's matches (a binding two filters match is reported under both, removed once, as
    Kafka does) and the event removing them all; ``None`` when nothing matched."""
    index = existing if isinstance(existing, AclIndex) else AclIndex(existing.values())
    matched = [index.matching(acl_filter) for acl_filter in filters]
    return matched, deletion(matched)


def deletion(matched: Iterable[list[AclBinding]]) -> AclsDeleted | None:
    """The event removing every binding of ``matched`` once; ``None`` when there is none."""
    removed = {binding.key: binding for matches in matched for binding in matches}
    return AclsDeleted(tuple(removed.values())) if removed else None
