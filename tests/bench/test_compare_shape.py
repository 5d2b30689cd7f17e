"""What bench/compare.py's size flags ask for: ``--quick`` is the smoke subset, once (issue 18: under 3 minutes)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from compare import RunShape, load_own_ratios, load_workloads, run_shape  # noqa: E402


def test_quick_and_its_earlier_name_run_the_smoke_subset_once_at_small_sizes() -> None:
    assert run_shape(quick=True, smoke=False, small=False, repeats=None) == RunShape(True, True, 1, "compare-quick")
    assert run_shape(quick=False, smoke=True, small=False, repeats=None) == RunShape(True, True, 1, "compare-smoke")


def test_small_runs_every_workload_twice_at_small_sizes_and_a_full_run_five_times() -> None:
    assert run_shape(quick=False, smoke=False, small=True, repeats=None) == RunShape(True, False, 2, "compare-small")
    assert run_shape(quick=False, smoke=False, small=False, repeats=None) == RunShape(False, False, 5, "compare")
    assert run_shape(quick=True, smoke=False, small=True, repeats=3).repeats == 3


def test_a_scaling_target_is_reported_only_when_both_of_its_points_run() -> None:
    """The curves' 1,000-partition target names two of their points (names that drift would drop it silently)."""
    curves = load_workloads(["curve: 1 KiB keyed"])
    assert {(own.of, own.to, own.metric) for own in load_own_ratios(curves)} == {
        ("curve: 1 KiB keyed records, 1,000 partitions", "curve: 1 KiB keyed records, 1 partition", metric)
        for metric in ("produce MB/s", "consume MB/s")}
    assert load_own_ratios([w for w in curves if "1,000" not in w.name]) == []

