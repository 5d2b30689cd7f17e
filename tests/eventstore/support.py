"""Helpers shared by the event store tests: stored batches with a real RecordBatch v2 header, produce, topics."""

from __future__ import annotations

import struct
from typing import Any

from logwright.core.config.configs import default_registry
from logwright.core.events import RecordsAppended, TopicCreated
from logwright.core.log.catalog import COUNTER_KEY, create_topic, topic_key
from logwright.core.log.partition_log import append_batch, partition_key
from logwright.eventstore.interface import StoredBatch

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


def produce(store: Any, partition_id: int, record_count: int = 10, payload_size: int = 100,
            max_timestamp: int = 1_000) -> RecordsAppended:
    """Stage one produced batch the way the broker does: decide the offset, patch it in, append both."""
    decided = append_batch(store.state("partitions", partition_key(partition_id)), record_count, 0, max_timestamp)
    data = fake_batch(decided.base_offset, record_count, bytes([partition_id % 256]) * payload_size, max_timestamp)
    event = RecordsAppended(partition_id, decided.base_offset, record_count, len(data), max_timestamp)
    store.append([event], [StoredBatch(partition_id, decided.base_offset, data)])
    return event
