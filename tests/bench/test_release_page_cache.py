"""bench/compare.py drops the page cache before each measurement (`compare_api.release_page_cache`): on this VM the
page cache an earlier sample kept made the next peer's writes cost the host's first-touch faults (session 40)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from compare import _page_cache_summary  # noqa: E402
from compare_api import release_page_cache  # noqa: E402
from compare_report import Sample  # noqa: E402


def test_writes_back_then_drops_clean_pages(tmp_path: Path) -> None:
    control = tmp_path / "drop_caches"
    control.write_text("0")
    steps: list[str] = []

    def sync() -> None:
        steps.append(f"sync with the control at {control.read_text()}")

    assert release_page_cache(control, sync)
    assert steps == ["sync with the control at 0"]
    assert control.read_text() == "1"


def test_a_process_that_may_not_drop_carries_on(tmp_path: Path) -> None:
    assert not release_page_cache(tmp_path / "no such dir" / "drop_caches", lambda: None)


def test_the_report_says_when_some_samples_kept_the_cache() -> None:
    dropped = Sample("w", "kafka", 0, page_cache_dropped=True)
    kept = Sample("w", "logwright", 0)
    assert "only before" not in _page_cache_summary([dropped, dropped])
    assert "only before 1 of 2 (" in _page_cache_summary([dropped, kept])
    assert _page_cache_summary([]) == "?"
    start_up = Sample("start-up", "kafka", 0)
    line = _page_cache_summary([dropped, start_up], frozenset({"start-up"}))
    assert "only before" not in line and "kept for start-up" in line, "a workload that keeps it is not a failed drop"
    assert _page_cache_summary([start_up], frozenset({"start-up"})).startswith("kept for start-up (")


def test_start_up_is_timed_on_a_warm_page_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Restarting on stored files with the cache dropped would time the disk: start-up keeps it (and says so)."""
    import compare  # noqa: PLC0415
    from compare_api import Context, Metric, Workload  # noqa: PLC0415
    from startup import WORKLOADS as START_UP  # noqa: PLC0415

    assert [w.drop_page_cache for w in START_UP] == [False]
    drops: list[str] = []
    monkeypatch.setattr(compare, "release_page_cache", lambda: drops.append("dropped") or True)
    ctx = Context(tmp_path, quick=True)
    for keeps in (False, True):
        workload = Workload("w", (Metric("x"),), lambda _ctx, _peer: {"x": 1.0}, "m", drop_page_cache=not keeps)
        sample = compare.measure_one(workload, ctx, "kafka", 0)
        assert sample.page_cache_dropped is (not keeps)
    assert drops == ["dropped"]


def test_start_up_times_the_restart_after_an_untimed_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The drops before the other workloads took the broker's own program (Kafka's jars: 11.7 s to ready against 1.7):
    a first restart reads it back, the second is the one timed."""
    import startup  # noqa: PLC0415
    from compare_api import Context  # noqa: PLC0415

    stored = startup.StoredTopic("t", 1, 100, 0.1, 0.1)
    monkeypatch.setattr(startup, "fill", lambda *_args, **_options: stored)
    restarts = iter([startup.Startup(11.7, 11.8, 1 << 20, 0.5, 0), startup.Startup(1.7, 1.8, 2 << 20, 0.5, 0)])
    monkeypatch.setattr(startup, "restart_timed", lambda *_args, **_options: next(restarts))
    figures = startup.compare_measure(Context(tmp_path, quick=True), "kafka")
    assert figures == {"ready s": 1.7, "first fetch s": 1.8, "RSS MiB": 2.0}
    assert next(restarts, None) is None, "two restarts, the second timed"
