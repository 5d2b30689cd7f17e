"""The ``logwright`` data source against a log written through the real event store on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from logwright.core.events import OffsetCommitted
from logwright.eventstore.codec import event_to_json
from logwright.eventstore.rocksdb import RocksEventStore

from .support import WrittenLog, write_known_log

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def known_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, WrittenLog]:
    path = tmp_path_factory.mktemp("spark") / "data"
    return path, write_known_log(path)


def test_events_come_back_row_for_row_across_several_input_partitions(spark: Any, known_log: Any) -> None:
    path, written = known_log
    frame = spark.read.format("logwright").option("path", str(path)).option("eventsPerPartition", "4").load()
    assert frame.rdd.getNumPartitions() == -(-len(written.event_types) // 4)
    rows = frame.orderBy("sequence").collect()
    store = RocksEventStore(path, read_only=True)
    try:
        logged = list(store.read_events())
    finally:
        store.close()
    assert [row.sequence for row in rows] == list(range(1, len(written.event_types) + 1))
    assert [row.type for row in rows] == written.event_types
    for row, expected in zip(rows, logged, strict=True):
        assert row.time_ms == expected.time_ms
        fields = event_to_json(expected.event)
        assert row.fields.keys() == fields.keys()
        for name, value in fields.items():
            assert row.fields[name] == value if isinstance(value, str) or value is None else (
                json.loads(row.fields[name]) == value)
    appended = [row for row in rows if row.type == "RecordsAppended"]
    assert all(row.last_offset - row.first_offset + 1 == int(row.fields["record_count"]) for row in appended)
    commit = next(row for row in rows if row.type == "OffsetCommitted" and row.fields["metadata"] == "m")
    assert (commit.group, commit.topic, commit.partition, commit.first_offset) == ("readers", "codecs", 1, 14)


def test_records_of_every_codec_are_decoded(spark: Any, known_log: Any) -> None:
    path, written = known_log
    frame = (spark.read.format("logwright").option("path", str(path)).option("table", "records")
             .option("recordsPerPartition", "10").load())
    assert frame.rdd.getNumPartitions() > len(written.records)
    rows = frame.collect()
    got = {(r.topic, r.partition, r.offset):
           (r.timestamp_ms, r.key, r.value, tuple((h.key, h.value) for h in r.headers)) for r in rows}
    expected = {(topic, partition, record.offset): (record.timestamp, record.key, record.value, record.headers)
                for (topic, partition), records in written.records.items() for record in records}
    assert len(rows) == len(expected)
    assert got == expected
    codecs = {value.split(b" ")[0].decode() for _, _, value, _ in got.values() if value and b"value" in value}
    assert codecs == {"NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD"}


def test_a_missing_directory_is_refused_with_its_path(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no logwright data directory"):
        spark.read.format("logwright").option("path", str(tmp_path / "nothing")).load().collect()


WORKER_SLOW_TO_START = "Python worker failed to connect back"


def started_and_caught_up(stream: Any, name: str, attempts: int = 3) -> Any:
    """The stream's query into a memory table ``name``, once it has processed what is available.

    Spark gives a streaming source's Python worker a fixed 10 s to connect back (createSimpleWorker, not
    configurable in 4.3); on a loaded machine an interpreter importing pyspark and pyarrow can take longer,
    and the query dies before its first batch (seen in CI-like runs). Only that start is tried again."""
    for attempt in range(1, attempts + 1):
        query = stream.writeStream.format("memory").queryName(name).start()
        try:
            query.processAllAvailable()
            return query
        except Exception as error:
            query.stop()
            if WORKER_SLOW_TO_START not in str(error) or attempt == attempts:
                raise
    raise AssertionError("unreachable")


def test_the_stream_sees_every_event_once_across_micro_batches_with_appends_between(
        spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "data"
    write_known_log(path, batches_per_codec=1)
    writer = RocksEventStore(path)  # the primary stays open and writing: the stream reads secondaries
    query = None
    try:
        first_end = writer.last_sequence
        stream = (spark.readStream.format("logwright").option("path", str(path))
                  .option("eventsPerPartition", "3").option("scratchDir", str(tmp_path)).load())
        query = started_and_caught_up(stream, "logwright_stream")
        for round_ in range(2):
            writer.append([OffsetCommitted("streamer", "codecs", 0, round_ * 10 + i) for i in range(5)])
            writer.commit()
            query.processAllAvailable()
        batches = [progress["numInputRows"] for progress in query.recentProgress if progress["numInputRows"]]
        sequences = [row.sequence for row in spark.sql("select sequence from logwright_stream").collect()]
        assert sorted(sequences) == list(range(1, writer.last_sequence + 1))
        assert batches == [first_end, 5, 5]
    finally:
        if query is not None:
            query.stop()
        writer.close()
    # Stopping SIGTERMs the source runner, often while it polls: its secondary's directory was gone already
    assert [p.name for p in tmp_path.iterdir()] == ["data"]
