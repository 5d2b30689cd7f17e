"""`logwright replay` in Spark agrees with the store, and names a projection row that was altered."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from click.testing import CliRunner
from logwright.eventstore import keys
from logwright.eventstore.check import CheckReport, check_store
from logwright.eventstore.codec import default_registry
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.spark.replay import replay

from logwright.cli import main
from tests.eventstore import raw
from tests.eventstore.support import new_topic, open_store
from tests.eventstore.test_aborted_index import Partition

from .support import write_known_log

pytestmark = pytest.mark.spark

_Read = TypeVar("_Read")


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("replay") / "data"
    write_known_log(path)
    return path


def test_replay_agrees_with_the_stored_state_and_with_check(spark: Any, log_dir: Path) -> None:
    report = replay(spark, str(log_dir), events_per_task=3)
    single = _checked(log_dir)
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


@pytest.fixture(scope="module")
def aborted_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, int]]]:
    """A log whose two partitions hold aborted and committed transactions, one partition's log start past its first
    abort; the (partition, marker) of every abort still indexed."""
    path = tmp_path_factory.mktemp("replay-aborts") / "data"
    opened: list[RocksEventStore] = []
    store = open_store(opened, path)
    created = new_topic(store, "t", 2)
    indexed: list[tuple[int, int]] = []
    for partition_id in created.partition_ids:
        partition = Partition(store, partition_id)
        for producer_id in (1, 2, 3):
            partition.data(producer_id, 2)
            marker = partition.end(producer_id, committed=producer_id == 2)
            if producer_id != 2:
                indexed.append((partition_id, marker))
    store.commit()
    first = created.partition_ids[0]
    store.truncate(first, indexed[0][1] + 1)
    store.commit()
    for each in opened:
        each.close()
    return path, indexed[1:]


def test_replay_compares_the_index_of_aborted_transactions_as_check_does(
        spark: Any, aborted_dir: tuple[Path, list[tuple[int, int]]], tmp_path: Path) -> None:
    path, indexed = aborted_dir
    report = replay(spark, str(path), events_per_task=2)
    assert report.consistent, report.differences
    assert [(partition_id, marker) for partition_id, _, _, marker, _ in _aborted_rows(path)] == indexed

    altered = tmp_path / "altered"
    shutil.copytree(path, altered)
    dropped_partition, dropped_marker = indexed[0]
    raw.delete(altered, "index", [keys.aborted_key(dropped_partition, dropped_marker)])
    raw.put(altered, "index", keys.aborted_key(999, 5), raw.items(altered, "index")[keys.aborted_key(*indexed[-1])])
    report = replay(spark, str(altered), events_per_task=2)
    single = _checked(altered)
    assert report.total_differences == 2 and sorted(report.differences) == sorted(single.differences)
    assert any(d.startswith(f"aborted-transaction index of partition {dropped_partition}:") for d in report.differences)
    assert any(d.startswith("aborted-transaction index of partition 999: the events give None")
               for d in report.differences), report.differences


def _aborted_rows(path: Path) -> list[tuple[int, int, int, int, int]]:
    return _read_only(path, lambda store: list(store.aborted_rows()))


def _checked(path: Path) -> CheckReport:
    """What `logwright check` reports on the store at ``path``."""
    return _read_only(path, check_store)


def _read_only(path: Path, read: Callable[[RocksEventStore], _Read]) -> _Read:
    store = RocksEventStore(path, read_only=True)
    try:
        return read(store)
    finally:
        store.close()
