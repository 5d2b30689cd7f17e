"""`cgroup_cpu.Meter` reads a broker's CPU to the microsecond and keeps what ended threads and children used,
which /proc's per-process ticks round to 10 ms and per-thread schedstat forgets."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from cgroup_cpu import Meter, describe  # noqa: E402

_BURN = """
import subprocess, sys, threading, time

def burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass

worker = threading.Thread(target=burn, args=(0.2,))
worker.start()
worker.join()  # a thread that has ended before anyone reads
subprocess.run([sys.executable, "-c", "import time\\nend = time.process_time() + 0.2\\n"
                "while time.process_time() < end: pass"], check=True)  # a child that has ended
burn(0.1)
"""


@pytest.fixture
def meter() -> Meter:
    made = Meter.create("test")
    if made is None:
        pytest.skip("no cgroup v2 this process may make groups in: the benchmarks fall back to /proc ticks")
    return made


def test_the_group_counts_ended_threads_and_children(meter: Meter) -> None:
    before = meter.seconds()
    subprocess.run(meter.wrap([sys.executable, "-c", _BURN]), check=True)
    used = meter.seconds() - before
    assert 0.5 <= used < 5.0  # 0.2 + 0.2 + 0.1 burned, plus two interpreters starting
    meter.remove()
    assert not meter.path.exists()


def test_the_wrapped_command_keeps_its_pid_and_exit_status(meter: Meter) -> None:
    process = subprocess.Popen(meter.wrap([sys.executable, "-c", "import os, sys; print(os.getpid()); sys.exit(3)"]),
                               stdout=subprocess.PIPE, text=True)
    out, _ = process.communicate(timeout=30)
    assert int(out) == process.pid
    assert process.returncode == 3
    meter.remove()


def test_a_killed_run_leaves_no_group_behind(meter: Meter) -> None:
    stale = meter.path.parent / "test-999999999-0"
    stale.mkdir()
    again = Meter.create("test")
    assert again is not None
    assert not stale.exists()
    assert meter.path.exists()  # this process is alive: its group stays
    again.remove()
    meter.remove()


def test_the_report_names_the_instrument(meter: Meter) -> None:
    assert "cgroup" in describe(meter)
    assert "/proc" in describe(None)
    meter.remove()
