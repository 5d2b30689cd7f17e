"""bench/compare.py measures a peer only once the other brokers are quiet (`compare_api.wait_until_quiet`): after
Kafka's 1,000-partition produce, its background work on the same two cores cut logwright's next figure in half."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from compare import _quiet_summary  # noqa: E402
from compare_api import QUIET_GIVE_UP_S, QUIET_WINDOW_S, Context, wait_until_quiet  # noqa: E402
from compare_report import Sample  # noqa: E402


class Machine:
    """Two brokers' CPU seconds so far, moving by ``busy`` per window while windows remain, on a clock that only
    sleeping moves."""

    def __init__(self, busy: list[tuple[float, float]]) -> None:
        self.busy = busy
        self.cpu = [0.0, 0.0]
        self.now = 0.0

    def read(self) -> list[float]:
        return list(self.cpu)

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        step = self.busy.pop(0) if self.busy else (0.0, 0.0)
        self.cpu = [self.cpu[0] + step[0], self.cpu[1] + step[1]]


def test_it_waits_while_any_broker_is_busy_and_stops_at_the_first_quiet_window() -> None:
    machine = Machine([(0.4, 0.0), (0.0, 0.3), (0.02, 0.01)])
    assert wait_until_quiet(machine.read, machine.sleep, lambda: machine.now) == 3 * QUIET_WINDOW_S


def test_quiet_brokers_cost_one_window_and_none_costs_nothing() -> None:
    machine = Machine([])
    assert wait_until_quiet(machine.read, machine.sleep, lambda: machine.now) == QUIET_WINDOW_S
    assert wait_until_quiet(list, machine.sleep, lambda: machine.now) == 0.0


def test_a_broker_that_never_goes_quiet_is_measured_beside_after_the_give_up_time() -> None:
    machine = Machine([(0.5, 0.0)] * 1000)
    waited = wait_until_quiet(machine.read, machine.sleep, lambda: machine.now)
    assert QUIET_GIVE_UP_S <= waited < QUIET_GIVE_UP_S + QUIET_WINDOW_S + 1e-9


class BusyPeer:
    """A shared broker that never goes quiet: a core's worth of CPU seconds between any two reads."""

    class Process:
        def poll(self) -> None:
            return None

    def __init__(self) -> None:
        self.process = self.Process()
        self.read = 0.0

    def cpu_seconds(self) -> float:
        self.read += 1.0
        return self.read


def test_a_quick_run_does_not_wait_and_the_measured_peer_is_not_waited_for(tmp_path: Path) -> None:
    quick = Context(tmp_path, quick=True)
    quick._shared["kafka"] = BusyPeer()  # type: ignore[assignment]
    assert quick.quiesce("logwright") == 0.0
    full = Context(tmp_path)
    full._shared["logwright"] = BusyPeer()  # type: ignore[assignment]
    assert full.quiesce("logwright") < QUIET_WINDOW_S  # only the others are waited for


def test_the_report_says_a_quick_run_did_not_wait_and_what_a_full_run_waited() -> None:
    samples = [Sample("w", "logwright", 0, {"m": 1.0}, quiet_wait_s=wait) for wait in (0.5, 2.0)]
    assert _quiet_summary(samples, waited=False).startswith("none: a run at --quick's sizes")
    full = _quiet_summary(samples)
    assert "waited 2 s in all, at most 2.0 s" in full and "none" not in full
