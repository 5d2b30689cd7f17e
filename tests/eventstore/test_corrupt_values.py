"""Garbage in a stored value is reported as CorruptState naming the column family and the key; the rest stays
readable, and a healthy copy of the same store still checks consistent.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from logwright.core import CORE_PROJECTIONS
from logwright.core.clock import ManualClock
from logwright.core.errors import CorruptState
from logwright.core.events import OffsetCommitted, RecordsAppended
from logwright.eventstore import keys
from logwright.eventstore.rocksdb import RocksEventStore

from . import raw
from .contract import BIG, EVENT_COUNTS, with_event_counts
from .support import new_topic, produce

LOGWRIGHT = str(Path(sys.executable).with_name("logwright"))


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[Path, Path]:
    """A committed store (topic, three batches, a group commit) and a healthy copy made while it was closed."""
    path, healthy = tmp_path / "store", tmp_path / "healthy"
    store = RocksEventStore(path, clock=ManualClock())
    new_topic(store, "t", 2)
    for partition_id in (0, 1, 0):
        produce(store, partition_id)
    store.append([OffsetCommitted("g", "t", 0, 20)])
    store.commit()
    store.close()
    shutil.copytree(path, healthy)
    return path, healthy


def logwright_check(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LOGWRIGHT, "check", "--data-dir", str(path)], capture_output=True, text=True, timeout=60)


def assert_healthy_copy_checks_consistent(healthy: Path) -> None:
    result = logwright_check(healthy)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("consistent: 5 events")


@pytest.mark.parametrize("garbage", [b"\x01\x02", keys.encode_sequence(5) + b"\xc1 not msgpack"],
                         ids=["shorter-than-a-sequence", "undecodable"])
def test_a_garbage_state_row_refuses_the_open_and_names_the_row(damaged: tuple[Path, Path], garbage: bytes) -> None:
    path, healthy = damaged
    key = keys.state_key("partitions", "1")
    untouched = {family: raw.items(path, family) for family in ("events", "records")}
    raw.put(path, "state", key, garbage)
    for read_only in (False, True):
        with pytest.raises(CorruptState) as refused:
            RocksEventStore(path, read_only=read_only)
        assert "column family 'state'" in str(refused.value)
        assert repr(key) in str(refused.value)
    assert {family: raw.items(path, family) for family in ("events", "records")} == untouched
    assert raw.items(path, "state")[keys.state_key("partitions", "0")] == raw.items(healthy, "state")[
        keys.state_key("partitions", "0")]
    broken = logwright_check(path)
    assert broken.returncode != 0 and "CorruptState" in broken.stderr
    assert_healthy_copy_checks_consistent(healthy)


def test_a_garbage_event_is_named_when_read_and_the_rest_stays_readable(damaged: tuple[Path, Path]) -> None:
    path, healthy = damaged
    sequence = 3
    raw.put(path, "events", keys.event_key(sequence), b"\xc1\x00garbage")
    store = RocksEventStore(path)
    try:
        with pytest.raises(CorruptState) as refused:
            list(store.read_events())
        assert "column family 'events'" in str(refused.value)
        assert keys.event_key(sequence).hex() in str(refused.value)
        assert [logged.sequence for logged in store.read_events(1, 2)] == [1, 2]
        assert [type(logged.event) for logged in store.read_events(4)] == [RecordsAppended, OffsetCommitted]
        assert len(store.read_batches(0, 0, BIG)) == 2 and len(store.read_batches(1, 0, BIG)) == 1
        assert store.state("partitions", "0").next_offset == 20
        assert store.state("committed_offsets", "t/0/g").offset == 20
    finally:
        store.close()
    broken = logwright_check(path)
    assert broken.returncode != 0 and keys.event_key(sequence).hex() in broken.stderr
    assert_healthy_copy_checks_consistent(healthy)


def test_a_garbage_event_in_a_tail_to_replay_refuses_the_open(damaged: tuple[Path, Path]) -> None:
    path, _ = damaged
    raw.put(path, "events", keys.event_key(2), b"\xc1")
    with pytest.raises(CorruptState, match=f"column family 'events' key {keys.event_key(2).hex()}"):
        RocksEventStore(path, projections=(*CORE_PROJECTIONS, EVENT_COUNTS), types=with_event_counts())
