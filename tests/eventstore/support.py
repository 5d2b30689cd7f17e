"""Helpers shared by the event store tests: stored batches with a real RecordBatch v2 header, produce, topics."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

from logwright.core.clock import ManualClock
from logwright.core.config.configs import default_registry
from logwright.core.events import RecordsAppended, TopicCreated
from logwright.core.log.catalog import COUNTER_KEY, create_topic, topic_key
from logwright.core.log.partition_log import PartitionState, append_batch, empty_partition, partition_key
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore

_HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = _HEADER.size
CONFIGS = default_registry()


def fake_batch(base_offset: int, record_count: int, payload: bytes = b"", max_timestamp: int = 0) -> bytes:
    """A RecordBatch v2 header (61 bytes, CRC not computed) followed by ``payload`` as the records.

    The store reads only the base offset and the last offset delta, as the broker does.
    """
    header = _HEADER.pack(base_offset, HEADER_SIZE - 12 + len(payload), 0, 2, 0, 0, record_count - 1,
                          max_timestamp, max_timestamp, -1, -1, -1, record_count)
    return header + payload


def batch_base_offset(data: bytes) -> int:
    return int(_HEADER.unpack_from(data)[0])


def batch_record_count(data: bytes) -> int:
    return int(_HEADER.unpack_from(data)[-1])


def new_topic(store: Any, name: str, partitions: int = 1, configs: tuple[tuple[str, str], ...] = ()) -> TopicCreated:
    """Decide CreateTopics from the store's catalog state and stage the event."""
    event = create_topic(store.state("catalog", topic_key(name)), store.state("catalog", COUNTER_KEY), name,
                         partitions, configs, name.encode().ljust(16, b"\x00")[:16], CONFIGS)
    store.append([event])
    return event


def partition_state(store: Any, partition_id: int) -> PartitionState:
    """A partition's log as the broker reads it: no row is an empty partition (`empty_partition`)."""
    state = store.state("partitions", partition_key(partition_id))
    return state if isinstance(state, PartitionState) else empty_partition(partition_id)


def produce(store: Any, partition_id: int, record_count: int = 10, payload_size: int = 100,
            max_timestamp: int = 1_000) -> RecordsAppended:
    """Stage one produced batch the way the broker does: decide the offset, patch it in, append both."""
    decided = append_batch(partition_state(store, partition_id), record_count, 0, max_timestamp)
    data = fake_batch(decided.base_offset, record_count, bytes([partition_id % 256]) * payload_size, max_timestamp)
    event = RecordsAppended(partition_id, decided.base_offset, record_count, len(data), max_timestamp)
    store.append([event], [StoredBatch(partition_id, decided.base_offset, data)])
    return event


def open_store(opened: list[RocksEventStore], path: Path, **options: Any) -> RocksEventStore:
    """A store at ``path`` on a manual clock, remembered in ``opened`` (the fixture closes it)."""
    options.setdefault("clock", ManualClock(1_700_000_000_000))
    store = RocksEventStore(path, **options)
    opened.append(store)
    return store


def reopen_store(opened: list[RocksEventStore], store: RocksEventStore, **options: Any) -> RocksEventStore:
    """``store`` closed and opened again: what follows reads the disk, not the tail cache."""
    opened.remove(store)
    store.close()
    return open_store(opened, Path(store.path), **options)


def count_preads(monkeypatch: Any) -> list[int]:
    """The lengths of every pread the batch files make from now on (a run of adjacent batches is one)."""
    import os  # noqa: PLC0415 - the real one, before the patch

    from logwright.eventstore import batch_files  # noqa: PLC0415

    reads: list[int] = []
    real_pread = os.pread

    def counted(fd: int, length: int, position: int) -> bytes:
        reads.append(length)
        return real_pread(fd, length, position)

    monkeypatch.setattr(batch_files.os, "pread", counted)
    return reads


def deleted_and_kept_topics(store: Any, payload_size: int) -> tuple[TopicCreated, TopicCreated]:
    """Topics ``t`` (two partitions, to be deleted) and ``kept`` (one), a committed batch in each partition."""
    created = new_topic(store, "t", 2)
    kept = new_topic(store, "kept", 1)
    for partition_id in (*created.partition_ids, *kept.partition_ids):
        produce(store, partition_id, payload_size=payload_size)
    store.commit()
    return created, kept
