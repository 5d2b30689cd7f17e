"""`fold`: entities evolve independently, ``None`` removes, events that name no entity are ignored."""

from __future__ import annotations

from logwright.core.events import Event, GroupDeleted, OffsetCommitted, OffsetDeleted
from logwright.core.projection import Projection, fold, fold_entity


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, OffsetCommitted):
        return (event.group, f"topic:{event.topic}")
    if isinstance(event, GroupDeleted):
        return (event.group,)
    return ()


def _evolve(state: int | None, event: Event, key: str) -> int | None:
    if isinstance(event, GroupDeleted):
        return None
    return (state or 0) + 1


COUNTS: Projection[int] = Projection("counts", _keys, _evolve)


def test_folding_nothing_gives_no_entities() -> None:
    assert fold(COUNTS, []) == {}


def test_each_named_entity_evolves_from_its_own_state() -> None:
    events = [OffsetCommitted("a", "t", 0, 1), OffsetCommitted("b", "t", 0, 1), OffsetCommitted("a", "u", 0, 1)]
    assert fold(COUNTS, events) == {"a": 2, "b": 1, "topic:t": 2, "topic:u": 1}


def test_a_state_of_none_removes_the_entity_and_it_may_come_back() -> None:
    assert fold(COUNTS, [OffsetCommitted("a", "t", 0, 1), GroupDeleted("a")]) == {"topic:t": 1}
    assert fold(COUNTS, [OffsetCommitted("a", "t", 0, 1), GroupDeleted("a"), OffsetCommitted("a", "t", 0, 1)]) == {
        "a": 1,
        "topic:t": 2,
    }


def test_none_for_an_absent_entity_is_harmless() -> None:
    assert fold(COUNTS, [GroupDeleted("nobody")]) == {}


def test_events_that_name_no_entity_are_ignored() -> None:
    assert fold(COUNTS, [OffsetDeleted("a", "t", 0)]) == {}


def test_fold_accepts_any_iterable_once() -> None:
    assert fold(COUNTS, (OffsetCommitted("a", "t", 0, n) for n in range(3))) == {"a": 3, "topic:t": 3}


def test_the_evolve_function_receives_the_entity_key() -> None:
    seen: list[str] = []
    projection: Projection[str] = Projection("keys", _keys, lambda state, event, key: seen.append(key) or key)
    assert fold(projection, [OffsetCommitted("a", "t", 0, 1)]) == {"a": "a", "topic:t": "topic:t"}
    assert seen == ["a", "topic:t"]


def test_folding_one_entity_from_only_its_events_matches_the_whole_fold() -> None:
    """What Spark replay relies on: an entity's state depends only on the events that name it."""
    events = [OffsetCommitted("a", "t", 0, 1), OffsetCommitted("b", "t", 0, 1), GroupDeleted("a"),
              OffsetCommitted("a", "u", 0, 2), OffsetCommitted("b", "u", 0, 3), GroupDeleted("b")]
    whole = fold(COUNTS, events)
    for entity in ("a", "b", "topic:t", "topic:u"):
        named = [event for event in events if entity in _keys(event)]
        assert fold_entity(COUNTS, entity, named) == whole.get(entity)
    assert whole == {"a": 1, "topic:t": 2, "topic:u": 2}
