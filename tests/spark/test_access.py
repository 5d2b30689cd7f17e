"""Scratch directories of secondary instances: gone once the instance is open, so a reader killed at any
moment after that (Spark SIGTERMs a stopped query's source runner mid-poll) leaves nothing; those of a
process killed during the open itself are swept by the next reader."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from logwright.core.events import OffsetCommitted
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.spark.access import close_shared_readers, secondary_store, shared_reader, sweep_stale
from logwright.spark.datasource import EventRange, Settings, read_events

from .support import write_known_log

POLLER = """
import sys
from logwright.spark.datasource import LogwrightStreamReader, Settings
from pyspark.sql.types import StructType

reader = LogwrightStreamReader(Settings.parse({"path": sys.argv[1], "scratchDir": sys.argv[2]}), StructType())
while True:
    print(reader.latestOffset()["sequence"], flush=True)
"""


def test_a_secondary_directory_is_gone_once_the_instance_is_open(tmp_path: Path) -> None:
    write_known_log(tmp_path / "data", batches_per_codec=1)
    with secondary_store(str(tmp_path / "data"), str(tmp_path)) as store:
        assert [p.name for p in tmp_path.iterdir()] == ["data"]
        assert len(list(store.read_events(1, store.last_sequence))) == store.last_sequence > 0
    assert [p.name for p in tmp_path.iterdir()] == ["data"]


def test_tasks_share_one_reader_per_process_which_catches_up_only_for_a_later_range(tmp_path: Path) -> None:
    write_known_log(tmp_path / "data", batches_per_codec=1)
    writer = RocksEventStore(tmp_path / "data")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    try:
        planned = writer.last_sequence
        reader = shared_reader(str(tmp_path / "data"), str(scratch), planned)
        writer.append([OffsetCommitted("sharer", "codecs", 0, 3)])
        writer.commit()
        assert shared_reader(str(tmp_path / "data"), str(scratch), planned) is reader
        assert reader.last_sequence == planned  # not caught up: nothing past the plan was asked for
        settings = Settings.parse({"path": str(tmp_path / "data"), "scratchDir": str(scratch)})
        (row,) = read_events(settings, EventRange(planned + 1, planned + 1))
        assert (row[0], row[3], row[7]) == (planned + 1, "OffsetCommitted", "sharer")
        assert shared_reader(str(tmp_path / "data"), str(scratch), planned + 1) is reader
        assert len([row for row in read_events(settings, EventRange(1, planned))]) == planned
        assert list(scratch.iterdir()) == []
    finally:
        close_shared_readers()
        writer.close()


def test_a_polling_stream_reader_killed_at_any_moment_leaves_nothing(tmp_path: Path) -> None:
    write_known_log(tmp_path / "data", batches_per_codec=1)
    writer = RocksEventStore(tmp_path / "data")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    poller = subprocess.Popen([sys.executable, "-c", POLLER, str(tmp_path / "data"), str(scratch)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert poller.stdout is not None
        first = int(poller.stdout.readline())
        assert first == writer.last_sequence
        writer.append([OffsetCommitted("poller", "codecs", 0, 1)])
        writer.commit()
        while int(poller.stdout.readline()) != writer.last_sequence:  # one secondary, caught up at every poll
            pass
        for _ in range(20):
            poller.stdout.readline()
        poller.send_signal(signal.SIGTERM)  # as Spark stops a query's source runner, wherever it is
        poller.wait(30)
    finally:
        poller.kill()
        writer.close()
    assert list(scratch.iterdir()) == []


def test_only_directories_of_dead_processes_are_swept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"logwright-secondary-{int(dead.stdout)}-abc"
    live = tmp_path / f"logwright-secondary-{os.getpid()}-def"
    other = tmp_path / "something-else"
    for path in (stale, live, other):
        path.mkdir()
    assert sweep_stale(str(tmp_path)) == [stale.name]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])
