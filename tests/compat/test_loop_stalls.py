"""Event-loop steps that hold the loop too long, reported with where it was (`compat.loop_stalls`).

Durations come from a clock the callbacks themselves advance, and the watchdog's look is taken from a thread the
slow callback starts and waits for: nothing here depends on how fast the machine runs.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from logwright.compat.loop_stalls import LoopStalls, Stall
from logwright.testing.broker_process import BrokerProcess

THRESHOLD_S = 0.010


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def reported() -> list[Stall]:
    return []


@pytest.fixture
def stalls(clock: FakeClock, reported: list[Stall]) -> Iterator[LoopStalls]:
    installed = LoopStalls(THRESHOLD_S, watch=False, clock=clock, report=reported.append)
    installed.install()
    try:
        yield installed
    finally:
        installed.uninstall()


def test_a_callback_past_the_threshold_is_reported_by_name_and_a_short_one_is_not(
        stalls: LoopStalls, clock: FakeClock, reported: list[Stall]) -> None:
    def slow_step() -> None:
        clock.now += 0.050

    def quick_step() -> None:
        clock.now += 0.005

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.call_soon(slow_step)
        loop.call_soon(quick_step)
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert [(round(stall.held_ms), stall.callback) for stall in reported] == [
        (50, "test_a_callback_past_the_threshold_is_reported_by_name_and_a_short_one_is_not.<locals>.slow_step")]
    assert reported[0].stack == (), "no watchdog, no stack"


def test_a_tasks_long_step_names_its_coroutine(stalls: LoopStalls, clock: FakeClock, reported: list[Stall]) -> None:
    async def handler() -> None:
        clock.now += 0.020

    async def main() -> None:
        await asyncio.create_task(handler())

    asyncio.run(main())
    assert any("handler" in stall.callback and stall.callback.startswith("task ") for stall in reported)


def test_the_watchdog_takes_the_stack_of_the_callback_that_runs_long(
        stalls: LoopStalls, clock: FakeClock, reported: list[Stall]) -> None:
    def stuck_in_a_sync() -> None:
        clock.now += 0.030
        watchdog = threading.Thread(target=stalls.look_once)  # as the watchdog's tick would, past the threshold
        watchdog.start()
        watchdog.join()

    async def main() -> None:
        asyncio.get_running_loop().call_soon(stuck_in_a_sync)
        await asyncio.sleep(0)

    asyncio.run(main())
    (stall,) = reported
    assert "(threading.py:" in stall.stack[0], "innermost first: starting or joining the thread"
    assert any(frame.startswith("stuck_in_a_sync (test_loop_stalls.py:") for frame in stall.stack)
    assert "stuck_in_a_sync (test_loop_stalls.py:" in stall.describe()


def test_uninstall_puts_asyncio_back(clock: FakeClock, reported: list[Stall]) -> None:
    original = asyncio.Handle._run  # noqa: SLF001
    stalls = LoopStalls(THRESHOLD_S, clock=clock, report=reported.append)
    stalls.install()
    assert asyncio.Handle._run is not original  # noqa: SLF001
    stalls.uninstall()
    assert asyncio.Handle._run is original  # noqa: SLF001


def test_serve_logs_the_loops_long_steps(tmp_path: Path) -> None:
    """Start-up's step (opening the store, loading the plugins) holds the loop far longer than 1 ms."""
    broker = BrokerProcess(tmp_path / "data", extra_args=("--log-stalls-ms", "1")).start()
    try:
        AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=10)
    finally:
        assert broker.stop() == 0
    assert "the event loop was held" in broker.log_path.read_text()
