"""`logwright check` and `logwright events` as a user runs them: the venv's script in a subprocess."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from logwright.core.clock import ManualClock
from logwright.core.events import OffsetCommitted
from logwright.eventstore import keys
from logwright.eventstore.codec import default_registry
from logwright.eventstore.rocksdb import RocksEventStore

from . import raw
from .support import new_topic, produce

LOGWRIGHT = str(Path(sys.executable).with_name("logwright"))


def logwright(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LOGWRIGHT, *args], capture_output=True, text=True, timeout=60)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "data"
    store = RocksEventStore(path, clock=ManualClock(1_700_000_000_000))
    new_topic(store, "t", 2)
    produce(store, 0, record_count=3)
    store.append([OffsetCommitted("g", "t", 0, 3, metadata="meta")])
    store.commit()
    store.close()
    return path


def test_check_on_a_new_directory_creates_an_empty_consistent_store(tmp_path: Path) -> None:
    result = logwright("check", "--data-dir", str(tmp_path / "fresh"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("consistent: 0 events, ")
    assert result.stdout.rstrip().endswith(", 0 entities")
    assert (tmp_path / "fresh" / "CURRENT").exists()


def test_check_on_a_store_reports_its_counts(data_dir: Path) -> None:
    result = logwright("check", "--data-dir", str(data_dir))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("consistent: 3 events, ")


def test_events_json_prints_one_line_per_event_with_its_fields(data_dir: Path) -> None:
    result = logwright("events", "--data-dir", str(data_dir), "--json")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["sequence"], line["type"]) for line in lines] == [
        (1, "TopicCreated"), (2, "RecordsAppended"), (3, "OffsetCommitted")]
    assert lines[0]["topic_id"] == b"t".ljust(16, b"\x00").hex()
    assert lines[0]["partition_ids"] == [0, 1]
    assert lines[1]["record_count"] == 3 and lines[1]["byte_size"] == 161
    assert lines[2] | {"time_ms": 0} == {"sequence": 3, "time_ms": 0, "type": "OffsetCommitted", "group": "g",
                                         "topic": "t", "partition": 0, "offset": 3, "leader_epoch": -1,
                                         "metadata": "meta", "commit_time_ms": 0, "expire_time_ms": -1}
    assert {line["time_ms"] for line in lines} == {1_700_000_000_000}


def test_events_from_a_sequence(data_dir: Path) -> None:
    result = logwright("events", "--data-dir", str(data_dir), "--from", "3")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("3 1700000000000 OffsetCommitted(")
    assert len(result.stdout.splitlines()) == 1


def test_check_names_a_state_row_that_differs_from_the_replay(data_dir: Path) -> None:
    key = keys.state_key("partitions", "0")
    stored = raw.items(data_dir, "state")[key]
    types = default_registry()
    altered = dataclasses.replace(types.decode(stored[8:], "test"), next_offset=99)
    raw.put(data_dir, "state", key, stored[:8] + types.encode(altered))
    result = logwright("check", "--data-dir", str(data_dir))
    assert result.returncode == 1
    assert result.stdout.startswith("INCONSISTENT (1 differences): 3 events")
    assert "partitions/0: replay gives PartitionState(" in result.stderr
    assert "next_offset=99" in result.stderr and "next_offset=3" in result.stderr


def test_check_names_a_state_row_that_is_missing(data_dir: Path) -> None:
    raw.delete(data_dir, "state", [keys.state_key("committed_offsets", "#g")])
    result = logwright("check", "--data-dir", str(data_dir))
    assert result.returncode == 1
    assert "committed_offsets/#g: replay gives OffsetsHead(" in result.stderr and "state holds None" in result.stderr


def test_check_beside_a_running_writer_reads_a_read_only_view(data_dir: Path) -> None:
    writer = RocksEventStore(data_dir)
    try:
        result = logwright("check", "--data-dir", str(data_dir))
    finally:
        writer.close()
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("consistent: 3 events")
