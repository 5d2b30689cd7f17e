"""Due redeliveries go first, in the order their backoffs ran out (W11), and the built-in redelivery plugin's
group backoff sets when they are due. Pure: commands and the projection's fold, no broker."""

from __future__ import annotations

from logwright.core.cursors import cursor_commands as commands
from logwright.core.cursors.cursor import CURSORS, CursorState, cursor_key
from logwright.core.cursors.plugin_decisions import ReleaseContext
from logwright.core.events import Event
from logwright.core.events.cursors import SubscriptionCreated
from logwright.core.projection import fold
from logwright.core.rangeset import RangeSet
from logwright.plugins.redelivery import logwright_decide_release

SUB, PID, LOCK, LIMIT = "sub", 3, 30_000, 10
MULTIPLIER = {"logwright.redelivery.backoff.policy": "multiplier", "logwright.redelivery.backoff.min.ms": "1000",
              "logwright.redelivery.backoff.max.ms": "60000", "logwright.redelivery.backoff.multiplier": "2",
              "share.delivery.count.limit": str(LIMIT)}


def state_of(log: list[Event]) -> CursorState:
    state = fold(CURSORS, log)[cursor_key(SUB, PID)]
    assert isinstance(state, CursorState)
    return state


def acquire(log: list[Event], consumer: str, count: int, now: int, log_end: int) -> list[int]:
    event = commands.acquire(state_of(log), 0, log_end, consumer, count, now, LOCK)
    assert event is not None
    log.append(event)
    return list(RangeSet.from_ranges(event.ranges))


def release(log: list[Event], offsets: tuple[tuple[int, int], ...], now: int, delay_ms: int = 0,
            settings: dict[str, str] | None = None) -> None:
    context = ReleaseContext(logwright_decide_release, 0, settings) if settings is not None else None
    log.extend(commands.release(state_of(log), "c", offsets, now, delay_ms, LIMIT, context))


def test_due_redeliveries_go_first_in_due_time_order_then_new_records() -> None:
    log: list[Event] = [SubscriptionCreated(SUB, PID, "t", 0)]
    assert acquire(log, "c", 6, now=0, log_end=10) == [0, 1, 2, 3, 4, 5]
    release(log, ((5, 5),), now=0, delay_ms=1_000)  # due at 1000
    release(log, ((1, 1),), now=0, delay_ms=3_000)  # due at 3000
    release(log, ((3, 3),), now=0, delay_ms=2_000)  # due at 2000
    state = state_of(log)
    assert list(commands.available(state, 0, 10, now_ms=500)) == [(6, 9)]
    assert list(commands.available(state, 0, 10, now_ms=5_000)) == [(5, 5), (3, 3), (1, 1), (6, 9)]
    # with room for two, the two that came due first win, not the lowest offsets nor the new records
    assert acquire(log, "c", 2, now=5_000, log_end=10) == [3, 5]
    assert acquire(log, "c", 2, now=5_000, log_end=10) == [1, 6]


def test_ties_in_due_time_go_in_offset_order_and_retention_clips_them() -> None:
    log: list[Event] = [SubscriptionCreated(SUB, PID, "t", 0)]
    acquire(log, "c", 4, now=0, log_end=4)
    release(log, ((3, 3),), now=0)
    release(log, ((0, 1),), now=0)
    assert list(commands.available(state_of(log), 1, 4, now_ms=0)) == [(1, 1), (3, 3)]


def test_the_builtin_plugin_backs_off_from_the_delivery_count_and_an_explicit_delay_wins() -> None:
    log: list[Event] = [SubscriptionCreated(SUB, PID, "t", 0)]
    now = 0
    for expected in (1_000, 2_000, 4_000, 8_000):
        acquire(log, "c", 1, now=now, log_end=1)
        release(log, ((0, 0),), now=now, settings=MULTIPLIER)
        assert list(commands.available(state_of(log), 0, 1, now + expected - 1)) == []
        assert commands.next_deadline(state_of(log), now) == now + expected
        now += expected
    acquire(log, "c", 1, now=now, log_end=1)
    release(log, ((0, 0),), now=now, delay_ms=250, settings=MULTIPLIER)
    assert commands.next_deadline(state_of(log), now) == now + 250
    # lock expiry follows the policy too: the sixth delivery failing waits min(1 s * 2^5, 60 s)
    now += 250
    acquire(log, "c", 1, now=now, log_end=1)
    context = ReleaseContext(logwright_decide_release, 0, MULTIPLIER)
    log.extend(commands.expire_locks(state_of(log), now + LOCK, LIMIT, context))
    assert commands.next_deadline(state_of(log), now + LOCK) == now + LOCK + 32_000


def test_without_a_policy_the_plugin_redelivers_at_once() -> None:
    log: list[Event] = [SubscriptionCreated(SUB, PID, "t", 0)]
    acquire(log, "c", 1, now=0, log_end=1)
    release(log, ((0, 0),), now=0, settings={})
    assert list(commands.available(state_of(log), 0, 1, 0)) == [(0, 0)]
