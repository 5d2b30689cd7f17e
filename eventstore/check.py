"""Replay is the proof: refold the whole log with the core fold functions and compare with ``state``.

Used by `logwright check`; the Spark replay job does the same at scale with the same folds, `ENTITY_CHECKS`
included (the backlog quotas' check, which reads stored batches, runs in `check` only).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from logwright.core.events import Event, LogTruncated, TopicDeleted
from logwright.core.events.transactions import TransactionMarkerWritten
from logwright.core.projection import Projection

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


class StoreCheck(Protocol):
    """A check beside the projections' (the backlog quotas': `logwright.compat.backlog_check`): its scratch fold
    runs in the same pass over the log, then it compares what it folded with the store itself."""

    def projection(self, stored: Mapping[str, Mapping[str, Any]]) -> Projection[Any]:
        """The fold to run over the log, given every projection's stored states; never written."""
        ...

    def differences(self, store: RocksEventStore, rebuilt: Mapping[str, Mapping[str, Any]],
                    stored: Mapping[str, Mapping[str, Any]]) -> list[str]:
        """What differs, given the refolded states (its own fold's included) and the stored ones."""
        ...


class EntityCheck(Protocol):
    """A check compared entity by entity, as a projection is: its fold's entities against what it reads of the
    store. Spark replay runs these too (`ENTITY_CHECKS`): its tasks fold the entities and compare each with what
    the driver read from the same secondary instance as the stored states."""

    NAME: str

    def projection(self, stored: Mapping[str, Mapping[str, Any]]) -> Projection[Any]:
        ...

    def stored_entities(self, store: RocksEventStore) -> dict[str, Any]:
        """What the store holds of each entity the fold gives (the value the fold should give)."""
        ...

    def difference(self, entity: str, expected: Any, found: Any) -> str | None:
        """How the folded ``expected`` differs from the stored ``found`` (either ``None`` when absent)."""
        ...


class AbortedIndexCheck:
    """The store's index of aborted transactions (`RocksEventStore.aborted`) against the events it is written from:
    each indexed ABORT marker's row, less those below a later log start and those of deleted topics. Entities are
    partitions (their ids as text), each a list of (marker offset, producer id, first offset, last stable offset)."""

    NAME = "check:aborted-index"

    def projection(self, stored: Mapping[str, Mapping[str, Any]]) -> Projection[Any]:
        return Projection(name=self.NAME, entity_keys=_aborted_keys, evolve=_evolve_aborted,
                          handles=frozenset({TransactionMarkerWritten, LogTruncated, TopicDeleted}))

    def stored_entities(self, store: RocksEventStore) -> dict[str, Any]:
        found: dict[str, list[tuple[int, int, int, int]]] = {}
        for partition_id, producer_id, first_offset, marker_offset, last_stable_offset in store.aborted_rows():
            found.setdefault(str(partition_id), []).append((marker_offset, producer_id, first_offset,
                                                            last_stable_offset))
        return found

    def difference(self, entity: str, expected: Any, found: Any) -> str | None:
        if (expected or []) == (found or []):
            return None
        return (f"aborted-transaction index of partition {entity}: the events give {expected!r}, "
                f"the index holds {found!r}")


ENTITY_CHECKS: tuple[EntityCheck, ...] = (AbortedIndexCheck(),)
"""The checks `check_store` always runs and Spark replay runs too."""


def entity_differences(check: EntityCheck, expected: Mapping[str, Any], found: Mapping[str, Any]) -> list[str]:
    """Every entity of either side that differs, in entity order."""
    return [difference for entity in sorted(expected.keys() | found.keys())
            if (difference := check.difference(entity, expected.get(entity), found.get(entity))) is not None]


def _aborted_keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, TransactionMarkerWritten):
        return (str(event.partition_id),) if event.indexed_abort else ()
    if isinstance(event, LogTruncated):
        return (str(event.partition_id),)
    if isinstance(event, TopicDeleted):
        return tuple(str(partition_id) for partition_id in event.partition_ids)
    return ()


