"""ACL events (tags 80-81): CreateAcls and DeleteAcls each record one event naming the bindings they added or
removed, so the log says who could do what at any sequence, and a restarted broker serves the same ACLs.

The ``acls`` projection folding them is `core.acls.acls.ACLS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.acls.bindings import AclBinding
from logwright.core.events.base import Event


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
