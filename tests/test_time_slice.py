"""The event loop thread's time slice (`logwright.time_slice`), asked of the real kernel in a child interpreter."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from logwright.time_slice import SLICE_LIMITS_US, current_slice_ns, request_time_slice

PROBE = """
import json, os, sys
from logwright.time_slice import current_slice_ns, request_time_slice
before = current_slice_ns()
nice = os.getpriority(os.PRIO_PROCESS, 0)
took = request_time_slice(int(sys.argv[1]))
print(json.dumps({"before": before, "took": took, "after": current_slice_ns(),
                  "nice_before": nice, "nice_after": os.getpriority(os.PRIO_PROCESS, 0),
                  "policy": os.sched_getscheduler(0)}))
"""


def _probe(microseconds: int, *prefix: str) -> dict[str, object]:
    """Run `request_time_slice` in a fresh interpreter (the slice is per thread and inherited: not in this one)."""
    done = subprocess.run([*prefix, sys.executable, "-c", PROBE, str(microseconds)], capture_output=True, text=True,
                          check=True, timeout=60)
    result: dict[str, object] = json.loads(done.stdout)
    return result


def _kernel_honours_slices() -> bool:
    """Linux 6.12+ on an architecture the module knows (the thread's requested runtime reads back)."""
    if platform.system() != "Linux" or current_slice_ns() is None:
        return False
    major, minor = (int(part) for part in platform.release().split(".")[:2])
    return (major, minor) >= (6, 12)


needs_slices = pytest.mark.skipif(not _kernel_honours_slices(), reason="the kernel has no custom EEVDF slices")


@needs_slices
def test_the_requested_slice_is_what_the_kernel_reports_afterwards() -> None:
    result = _probe(100)
    assert result["before"] != 100_000  # the kernel's default (1.4 ms on the 2-vCPU test machine)
    assert result["took"] is True
    assert result["after"] == 100_000


@needs_slices
def test_the_slice_is_clamped_to_what_linux_accepts() -> None:
    assert _probe(10)["after"] == SLICE_LIMITS_US[0] * 1000
    assert _probe(10_000_000)["after"] == SLICE_LIMITS_US[1] * 1000


@needs_slices
def test_nice_value_and_batch_policy_are_kept() -> None:
    result = _probe(200, "nice", "-n", "7", "chrt", "--batch", "0")
    assert result["took"] is True
    assert result["after"] == 200_000
    assert result["nice_before"] == result["nice_after"] == 7
    assert result["policy"] == os.SCHED_BATCH


def test_zero_leaves_the_thread_alone() -> None:
    result = _probe(0)
    assert result["took"] is False
    assert result["after"] == result["before"]


def test_an_idle_policy_thread_is_not_changed() -> None:
    result = _probe(100, "chrt", "--idle", "0")
    assert result["took"] is False
    assert result["after"] == result["before"]
    assert result["policy"] == os.SCHED_IDLE


def test_in_this_process_a_refused_or_unknown_call_returns_false_without_raising(monkeypatch: pytest.MonkeyPatch
                                                                                ) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "sparc64")
    assert current_slice_ns() is None
    assert request_time_slice(100) is False
