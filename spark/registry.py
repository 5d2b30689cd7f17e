"""The one place Spark learns which projections and types exist: the plugin host.

`logwright replay` must refold exactly what the broker folds, including projections that plugins
register, so both the driver and every task ask `PluginHost` (core projections first, then the
plugins', with their event and state types in the codec). Tasks call this again on the executor
rather than receiving the objects, because projections hold functions and the codec holds a packer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from logwright.core.projection import Projection
from logwright.eventstore.codec import TypeRegistry


@dataclass(frozen=True, slots=True)
class ReplaySetup:
    projections: tuple[Projection[Any], ...]
    types: TypeRegistry

    @property
    def by_name(self) -> Mapping[str, Projection[Any]]:
        return {projection.name: projection for projection in self.projections}


@lru_cache(maxsize=1)
def replay_setup() -> ReplaySetup:
    """Core and plugin projections with a codec that knows all their types (cached per process)."""
    from logwright.plugins.host import PluginHost

    host = PluginHost.load()
    return ReplaySetup(host.projections(), host.type_registry())
