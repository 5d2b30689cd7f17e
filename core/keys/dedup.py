"""Business-key deduplication: a record whose key was appended to the partition within the window is not stored.

Kafka and Pulsar deduplicate by producer sequence only, so a producer that cannot replay its sequence (an HTTP
gateway, a job restarted without its state, two instances of one service) writes duplicates. Here a topic
names a dedup key (``logwright.dedup.key``: the record key, or ``header:<name>``) and a window
(``logwright.dedup.window.ms``); the partition remembers each key's offset until the window after its append
ends, in the ``dedup_window`` projection (one row per appended batch, so a restart keeps the window without
replaying the log) and, for lookups, in memory (`WindowIndex`). The window is measured from the original's
append and a duplicate does not extend it.

Scope is the partition, as Kafka's idempotence is: the answer to a duplicate is the original's offset, which
only means something on the same partition; keyed records go to one partition under the default partitioner.
Records without a dedup key (null key, missing header) are always stored.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from hashlib import blake2b as _blake2b
from typing import Any, ClassVar, Final

from logwright.core.events import Event
from logwright.core.events.keys import DedupKeysExpired, DedupKeysIndexed
from logwright.core.keys.key_rows import MAX_DURATION_MS, check_duration
from logwright.core.log.record_keys import KeyedRecord
from logwright.core.projection import Projection

DEDUP_KEY: Final = "logwright.dedup.key"
DEDUP_WINDOW_MS: Final = "logwright.dedup.window.ms"
RECORD_KEY: Final = "record-key"
HEADER_PREFIX: Final = "header:"
MAX_WINDOW_MS: Final = MAX_DURATION_MS
DIGEST_SIZE: Final = 16

KeyOf = Callable[[KeyedRecord], bytes | None]


def key_digest(key: bytes) -> bytes:
    """The 16-byte BLAKE2b digest the index keeps instead of the key (a collision needs ~2^64 keys)."""
    return hashlib.blake2b(key, digest_size=DIGEST_SIZE).digest()


@dataclass(frozen=True, slots=True)
class Deduplication:
    """How one partition's appends are deduplicated, as an admission plugin asks for it.

    ``key_of`` gives a record's dedup key (``None``: the record is never a duplicate); ``source`` names it for
    messages (``record-key``, ``header:order-id``).
    """

    key_of: KeyOf
    window_ms: int
    source: str


def dedup_key_reader(source: str) -> KeyOf:
    """The key function a ``logwright.dedup.key`` value names; ``ValueError`` with a message for others."""
    if source == RECORD_KEY:
        return _record_key
    if source.startswith(HEADER_PREFIX) and source[len(HEADER_PREFIX):]:
        name = source[len(HEADER_PREFIX):]
        return lambda record: record.header(name)
    raise ValueError(f"{DEDUP_KEY} must be '{RECORD_KEY}' or '{HEADER_PREFIX}<header name>', not {source!r}")


def _record_key(record: KeyedRecord) -> bytes | None:
    return record.key


def check_window(value: str) -> None:
    """``logwright.dedup.window.ms``: a whole number of milliseconds, 1 to a year."""
    check_duration(DEDUP_WINDOW_MS, value)


@dataclass(frozen=True, slots=True)
class SeenKey:
    """One appended batch's keys in the window, the row named by its first key: that key's original offset, when
    the window ends (broker clock; all of a batch's keys share it) and the batch's other keys with their offsets.

    Version 1 stored one row per key (no ``others``): such a row reads as a batch of one key.
    """

    VERSION: ClassVar[int] = 2
    offset: int
    expires_at_ms: int
    others: tuple[tuple[bytes, int], ...] = ()

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 (a row per key): no other keys."""
        return [*fields, ()] if version == 1 else fields


@dataclass(frozen=True, slots=True)
class Kept:
    """A record stored; ``digest`` is its key's, to index (``None``: no dedup key)."""

    digest: bytes | None


@dataclass(frozen=True, slots=True)
class DroppedForStored:
    """A duplicate of a record stored before this batch, at ``offset``."""

    digest: bytes
    offset: int


@dataclass(frozen=True, slots=True)
class DroppedForEarlier:
    """A duplicate of record ``index`` of the same batch, which is kept (its offset is known once appended)."""

    digest: bytes
    index: int


Verdict = Kept | DroppedForStored | DroppedForEarlier
Dropped = DroppedForStored | DroppedForEarlier


@dataclass(frozen=True, slots=True)
class Classification:
    """A batch's records judged: each one's key digest (``None``: no dedup key) and, by index, only the dropped.

    Built for the common batch without duplicates: no object per record, one lookup per batch.
    """

    digests: list[bytes | None]
    dropped: dict[int, Dropped]

    def verdicts(self) -> tuple[Verdict, ...]:
        return tuple(self.dropped.get(index) or Kept(digest) for index, digest in enumerate(self.digests))


def classify(records: Sequence[KeyedRecord], deduplication: Deduplication,
             recall: Callable[[bytes], tuple[int, int] | None], now_ms: int) -> tuple[Verdict, ...]:
    """Each record's fate, in batch order: ``recall(digest)`` is the partition's index, (original offset, window
    end); an entry at or past its end counts as absent (the sweep may not have removed it yet)."""
    key_of = deduplication.key_of
    return classify_keys([key_of(record) for record in records], lambda digests: [recall(d) for d in digests],
                         now_ms).verdicts()


def classify_keys(keys: Sequence[bytes | None],
                  recall_many: Callable[[list[bytes]], Sequence[tuple[int, int] | None]], now_ms: int
                  ) -> Classification:
    """`classify` on the records' dedup keys; ``recall_many(digests)`` looks up every keyed record of the batch at
    once (the index's (offset, window end) in the same order, ``None`` for absent)."""
    digests: list[bytes | None] = [None if key is None else _blake2b(key, digest_size=DIGEST_SIZE).digest()
                                   for key in keys]
    present = [digest for digest in digests if digest is not None]
    seen = recall_many(present)
    if not any(seen) and len(set(present)) == len(present):
        return Classification(digests, {})
    windowed = {digest: entry[0] for digest, entry in zip(present, seen, strict=True)
                if entry is not None and now_ms < entry[1]}
    dropped: dict[int, Dropped] = {}
    first_in_batch: dict[bytes, int] = {}
    for index, digest in enumerate(digests):
        if digest is None:
            continue
        offset = windowed.get(digest)
        if offset is not None:
            dropped[index] = DroppedForStored(digest, offset)
        elif digest in first_in_batch:
            dropped[index] = DroppedForEarlier(digest, first_in_batch[digest])
        else:
            first_in_batch[digest] = index
    return Classification(digests, dropped)


def entity_key(partition_id: int, digest: bytes) -> str:
    return f"{partition_id}/{digest.hex()}"


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, DedupKeysIndexed):
        return (entity_key(event.partition_id, event.entries[0][0]),) if event.entries else ()
    if isinstance(event, DedupKeysExpired):
        return tuple(entity_key(partition_id, digest) for partition_id, digest in event.expired)
    return ()


