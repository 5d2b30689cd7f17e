"""The backlog quotas' part of `logwright check`: `core.backlog.replay` over a store's stored batches.

Passed to `check_store` by the command line; it folds the watched partitions' appends in the same pass over the
log as the projections, then compares them with the stored batch headers and each subscription's backlog
computed from refolded and from stored positions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from logwright.compat.wire.record_batch import parse_header
from logwright.core.backlog.batch_index import BatchExtent
from logwright.core.backlog.replay import Appended, States, Watched, appended_batches, differences, watched_partitions
from logwright.core.projection import Projection
from logwright.eventstore.rocksdb import RocksEventStore

READ_CHUNK_BYTES = 1 << 20


class BacklogCheck:
    """A `StoreCheck`: ``projection`` once the stored states are read, ``differences`` after the refold."""

    def __init__(self) -> None:
        self._watched: dict[int, Watched] = {}
        self._projection: Projection[Appended] | None = None

    def projection(self, stored: States) -> Projection[Any]:
        self._watched = watched_partitions(stored)
        self._projection = appended_batches(self._watched)
        return self._projection

    def differences(self, store: RocksEventStore, rebuilt: States, stored: States) -> list[str]:
        appended: Mapping[str, Appended] = rebuilt.get(self._projection.name, {}) if self._projection else {}
        return differences(self._watched, appended, rebuilt, stored,
                           lambda partition_id, start: stored_extents(store, partition_id, start))


def stored_extents(store: RocksEventStore, partition_id: int, from_offset: int) -> list[BatchExtent]:
    """The stored batches holding ``from_offset`` and after, from their headers (the tracker reads them so)."""
    extents: list[BatchExtent] = []
    offset = from_offset
    while batches := store.read_batches(partition_id, offset, READ_CHUNK_BYTES):
        for batch in batches:
            header = parse_header(batch)
            span = header.last_offset_delta + 1
            extents.append(BatchExtent(header.base_offset, span, len(batch), header.max_timestamp))
            offset = header.base_offset + span
    return extents
