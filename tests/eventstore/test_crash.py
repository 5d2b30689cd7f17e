"""Kill a writing process with SIGKILL at random moments: what it confirmed is there, nothing is half-written.

The child (`crash_writer`) prints a line after each commit returns; the parent reads lines while the child
runs and kills it 0.3-1.5 s after its first line. Each round reopens the same store (recovery) and the next
child continues writing into it, so recovery after a crash is exercised repeatedly.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from logwright.core.events import OffsetCommitted, RecordsAppended
from logwright.eventstore.check import check_store
from logwright.eventstore.interface import Durability
from logwright.eventstore.rocksdb import RocksEventStore

from .contract import BIG
from .support import batch_base_offset, batch_record_count

REPOSITORY = Path(__file__).resolve().parents[2]
LOGWRIGHT = str(Path(sys.executable).with_name("logwright"))
ROUNDS = 3

pytestmark = pytest.mark.slow


def run_and_kill(data_dir: Path, durability: Durability, seed: int, kill_after: float) -> list[tuple[int, ...]]:
    """The lines the child printed before SIGKILL (all of them: the pipe is drained after the kill)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.eventstore.crash_writer", str(data_dir), durability.value, str(seed)],
        cwd=REPOSITORY, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert child.stdout is not None
    lines: list[tuple[int, ...]] = []
    first_line = threading.Event()

    def read() -> None:
        for line in child.stdout:  # type: ignore[union-attr]
            if line.endswith("\n"):
                lines.append(tuple(int(field) for field in line.split()))
                first_line.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started = first_line.wait(timeout=30)
    if started:
        time.sleep(kill_after)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    reader.join(timeout=30)
    stderr = child.stderr.read() if child.stderr else ""
    assert started, f"the writer printed nothing: {stderr}"
    assert child.returncode == -signal.SIGKILL, stderr
    return lines


def verify(data_dir: Path, confirmed: list[tuple[int, ...]], context: str) -> int:
    store = RocksEventStore(data_dir)
    try:
        last_confirmed = confirmed[-1][0]
        assert store.committed_sequence >= last_confirmed, context
        events = [logged.event for logged in store.read_events()]
        assert len(events) == store.committed_sequence, f"the event log has holes ({context})"
        appended = {(e.partition_id, e.base_offset): e for e in events if isinstance(e, RecordsAppended)}
        for sequence, partition_id, base_offset, record_count in confirmed:
            event = appended.get((partition_id, base_offset))
            assert event is not None and event.record_count == record_count, f"lost confirmed append ({context})"
            assert event in events[sequence - 2:sequence], f"append not at sequence {sequence} ({context})"
        stored = {}
        for partition_id in {key[0] for key in appended} | {0, 1}:
            next_base = 0
            for data in store.read_batches(partition_id, 0, BIG):
                base = batch_base_offset(data)
                assert base == next_base, f"partition {partition_id} jumps from {next_base} to {base} ({context})"
                next_base = base + batch_record_count(data)
                stored[(partition_id, base)] = (batch_record_count(data), len(data))
        assert stored == {key: (e.record_count, e.byte_size) for key, e in appended.items()}, (
            f"a batch without its RecordsAppended or the reverse ({context})")
        commits = [e for e in events if isinstance(e, OffsetCommitted)]
        assert commits, context
        report = check_store(store)
        assert report.consistent, f"{report.differences} ({context})"
        return store.committed_sequence
    finally:
        store.close()


@pytest.mark.parametrize("durability", [Durability.WAL, Durability.FSYNC])
def test_a_killed_writer_loses_nothing_it_confirmed_and_leaves_nothing_half_written(
    tmp_path: Path, durability: Durability
) -> None:
    seed = random.randrange(2**32)
    chance = random.Random(seed)
    data_dir = tmp_path / "data"
    previous = 0
    for round_number in range(ROUNDS):
        kill_after = chance.uniform(0.3, 1.5)
        context = f"seed {seed}, round {round_number}, killed after {kill_after:.2f} s, {durability.value}"
        confirmed = run_and_kill(data_dir, durability, chance.randrange(2**32), kill_after)
        assert confirmed[0][0] > previous, f"the writer did not continue the log ({context})"
        previous = verify(data_dir, confirmed, context)
        result = subprocess.run([LOGWRIGHT, "check", "--data-dir", str(data_dir)], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 0, f"{result.stdout}{result.stderr} ({context})"
        assert result.stdout.startswith(f"consistent: {previous} events"), context
