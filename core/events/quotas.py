"""Client quota events (tag 121): AlterClientQuotas records one event naming every entity it changed, so the log
says which quotas held at any sequence and a restarted broker enforces the same ones.

The ``client_quotas`` projection folding it is `core.quotas.client_quotas.CLIENT_QUOTAS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from logwright.core.events.base import Event
from logwright.core.quotas.entities import QuotaAlteration


@dataclass(frozen=True, slots=True)
class ClientQuotasAltered(Event):
    """Each alteration's keys set and removed (an entity left without keys is gone)."""

    TAG: ClassVar[int] = 121
    alterations: tuple[QuotaAlteration, ...]


QUOTA_EVENT_TYPES: tuple[type[Event], ...] = (ClientQuotasAltered,)
