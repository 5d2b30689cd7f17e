"""The coordinators' timer sleeps toward the next deadline and is woken by an earlier one.

No wall-clock speed is asserted: a timer sleeping toward a deadline an hour away can only tick within the
test's generous bound if `schedule` woke it, which is the structure under test.
"""

from __future__ import annotations

import asyncio

from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.core.clock import ManualClock

HOUR_MS = 3_600_000
BOUND_S = 60


class SettableClock:
    """A clock like the system clock for the timer (not a `ManualClock`), set by the test."""

    def __init__(self, now_ms: int) -> None:
        self.now = now_ms

    def now_ms(self) -> int:
        return self.now


class Plan:
    def __init__(self, deadline: int | None, clears: bool = True) -> None:
        self.deadline = deadline
        self.clears = clears
        self.asked = 0
        self.ticks = 0
        self.ticked = asyncio.Event()

    def next_deadline(self) -> int | None:
        self.asked += 1
        return self.deadline

    def tick(self) -> None:
        self.ticks += 1
        if self.clears:
            self.deadline = None
        self.ticked.set()


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_an_earlier_deadline_wakes_a_timer_sleeping_toward_a_later_one() -> None:
    async def scenario() -> None:
        clock = SettableClock(1_000_000)
        plan = Plan(clock.now + HOUR_MS)
        timer = DeadlineTimer(clock, plan.next_deadline, plan.tick, "test-timer")
        timer.ensure_running()
        await settle()
        asked = plan.asked
        timer.schedule(clock.now + 2 * HOUR_MS)  # later than planned: the timer sleeps on
        await settle()
        assert plan.asked == asked and plan.ticks == 0
        plan.deadline = clock.now  # due now
        timer.schedule(plan.deadline)
        await asyncio.wait_for(plan.ticked.wait(), BOUND_S)
        assert plan.ticks == 1
        timer.close()

    asyncio.run(scenario())


def test_on_a_manual_clock_only_due_deadlines_run_and_only_once() -> None:
    async def scenario() -> None:
        clock = ManualClock()
        plan = Plan(clock.now_ms() + 10, clears=False)
        timer = DeadlineTimer(clock, plan.next_deadline, plan.tick, "test-timer")
        timer.ensure_running()
        await settle()
        assert plan.ticks == 0  # not due on the manual clock: LogwrightAdvanceClock runs the tick then
        plan.deadline = clock.now_ms()
        timer.schedule(plan.deadline)
        await asyncio.wait_for(plan.ticked.wait(), BOUND_S)
        await settle()  # the deadline the tick left due does not make the timer spin
        assert plan.ticks == 1
        timer.close()

    asyncio.run(scenario())


def test_a_timer_starts_on_the_first_deadline_and_a_closed_one_never_again() -> None:
    clock = ManualClock()
    plan = Plan(clock.now_ms())
    timer = DeadlineTimer(clock, plan.next_deadline, plan.tick, "test-timer")
    timer.schedule(plan.deadline or 0)  # outside an event loop: nothing to run on yet

    async def scenario() -> None:
        assert plan.ticks == 0
        plan.deadline = clock.now_ms()
        timer.schedule(plan.deadline)  # inside one: the timer starts and runs the due deadline
        await asyncio.wait_for(plan.ticked.wait(), BOUND_S)
        timer.close()
        await settle()
        plan.deadline = clock.now_ms()
        timer.schedule(plan.deadline)
        await settle()
        assert plan.ticks == 1

    asyncio.run(scenario())