def _evolve(state: SeenKey | None, event: Event, key: str) -> SeenKey | None:
    if isinstance(event, DedupKeysIndexed):
        return SeenKey(event.entries[0][1], event.expires_at_ms, event.entries[1:])
    if isinstance(event, DedupKeysExpired):
        return None
    return state


DEDUP_WINDOW: Projection[SeenKey] = Projection(
    name="dedup_window", entity_keys=_keys, evolve=_evolve, handles=frozenset({DedupKeysIndexed, DedupKeysExpired}))
"""One row per appended batch in a window, named (partition, its first key's digest); registered by the
``key_dedup`` plugin. A row per key cost a fold, an encoding and a RocksDB write per record (4.5 us of the
8 us a record cost); lookups go through `WindowIndex` instead of the rows."""


class WindowIndex:
    """Every key of the window by partition and digest, (original offset, window end), in memory beside the
    `DEDUP_WINDOW` rows: what a produce looks its keys up in. Built from the rows (at start-up, after a store
    reload), extended as batches are staged, and pruned as windows end (in the order they were added; the sweep
    removes the rows)."""

    __slots__ = ("_ends", "_keys")

    def __init__(self) -> None:
        self._keys: dict[int, dict[bytes, tuple[int, int]]] = {}
        self._ends: deque[tuple[int, int, tuple[tuple[bytes, int], ...]]] = deque()

    @classmethod
    def of_rows(cls, rows: Iterable[tuple[str, object]]) -> WindowIndex:
        index = cls()
        batches = []
        for name, seen in rows:
            if isinstance(seen, SeenKey):
                partition, _, digest = name.partition("/")
                entries = ((bytes.fromhex(digest), seen.offset), *seen.others)
                batches.append((seen.expires_at_ms, int(partition), entries))
        for expires_at_ms, partition_id, entries in sorted(batches, key=lambda batch: batch[0]):
            index.add(partition_id, expires_at_ms, entries)
        return index

    def partition(self, partition_id: int) -> Mapping[bytes, tuple[int, int]]:
        return self._keys.get(partition_id, _NOTHING)

    def add(self, partition_id: int, expires_at_ms: int, entries: tuple[tuple[bytes, int], ...]) -> None:
        """A batch's keys, indexed (a key already there with a later window end keeps it)."""
        keys = self._keys.setdefault(partition_id, {})
        for digest, offset in entries:
            known = keys.get(digest)
            if known is None or known[1] <= expires_at_ms:
                keys[digest] = (offset, expires_at_ms)
        self._ends.append((expires_at_ms, partition_id, entries))

    def prune(self, now_ms: int) -> None:
        """Forget the keys of batches whose window ended, from the oldest added on."""
        ends = self._ends
        while ends and ends[0][0] <= now_ms:
            expires_at_ms, partition_id, entries = ends.popleft()
            keys = self._keys.get(partition_id, {})
            for digest, offset in entries:
                if keys.get(digest) == (offset, expires_at_ms):
                    del keys[digest]


_NOTHING: Mapping[bytes, tuple[int, int]] = {}


def expired_entries(entities: Sequence[tuple[str, SeenKey]], now_ms: int, limit: int) -> tuple[tuple[int, bytes], ...]:
    """Up to ``limit`` entries whose window has ended, as a `DedupKeysExpired` names them."""
    expired: list[tuple[int, bytes]] = []
    for name, seen in entities:
        if seen.expires_at_ms <= now_ms:
            partition, _, digest = name.partition("/")
            expired.append((int(partition), bytes.fromhex(digest)))
            if len(expired) >= limit:
                break
    return tuple(expired)
