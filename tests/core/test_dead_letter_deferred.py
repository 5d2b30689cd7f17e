"""A dead-letter copy that failed keeps its records: `DeadLetterDeferred` folds them back to waiting, with their
delivery counts, until ``available_at_ms``, whether they were in flight or already waiting. Pure fold."""

from __future__ import annotations

from logwright.core.cursors import cursor_commands as commands
from logwright.core.cursors.cursor import CURSORS, CursorState, Redelivery, cursor_key
from logwright.core.events import Event
from logwright.core.events.cursors import DeadLetterDeferred, LockExpired, RecordsAcquired, SubscriptionCreated
from logwright.core.projection import fold

SUB, PID = "sub", 2


def state_of(log: list[Event]) -> CursorState:
    state = fold(CURSORS, log)[cursor_key(SUB, PID)]
    assert isinstance(state, CursorState)
    return state


def deferred(deliveries: tuple[tuple[int, int, int], ...], available_at_ms: int) -> DeadLetterDeferred:
    return DeadLetterDeferred(SUB, PID, "c", deliveries, "rejected by consumer", 1_000, "dlq.gone",
                              "dead-letter topic 'dlq.gone' does not exist", available_at_ms)


def test_in_flight_and_waiting_records_wait_again_keeping_their_counts() -> None:
    log: list[Event] = [SubscriptionCreated(SUB, PID, "t", 0), RecordsAcquired(SUB, PID, "c", ((0, 4),), 500),
                        LockExpired(SUB, PID, ((3, 4),), 0)]
    log.append(deferred(((1, 1, 1), (3, 3, 1)), 31_000))
    state = state_of(log)
    assert [(d.first, d.last) for d in state.in_flight] == [(0, 0), (2, 2)]
    assert state.redeliveries == (Redelivery(1, 1, 1, 31_000, "c"), Redelivery(3, 3, 1, 31_000, "c"),
                                  Redelivery(4, 4, 1, 0, "c"))
    assert state.mark_delete_position == -1 and not state.settled
    assert list(commands.available(state, 0, 5, now_ms=30_999)) == [(4, 4)]
    assert list(commands.available(state, 0, 5, now_ms=31_000)) == [(4, 4), (1, 1), (3, 3)]
    again = commands.acquire(state, 0, 5, "d", 3, 31_000, 500)
    assert again is not None
    log.append(again)
    held = {(offset, d.delivery_count) for d in state_of(log).in_flight if d.consumer == "d"
            for offset in range(d.first, d.last + 1)}
    assert held == {(1, 2), (3, 2), (4, 2)}
