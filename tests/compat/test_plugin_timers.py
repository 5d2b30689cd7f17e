"""A background task's timer (`BrokerFacade.deadline_timer`) on a manual clock: LogwrightAdvanceClock runs its
tick when it falls due, not a millisecond before, and answers once what the tick staged is in the log.

In-process broker (`test_group_handlers.Harness`) over a real RocksEventStore; time moves only through the
extension handler, nothing sleeps.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from logwright.compat.plugin_facade import PluginFacade
from logwright.core.clock import ManualClock
from logwright.core.events import OffsetCommitted

from tests.compat.test_group_handlers import Harness


def test_advance_clock_runs_a_due_plugin_tick_and_answers_with_its_events_durable(tmp_path: Path) -> None:
    async def scenario() -> None:
        clock = ManualClock()
        harness = Harness(tmp_path, clock)
        try:
            facade = PluginFacade(harness.broker, "timer-test")
            deadline = [clock.now_ms() + 1000]
            ticks: list[int] = []

            def tick() -> None:
                ticks.append(clock.now_ms())
                facade.stage([OffsetCommitted("timer-group", "t", 0, len(ticks))])
                deadline[0] += 1000

            timer = facade.deadline_timer("probe", lambda: deadline[0], tick)
            await harness.advance(999)
            assert ticks == [], "not a millisecond early"
            await harness.advance(1)
            assert ticks == [clock.now_ms()], "ticked by the advance itself"
            logged = [entry.event for entry in harness.store.read_events()]
            assert OffsetCommitted("timer-group", "t", 0, 1) in logged, "durable when the advance answers"
            timer.schedule(clock.now_ms() + 500)  # an earlier deadline re-arms the timer
            deadline[0] = clock.now_ms() + 500
            await harness.advance(500)
            assert len(ticks) == 2
            timer.close()
            await harness.advance(10_000)
            assert len(ticks) == 2, "a closed timer ticks no more"
        finally:
            harness.close()

    asyncio.run(scenario())
