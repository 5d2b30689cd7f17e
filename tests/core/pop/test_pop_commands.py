"""Pop decisions, given events, when a command, then events: checkpoints, acks, changes, nacks, revivals."""

from __future__ import annotations

import pytest
from hypothesis import given as for_all
from hypothesis import settings
from hypothesis import strategies as st
from logwright.core.errors import InvalidRequest
from logwright.core.events import Event
from logwright.core.events.pop import (
    CheckpointAcked,
    CheckpointCreated,
    InvisibleTimeChanged,
    PopCursorCreated,
    PopCursorDeleted,
    PopDelayed,
    PopEntriesDropped,
    PopNacked,
    PopPositionMoved,
    Revived,
)
from logwright.core.pop import pop_commands
from logwright.core.pop.inflight import PopEntry, PopPartition, pop_key, tables_in
from logwright.core.pop.inflight_fold import POP_INFLIGHT
from logwright.core.pop.pop_commands import PopLimits
from logwright.core.pop.receipt_handle import StaleReceiptHandle, UnknownReceiptHandle
from logwright.core.projection import fold

LIMITS = PopLimits(max_messages=32, invisible_time_ms=60_000)


def given(*events: Event, partition_id: int = 7) -> PopPartition:
    states = fold(POP_INFLIGHT, (PopCursorCreated("g", partition_id, "t", 0), *events))
    state = tables_in(states).get(pop_key("g", partition_id))
    assert isinstance(state, PopPartition)
    return state


def popped(offsets: tuple[int, ...], epoch: int, at: int = 0, next_offset: int | None = None) -> CheckpointCreated:
    return CheckpointCreated("g", 7, "c1", offsets, next_offset if next_offset is not None else max(offsets) + 1,
                             at, 60_000, epoch)


def test_a_pop_takes_a_new_epoch_and_moves_the_position_past_gaps() -> None:
    state = given()
    event = pop_commands.checkpoint(state, "c1", (0, 1, 3), 5, 1_000, LIMITS)
    assert event == CheckpointCreated("g", 7, "c1", (0, 1, 3), 5, 1_000, 60_000, 1)
    after = given(event)
    assert [(e.offset, e.deliveries, e.epoch, e.invisible_until_ms) for e in after.entries] == [
        (0, 1, 1, 61_000), (1, 1, 1, 61_000), (3, 1, 1, 61_000)]
    assert after.next_offset == 5 and after.consumed_offset() == 0


def test_an_in_flight_offset_cannot_be_popped_twice() -> None:
    state = given(popped((0,), 1))
    with pytest.raises(ValueError):
        pop_commands.checkpoint(state, "c2", (0,), 1, 2_000, LIMITS)


def test_limits_refuse_what_rocketmq_refuses() -> None:
    with pytest.raises(InvalidRequest, match="max_messages must be 1 to 32"):
        PopLimits(33, 60_000)
    with pytest.raises(InvalidRequest, match="10 s"):
        PopLimits(1, 5_000)
    with pytest.raises(InvalidRequest, match="12 h"):
        PopLimits(1, 12 * 3_600_000 + 1)
    with pytest.raises(InvalidRequest, match="20 s"):
        PopLimits(1, 60_000, long_poll_ms=20_001)


def test_ack_settles_only_the_current_handle() -> None:
    state = given(popped((0, 1), 1))
    assert pop_commands.ack(state, "c1", [(0, 1)]) == CheckpointAcked("g", 7, "c1", ((0, 1),))
    after = given(popped((0, 1), 1), CheckpointAcked("g", 7, "c1", ((0, 1),)))
    assert [e.offset for e in after.entries] == [1]
    with pytest.raises(UnknownReceiptHandle, match="acknowledged"):
        pop_commands.ack(after, "c1", [(0, 1)])
    with pytest.raises(UnknownReceiptHandle, match="never popped"):
        pop_commands.ack(after, "c1", [(9, 1)])


def test_change_then_ack_with_the_old_handle_is_stale_and_the_record_stays() -> None:
    state = given(popped((0,), 1))
    change = pop_commands.change_invisible_time(state, "c1", 0, 1, 5_000, 30_000)
    assert change == InvisibleTimeChanged("g", 7, "c1", 0, 1, 2, 35_000)
    after = given(popped((0,), 1), change)
    with pytest.raises(StaleReceiptHandle, match="under handle epoch 2, not 1"):
        pop_commands.ack(after, "c1", [(0, 1)])
    with pytest.raises(StaleReceiptHandle):
        pop_commands.change_invisible_time(after, "c1", 0, 1, 6_000, 30_000)
    entry = after.entry(0)
    assert entry is not None and entry.invisible_until_ms == 35_000 and entry.deliveries == 1
    assert given(popped((0,), 1), change, pop_commands.ack(after, "c1", [(0, 2)])).entries == ()


def test_change_invisible_time_is_bounded_by_12_hours() -> None:
    with pytest.raises(InvalidRequest, match="12 h"):
        pop_commands.change_invisible_time(given(popped((0,), 1)), "c1", 0, 1, 0, 12 * 3_600_000 + 1)


