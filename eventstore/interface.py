"""The EventStore port: what the broker, `logwright check` and Spark may rely on from any storage engine.

Appends are staged and made durable together by `commit` (group commit by a single writer): the
caller answers a client only after the `commit` that covers its append has returned. Projection state
is updated at `append`, so later decisions in the same turn see it; record reads see committed data
only. Commit listeners learn which events became durable (to wake long polls, move high watermarks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from logwright.core.events import Event


class Durability(StrEnum):
    WAL = "wal"
    """Written to RocksDB's write-ahead log before the answer: survives a process crash."""
    FSYNC = "fsync"
    """The write-ahead log is fsynced (group-committed) before the answer: survives power loss."""


@dataclass(frozen=True, slots=True)
class StoredBatch:
    """A record batch to store at ``(partition_id, base_offset)``, its offset already patched in; a view only into a
    buffer no one changes again (a client's request frame: `record_batch.numbered`)."""

    partition_id: int
    base_offset: int
    data: bytes | memoryview


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    sequence: int
    time_ms: int
    event: Event


CommitListener = Callable[[Sequence[LoggedEvent]], None]


class EventStore(Protocol):
    @property
    def last_sequence(self) -> int:
        """The sequence of the newest appended event (staged or committed); 0 for an empty log."""

    @property
    def committed_sequence(self) -> int:
        """The sequence of the newest durable event."""

    def append(
        self,
        events: Sequence[Event],
        batches: Sequence[StoredBatch] = (),
        index_entries: Sequence[tuple[bytes, bytes]] = (),
    ) -> int:
        """Stage events (and the batches they describe) atomically; returns the last sequence."""

    def commit(self) -> None:
        """Write everything staged in one WriteBatch under the store's durability setting."""

    def state(self, projection: str, entity: str) -> Any:
        """An entity's current state (including staged appends), or ``None``."""

    def entities(self, projection: str) -> Mapping[str, Any]:
        """Every entity of a projection; read-only view."""

    def read_batches(
        self, partition_id: int, start_offset: int, max_bytes: int, end_offset: int | None = None
    ) -> list[bytes]:
        """Committed batches from the one holding ``start_offset`` on, at least one, up to ``max_bytes``."""

    def read_events(self, from_sequence: int = 1, to_sequence: int | None = None) -> Iterator[LoggedEvent]:
        """Committed events in sequence order, ``to_sequence`` inclusive."""

    def add_commit_listener(self, listener: CommitListener,
                            event_types: Iterable[type[Event]] | None = None) -> None: ...

    def checkpoint(self, path: str) -> None:
        """A consistent, openable copy of the committed store at ``path`` (for Spark and backups)."""

    def close(self) -> None: ...
