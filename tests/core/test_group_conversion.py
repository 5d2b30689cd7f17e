"""`EmptyGroupConverted`: an empty group's id passes to the other protocol; the membership state of the protocol it
leaves goes, committed offsets stay (group ids are one namespace, tests/integration/test_group_id_namespace.py)."""

from __future__ import annotations

from logwright.core.consumer_groups.consumer_groups import CONSUMER_GROUPS, ConsumerGroupState
from logwright.core.events import EmptyGroupConverted, OffsetCommitted
from logwright.core.events.groups import CLASSIC, CONSUMER
from logwright.core.groups.group_offsets import GROUP_OFFSETS
from logwright.core.groups.groups import GROUPS, GroupPhase, GroupState
from logwright.core.projection import fold


def test_to_a_consumer_group_the_classic_state_goes() -> None:
    event = EmptyGroupConverted("g", CONSUMER)
    assert GROUPS.evolve(GroupState("g", generation=3, protocol_type="consumer"), event, "g") is None
    consumer = ConsumerGroupState("g")
    assert CONSUMER_GROUPS.evolve(consumer, event, "g") is consumer


def test_to_a_classic_group_the_consumer_state_goes_and_an_empty_classic_group_holds_the_id() -> None:
    event = EmptyGroupConverted("g", CLASSIC)
    assert CONSUMER_GROUPS.evolve(ConsumerGroupState("g"), event, "g") is None
    assert GROUPS.evolve(None, event, "g") == GroupState("g", phase=GroupPhase.EMPTY)
    existing = GroupState("g", generation=2)
    assert GROUPS.evolve(existing, event, "g") is existing


def test_committed_offsets_stay() -> None:
    commit = OffsetCommitted("g", "t", 0, 7)
    before = fold(GROUP_OFFSETS, [commit])
    assert before and fold(GROUP_OFFSETS, [commit, EmptyGroupConverted("g", CONSUMER),
                                           EmptyGroupConverted("g", CLASSIC)]) == before
    assert EmptyGroupConverted not in GROUP_OFFSETS.handles