def test_revive_is_deadline_le_now_and_the_next_pop_counts_one_more_reconsume() -> None:
    state = given(popped((0, 1), 1, at=0))
    assert pop_commands.revive(state, 59_999, 16) == (None, ())
    revived, exhausted = pop_commands.revive(state, 60_000, 16)
    assert revived == Revived("g", 7, (0, 1), 60_000) and exhausted == ()
    after = given(popped((0, 1), 1), revived)
    with pytest.raises(StaleReceiptHandle, match="revived"):
        pop_commands.change_invisible_time(after, "c1", 0, 1, 60_000, 10_000)
    again = pop_commands.checkpoint(after, "c2", (0,), after.next_offset, 61_000, LIMITS)
    assert again is not None and again.epoch == 2
    entry = given(popped((0, 1), 1), revived, again).entry(0)
    assert entry is not None and (entry.reconsume_times, entry.epoch, entry.visible) == (1, 2, False)


def test_an_ack_of_a_revived_record_not_yet_popped_again_settles_it() -> None:
    history: list[Event] = [popped((0,), 1), Revived("g", 7, (0,), 60_000)]
    assert given(*history, pop_commands.ack(given(*history), "c1", [(0, 1)])).entries == ()


def test_due_revivals_come_oldest_deadline_first_across_partitions() -> None:
    a = PopPartition.of_entries("g", 1, "t", 10, 3, (PopEntry(4, 1, 1, 500, True), PopEntry(6, 1, 1, 100, True)))
    b = PopPartition.of_entries("g", 2, "t", 10, 3, (PopEntry(2, 1, 1, 300, True), PopEntry(3, 1, 1, 900, True)))
    chosen = pop_commands.due_revivals([a, b], 3)
    assert chosen == [(0, (4, 6)), (1, (2,))], "by position in the states given"


def test_the_start_partition_rotates() -> None:
    assert pop_commands.rotated(4, 1) == [1, 2, 3, 0]
    assert pop_commands.rotated(4, 6) == [2, 3, 0, 1]
    assert pop_commands.rotated(0, 3) == []


def test_a_nack_waits_its_level_then_revives_and_the_seventeenth_failure_dead_letters() -> None:
    events: list[Event] = [popped((0,), 1, at=0)]
    now = 0
    for attempt in range(1, 18):
        state = given(*events)
        entry = state.entry(0)
        assert entry is not None and entry.deliveries == attempt
        nacked = pop_commands.nack(state, "c1", 0, entry.epoch, now, 1_000)
        assert isinstance(nacked, PopNacked) and nacked.invisible_until_ms == now + 1_000
        events.append(nacked)
        now += 1_000
        revived, exhausted = pop_commands.revive(given(*events), now, 16)
        if attempt < 17:
            assert revived is not None and exhausted == ()
            events.append(revived)
            state = given(*events)
            repop = pop_commands.checkpoint(state, "c1", (0,), state.next_offset, now, LIMITS)
            assert repop is not None
            events.append(repop)
        else:
            assert revived is None and [e.deliveries for e in exhausted] == [17]
            final = pop_commands.dead_lettered(given(*events), exhausted, now, "%DLQ%g", 99, 0)
            assert given(*events, final).entries == ()


def test_orderly_pop_waits_for_the_partition() -> None:
    assert pop_commands.orderly_blocked(given(popped((0,), 1)))
    assert not pop_commands.orderly_blocked(given(popped((0,), 1), Revived("g", 7, (0,), 60_000)))
    assert not pop_commands.orderly_blocked(given())


def test_a_deleted_partitions_table_is_gone() -> None:
    """The coordinator drops the entries (their page rows) with the head: no row of the table stays."""
    events: list[Event] = [PopCursorCreated("g", 7, "t", 0), popped((0, 300), 1),
                           PopEntriesDropped("g", 7, ((0, 511),), "topic deleted", 5),
                           PopCursorDeleted("g", 7, "topic deleted")]
    assert len(fold(POP_INFLIGHT, events[:2])) == 3, "a head and two pages"
    assert fold(POP_INFLIGHT, events) == {}


def test_a_delayed_record_waits_in_the_table_until_due_then_is_popped_as_a_first_delivery() -> None:
    state = given(popped((0, 2), 1, next_offset=3))
    assert pop_commands.delayed(state, [(1, 5_000)], 100) is None, "below the position: never parked"
    parked = given(PopDelayed("g", 7, ((1, 5_000),), 100), popped((0, 2), 1, next_offset=3))
    assert pop_commands.delayed(given(), [(1, 5_000), (4, 6_000)], 100) == PopDelayed(
        "g", 7, ((1, 5_000), (4, 6_000)), 100)
    assert parked.entry(1) == PopEntry(1, 0, 0, 5_000) and parked.next_deadline() == 5_000
    with pytest.raises(UnknownReceiptHandle, match="delayed until 5000"):
        pop_commands.ack(parked, "c1", [(1, 0)])  # a forged epoch-0 handle settles nothing
    revived, exhausted = pop_commands.revive(parked, 4_999, 0)
    assert revived is None and exhausted == ()
    revived, exhausted = pop_commands.revive(parked, 5_000, 0)
    assert revived == Revived("g", 7, (1,), 5_000) and exhausted == (), "no delivery failed: never dead-lettered"
    again = pop_commands.checkpoint(given(PopDelayed("g", 7, ((1, 5_000),), 100), revived), "c1", (1,), 0, 5_000,
                                    LIMITS)
    assert again is not None
    after = given(PopDelayed("g", 7, ((1, 5_000),), 100), revived, again)
    entry = after.entry(1)
    assert entry is not None and (entry.deliveries, entry.reconsume_times) == (1, 0)


