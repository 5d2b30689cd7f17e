"""Replay is the proof: refold the whole log with the core fold functions and compare with ``state``.

Used by `logwright check`; the Spark replay job does the same at scale with the same folds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from logwright.core.projection import fold

from .rocksdb import RocksEventStore


@dataclass(slots=True)
class CheckReport:
    events: int
    projections: int
    entities: int
    differences: list[str] = field(default_factory=list)
    total_differences: int | None = None
    """When only the first differences are kept (Spark replay), how many there were in all."""

    @property
    def consistent(self) -> bool:
        return not self.differences

    def summary(self) -> str:
        count = self.total_differences if self.total_differences is not None else len(self.differences)
        verdict = "consistent" if self.consistent else f"INCONSISTENT ({count} differences)"
        return f"{verdict}: {self.events} events, {self.projections} projections, {self.entities} entities"


def check_store(store: RocksEventStore, max_reported: int = 50) -> CheckReport:
    """Compare every projection rebuilt from the committed log with what ``state`` holds on disk."""
    events = [logged.event for logged in store.read_events()]
    stored: dict[str, dict[str, Any]] = {projection.name: {} for projection in store.projections}
    report = CheckReport(len(events), len(store.projections), 0)
    for projection_name, entity, _sequence, raw in store.stored_states():
        if projection_name not in stored:
            continue
        where = f"column family 'state' key {projection_name}/{entity}"
        stored[projection_name][entity] = store.types.decode(raw, where)
    for projection in store.projections:
        rebuilt = fold(projection, events)
        on_disk = stored[projection.name]
        report.entities += len(rebuilt)
        for entity in sorted(rebuilt.keys() | on_disk.keys()):
            difference = describe_difference(projection.name, entity, rebuilt.get(entity), on_disk.get(entity))
            if difference is not None:
                report.differences.append(difference)
    del report.differences[max_reported:]
    return report


def describe_difference(projection: str, entity: str, expected: Any, found: Any) -> str | None:
    """How a refolded entity differs from the stored one, or ``None``; `check` and Spark replay share it."""
    if expected == found:
        return None
    return f"{projection}/{entity}: replay gives {expected!r}, state holds {found!r}"
