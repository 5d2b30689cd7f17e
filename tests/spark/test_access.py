"""Scratch directories of secondary instances: removed after a task, swept when their process died."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from logwright.spark.access import secondary_store, sweep_stale

from .support import write_known_log


def test_a_secondary_directory_goes_when_the_reader_is_done(tmp_path: Path) -> None:
    write_known_log(tmp_path / "data", batches_per_codec=1)
    with secondary_store(str(tmp_path / "data"), str(tmp_path)) as store:
        assert store.last_sequence > 0
        assert len([p for p in tmp_path.iterdir() if p.name.startswith("logwright-secondary-")]) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


def test_only_directories_of_dead_processes_are_swept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"logwright-secondary-{int(dead.stdout)}-abc"
    live = tmp_path / f"logwright-secondary-{os.getpid()}-def"
    other = tmp_path / "something-else"
    for path in (stale, live, other):
        path.mkdir()
    assert sweep_stale(str(tmp_path)) == [stale.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])
