"""`Projection.removed_by`: an event type that only deletes a projection's entities is folded into the entities the
store holds, not into every one it names (a topic's deletion names each of its partitions)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from logwright.core import CORE_PROJECTIONS
from logwright.core.clock import ManualClock
from logwright.core.events import Event, RecordsAppended, TopicDeleted
from logwright.core.projection import Projection
from logwright.eventstore.check import check_store
from logwright.eventstore.codec import TypeRegistry, default_registry
from logwright.eventstore.rocksdb import RocksEventStore

from .support import new_topic, produce


@dataclass(frozen=True, slots=True)
class Appends:
    count: int


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, RecordsAppended):
        return (str(event.partition_id),)
    if isinstance(event, TopicDeleted):
        return tuple(map(str, event.partition_ids))
    return ()


def _projection(asked: list[str], removed_by: frozenset[type[Event]]) -> Projection[Appends]:
    def evolve(state: Appends | None, event: Event, key: str) -> Appends | None:
        asked.append(key)
        if isinstance(event, TopicDeleted):
            return None
        return Appends((state.count if state else 0) + 1)

    return Projection("appends", _keys, evolve, frozenset({RecordsAppended, TopicDeleted}), removed_by=removed_by)


def _types() -> TypeRegistry:
    types = default_registry()
    types.register(Appends, 9_002)
    return types


def _delete_with(tmp_path: Path, removed_by: frozenset[type[Event]]) -> tuple[list[str], RocksEventStore]:
    asked: list[str] = []
    store = RocksEventStore(tmp_path / "store", clock=ManualClock(),
                            projections=(*CORE_PROJECTIONS, _projection(asked, removed_by)), types=_types())
    partition_ids = new_topic(store, "t", 100).partition_ids
    produce(store, partition_ids[7])
    produce(store, partition_ids[7])
    store.commit()
    asked.clear()
    store.append([TopicDeleted("t", b"\x00" * 16, tuple(partition_ids))])
    store.commit()
    return asked, store


def test_a_deletion_is_folded_into_the_held_entities_only(tmp_path: Path) -> None:
    asked, store = _delete_with(tmp_path, frozenset({TopicDeleted}))
    assert asked == ["7"], "one entity held (the first topic's partition ids start at 0), one evolve"
    assert dict(store.entities("appends")) == {} and dict(store.entities("partitions")) == {}
    assert check_store(store).consistent
    store.close()


def test_without_the_declaration_every_named_entity_is_asked(tmp_path: Path) -> None:
    asked, store = _delete_with(tmp_path, frozenset())
    assert len(asked) == 100
    assert dict(store.entities("appends")) == {}
    store.close()