def test_a_reset_drops_everything_in_flight_and_an_eviction_only_what_is_below() -> None:
    """F41's reset puts the position anywhere and drops every entry (those at or above it are popped afresh); an
    eviction drops the entries below its offset, keeps the others and never moves the position back."""
    checkpoint = popped((0, 1, 2, 300), 1, next_offset=301)
    state = given(checkpoint)
    reset = pop_commands.reset(state, 5, 9, "admin reset to offset 5")
    assert reset == [PopEntriesDropped("g", 7, ((0, 511),), "admin reset to offset 5", 9),
                     PopPositionMoved("g", 7, 5, "admin reset to offset 5", 9)]
    after = given(checkpoint, *reset)
    assert (after.entries, after.next_offset) == ((), 5)
    rows = fold(POP_INFLIGHT, (PopCursorCreated("g", 7, "t", 0), checkpoint, *reset))
    assert list(rows) == [pop_key("g", 7)], "the page rows go with the entries"
    assert pop_commands.reset(given(), 0, 9, "r") == [PopPositionMoved("g", 7, 0, "r", 9)]

    evicted = pop_commands.evict(state, 2, 9, "evicted")
    assert evicted == [PopEntriesDropped("g", 7, ((0, 1),), "evicted", 9)], "the position 301 is past 2"
    rows = fold(POP_INFLIGHT, (PopCursorCreated("g", 7, "t", 0), checkpoint,
                               *pop_commands.evict(state, 400, 9, "evicted")))
    assert list(rows) == [pop_key("g", 7)], "no page row and no page in the head's list stays"
    after = given(checkpoint, *evicted)
    assert ([e.offset for e in after.entries], after.next_offset) == ([2, 300], 301)
    far = pop_commands.evict(state, 400, 9, "evicted")
    assert far == [PopEntriesDropped("g", 7, ((0, 511),), "evicted", 9),
                   PopPositionMoved("g", 7, 400, "evicted", 9)], "nothing at or above 400: whole pages"
    assert pop_commands.evict(given(popped((0, 1, 300, 301), 1)), 301, 9, "evicted")[0] == PopEntriesDropped(
        "g", 7, ((0, 255), (256, 300)), "evicted", 9), "page 1 keeps 301: dropped below the cut only"
    assert (given(checkpoint, *far).entries, given(checkpoint, *far).next_offset) == ((), 400)
    assert pop_commands.evict(given(), 0, 9, "evicted") == []


def _due_by_expanding(states: list[PopPartition], limit: int) -> list[tuple[int, tuple[int, ...]]]:
    """`due_revivals` as first written: every revived record expanded and sorted. The runs must choose the same."""
    waiting = sorted(((entry.invisible_until_ms, position, entry.offset)
                      for position, state in enumerate(states) for entry in state.revived()))[:limit]
    chosen: dict[int, list[int]] = {}
    for _, position, offset in waiting:
        chosen.setdefault(position, []).append(offset)
    return [(position, tuple(sorted(offsets))) for position, offsets in chosen.items()]


_entries = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.booleans()), max_size=40).map(
    lambda drawn: tuple(PopEntry(offset, deliveries, 1, 100 * deadline, visible)
                        for offset, (deliveries, deadline, visible) in enumerate(drawn) if deliveries or not visible))


@settings(max_examples=300)
@for_all(tables=st.lists(_entries, max_size=4), limit=st.integers(1, 50))
def test_due_revivals_chosen_by_run_are_those_chosen_by_record(tables: list[tuple[PopEntry, ...]], limit: int) -> None:
    states = [PopPartition.of_entries("g", n, "t", 100, 3, entries) for n, entries in enumerate(tables)]
    assert pop_commands.due_revivals(states, limit) == _due_by_expanding(states, limit)
    for state in states:
        assert pop_commands.first_revived(state, limit) == [entry.offset for entry in state.revived()][:limit]


def test_due_revivals_read_runs_not_records() -> None:
    """20,000 revived records in one run: choosing 32 of them expands 32, not all (seconds for a topic of them)."""
    state = PopPartition.of_entries("g", 1, "t", 30_000, 3, (PopEntry(n, 1, 1, 500, True) for n in range(20_000)))
    assert len(state.runs) == 1
    assert pop_commands.due_revivals([state], 32) == [(0, tuple(range(32)))]
    assert pop_commands.first_revived(state, 3) == [0, 1, 2]
