"""`logwright replay` in Spark agrees with the store, and names a projection row that was altered."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from logwright.eventstore import keys
from logwright.eventstore.check import check_store
from logwright.eventstore.codec import default_registry
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.spark.replay import replay

from logwright.cli import main
from tests.eventstore import raw

from .support import write_known_log

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("replay") / "data"
    write_known_log(path)
    return path


def test_replay_agrees_with_the_stored_state_and_with_check(spark: Any, log_dir: Path) -> None:
    report = replay(spark, str(log_dir), events_per_task=3)
    store = RocksEventStore(log_dir, read_only=True)
    try:
        single = check_store(store)
    finally:
        store.close()
    assert report.consistent, report.differences
    assert (report.events, report.entities) == (single.events, single.entities)
    assert report.entities > 0


def test_replay_names_an_altered_projection_row_and_the_command_exits_non_zero(
        spark: Any, log_dir: Path, tmp_path: Path) -> None:
    altered_dir = tmp_path / "altered"
    shutil.copytree(log_dir, altered_dir)
    key = keys.state_key("partitions", "0")
    stored = raw.items(altered_dir, "state")[key]
    types = default_registry()
    state = types.decode(stored[8:], "test")
    raw.put(altered_dir, "state", key, stored[:8] + types.encode(dataclasses.replace(state, next_offset=999)))
    raw.delete(altered_dir, "state", [keys.state_key("committed_offsets", "#readers")])
    raw.put(altered_dir, "state", keys.state_key("partitions", "999"), stored)  # no event names partition 999

    report = replay(spark, str(altered_dir), events_per_task=4)
    assert not report.consistent
    assert report.total_differences == 3
    assert any(d.startswith("partitions/0: replay gives PartitionState(") and "next_offset=999" in d
               and f"next_offset={state.next_offset}" in d for d in report.differences)
    assert any(d.startswith("committed_offsets/#readers:") and d.endswith("state holds None")
               for d in report.differences)
    assert any(d.startswith("partitions/999: replay gives None, state holds PartitionState(")
               for d in report.differences)

    result = CliRunner().invoke(main, ["replay", "--data-dir", str(altered_dir), "--spark", "local[2]"])
    assert result.exit_code == 1, result.output
    assert "INCONSISTENT (3 differences)" in result.output
    assert CliRunner().invoke(main, ["replay", "--data-dir", str(log_dir), "--spark", "local[2]"]).exit_code == 0
