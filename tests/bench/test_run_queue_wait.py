"""`RunningPeer.run_queue_wait_seconds` counts every thread of every process in the broker's process group: Kafka's
work runs in a JVM's many threads, and a launcher (py-spy, a shell) may stand between the group's leader and the
broker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from brokers import RunningPeer  # noqa: E402

_THREADS_AND_A_CHILD = """
import subprocess, sys, threading, time
child = subprocess.Popen([sys.executable, "-c", "import time; print(flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE)
child.stdout.readline()
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
print(child.pid, flush=True)
time.sleep(60)
"""


def _schedstat_wait_ns(pid: int) -> int:
    return sum(int(path.read_text().split()[1]) for path in Path(f"/proc/{pid}/task").glob("*/schedstat"))


def test_the_wait_sums_the_schedstat_of_every_thread_in_the_group(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", _THREADS_AND_A_CHILD], stdout=subprocess.PIPE,
                               start_new_session=True)
    assert process.stdout is not None
    child = int(process.stdout.readline())
    peer = RunningPeer("test", 0, tmp_path, process, open(tmp_path / "log", "wb"), 0.0)  # noqa: SIM115
    try:
        pids = {pid for pid, _ in peer._group_stats()}
        assert pids == {process.pid, child}
        assert len(list(Path(f"/proc/{process.pid}/task").iterdir())) >= 2  # the leader and its sleeping thread
        before = (_schedstat_wait_ns(process.pid) + _schedstat_wait_ns(child)) / 1e9
        waited = peer.run_queue_wait_seconds()
        after = (_schedstat_wait_ns(process.pid) + _schedstat_wait_ns(child)) / 1e9
        assert before <= waited <= after
    finally:
        peer.stop(timeout_s=5)
