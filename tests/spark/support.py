"""A known event log written through the real event store: topics, records in every codec, commits."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from logwright.compat.wire.record_batch import Compression, Record, build_batch
from logwright.core.events import OffsetCommitted
from logwright.core.log.catalog import topic_key
from logwright.core.log.partition_log import append_batch, empty_partition, partition_key
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore

from tests.eventstore.support import new_topic


@dataclass
class WrittenLog:
    """What the log holds, kept independently of the store to compare the data source with."""

    records: dict[tuple[str, int], list[Record]] = field(default_factory=dict)
    event_types: list[str] = field(default_factory=list)


def produce_records(store: RocksEventStore, topic: str, partition: int, records: list[Record],
                    compression: Compression, written: WrittenLog) -> None:
    """Stage one real RecordBatch v2 the way the broker does: decide the offset, build, append."""
    partition_id = store.state("catalog", topic_key(topic)).partition_ids[partition]
    state = store.state("partitions", partition_key(partition_id)) or empty_partition(partition_id)
    data = build_batch(records, state.next_offset, compression)
    event = append_batch(state, len(records), len(data), max(r.timestamp for r in records))
    store.append([event], [StoredBatch(partition_id, event.base_offset, data)])
    numbered = written.records.setdefault((topic, partition), [])
    numbered.extend(Record(event.base_offset + i, r.timestamp, r.key, r.value, r.headers)
                    for i, r in enumerate(records))
    written.event_types.append("RecordsAppended")


def write_known_log(path: Path, batches_per_codec: int = 3) -> WrittenLog:
    """Two topics; every codec on topic ``codecs``; keys, null values and headers; a group's commits."""
    written = WrittenLog()
    store = RocksEventStore(path)
    try:
        new_topic(store, "codecs", partitions=2)
        new_topic(store, "plain", partitions=1)
        written.event_types += ["TopicCreated", "TopicCreated"]
        timestamp = 1_700_000_000_000
        for batch in range(batches_per_codec):
            for codec in Compression:
                records = [Record(0, timestamp + i, f"k{batch}-{i}".encode() if i % 3 else None,
                                  None if i == 4 else f"{codec.name} value {batch}.{i}".encode() * (i + 1),
                                  (("h", codec.name.encode()), ("empty", None)) if i % 2 else ())
                           for i in range(7)]
                produce_records(store, "codecs", batch % 2, records, codec, written)
                timestamp += 100
        produce_records(store, "plain", 0, [Record(0, timestamp, b"k", b"v")], Compression.NONE, written)
        store.append([OffsetCommitted("readers", "codecs", 0, 7, commit_time_ms=timestamp)])
        store.append([OffsetCommitted("readers", "codecs", 1, 14, metadata="m", commit_time_ms=timestamp)])
        written.event_types += ["OffsetCommitted", "OffsetCommitted"]
        store.commit()
    finally:
        store.close()
    return written