def _evolve_aborted(state: list[tuple[int, int, int, int]] | None, event: Event, key: str
                    ) -> list[tuple[int, int, int, int]] | None:
    """(marker, producer id, first offset, last stable offset) in marker order; a list grown in place (a scratch
    fold, never written)."""
    if isinstance(event, TransactionMarkerWritten):
        rows = state if state is not None else []
        rows.append((event.offset, event.producer_id, event.first_offset, event.last_stable_offset))
        return rows
    if isinstance(event, LogTruncated) and state is not None:
        del state[:bisect_left(state, (event.log_start_offset,))]
        return state or None
    if isinstance(event, TopicDeleted):
        return None
    return state


def check_store(store: RocksEventStore, max_reported: int = 50, checks: Sequence[StoreCheck] = ()) -> CheckReport:
    """Compare every projection rebuilt from the committed log with what ``state`` holds on disk, then run
    ``checks`` (`ENTITY_CHECKS` always)."""
    checks = (*(_AsStoreCheck(check) for check in ENTITY_CHECKS), *checks)
    stored: dict[str, dict[str, Any]] = {projection.name: {} for projection in store.projections}
    for projection_name, entity, _sequence, raw in store.stored_states():
        if projection_name not in stored:
            continue
        where = f"column family 'state' key {projection_name}/{entity}"
        stored[projection_name][entity] = store.types.decode(raw, where)
    extra = [check.projection(stored) for check in checks]
    event_count, rebuilt = refold((*store.projections, *extra), (logged.event for logged in store.read_events()))
    report = CheckReport(event_count, len(store.projections), 0)
    for projection in store.projections:
        states, on_disk = rebuilt[projection.name], stored[projection.name]
        report.entities += len(states)
        for entity in sorted(states.keys() | on_disk.keys()):
            difference = describe_difference(projection.name, entity, states.get(entity), on_disk.get(entity),
                                             projection.empty)
            if difference is not None:
                report.differences.append(difference)
    for check in checks:
        report.differences.extend(check.differences(store, rebuilt, stored))
    report.differences.extend(store.broken_batch_pointers(max_reported))
    del report.differences[max_reported:]
    return report


class _AsStoreCheck:
    """An `EntityCheck` run by `check_store` as its other checks are."""

    def __init__(self, check: EntityCheck) -> None:
        self._check = check

    def projection(self, stored: Mapping[str, Mapping[str, Any]]) -> Projection[Any]:
        return self._check.projection(stored)

    def differences(self, store: RocksEventStore, rebuilt: Mapping[str, Mapping[str, Any]],
                    stored: Mapping[str, Mapping[str, Any]]) -> list[str]:
        return entity_differences(self._check, rebuilt[self._check.NAME], self._check.stored_entities(store))


_Fold = tuple[Callable[[Event], tuple[str, ...]], Callable[[Any, Event, str], Any], dict[str, Any]]


def refold(projections: Iterable[Projection[Any]], events: Iterable[Event]) -> tuple[int, dict[str, dict[str, Any]]]:
    """How many events there were, and every projection's entities folded from nothing (as `projection.fold`
    folds each), in one pass over ``events``: each event goes only to the projections that may fold its type,
    and none is kept after its turn (at 10 M events a list of them all cost gigabytes and most of the time)."""
    rebuilt: dict[str, dict[str, Any]] = {}
    folds: list[tuple[Projection[Any], _Fold]] = []
    for projection in projections:
        states = rebuilt[projection.name] = {}
        folds.append((projection, (projection.entity_keys, projection.evolve, states)))
    by_type: dict[type[Event], list[_Fold]] = {}
    count = 0
    for event in events:
        count += 1
        event_type = type(event)
        wanted = by_type.get(event_type)
        if wanted is None:
            wanted = by_type[event_type] = [fold for projection, fold in folds if projection.may_fold(event_type)]
        for entity_keys, evolve, states in wanted:
            for key in entity_keys(event):
                new_state = evolve(states.get(key), event, key)
                if new_state is None:
                    states.pop(key, None)
                else:
                    states[key] = new_state
    return count, rebuilt


def describe_difference(projection: str, entity: str, expected: Any, found: Any,
                        empty: Callable[[str], Any] | None = None) -> str | None:
    """How a refolded entity differs from the stored one, or ``None``; `check` and Spark replay share it. With the
    projection's ``empty``, a missing entity and one in that state are the same (`Projection.empty`)."""
    if expected == found:
        return None
    if empty is not None and (found if expected is None else expected) == empty(entity) and None in (expected, found):
        return None
    return f"{projection}/{entity}: replay gives {expected!r}, state holds {found!r}"
