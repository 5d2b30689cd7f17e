"""Incremental fetch sessions (KIP-227), as Kafka 4.4 keeps them: sans I/O, the broker clock given.

Why: a consumer of many partitions names every one of them in every full Fetch and is answered about every one,
changed or not. In a session the broker remembers what the consumer last asked (fetch offset, limits, epochs) and
what it last answered (high watermark, log start offset); the consumer names only what changed, the answer carries
only partitions with records, errors or moved offsets. The Java client, franz-go and others open one whenever the
broker gives a session id (librdkafka 2.x never asks).

The rules are Kafka's (`FetchManager`, `FetchSession`, `FetchSessionCacheShard` in Kafka 4.4's server module):

- a full fetch (epoch 0 or -1) closes the session it names; epoch 0 may open a new one once it is answered (the
  answer's partitions, in its order, each with what it was asked and answered); epoch -1 never does;
- an incremental fetch (id and epoch > 0) must name a session this broker has (else FETCH_SESSION_ID_NOT_FOUND) at
  the epoch it expects (else INVALID_FETCH_SESSION_EPOCH) and in the same naming, names or topic ids (v13+; else
  FETCH_SESSION_TOPIC_ID_ERROR); its partitions update or join the session, its forgotten ones leave it, and a
  session left empty is closed and the fetch answered without one. Its epoch moves on when the request is taken,
  so a duplicate of an answered request fails;
- an incremental answer carries a partition only when it has records, an error, or a high watermark or log start
  offset other than the last one answered; one answered with records moves to the end of the session's order, so
  under ``max_bytes`` no partition starves;
- ``max.incremental.fetch.session.cache.slots`` sessions at most (1,000), divided among 8 shards as Kafka divides
  them (125 each; fewer than 8 slots hold none). A new session goes to the next shard in turn; in a full shard it
  takes the slot of the least recently used session idle over `EVICTION_MS`, otherwise of the smallest session
  older than `EVICTION_MS` if that is smaller than the new one; failing both, the fetch is answered without a
  session (session id 0), which clients take as "send full fetches".

logwright's own additions: ``logwright.fetch.session.cache.partitions`` (`PARTITIONS_CACHED`, 200,000) bounds the
partitions held across all sessions (Kafka's cache counts only sessions), so forged requests naming a million
partitions each cannot fill memory: a session that would go past it is not opened, and an incremental fetch that
would is closed and answered FETCH_SESSION_ID_NOT_FOUND, after which clients start over with a full fetch. And a
session's read skips the partitions that cannot have anything to answer (`FetchSession.read_as_of`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

INVALID_SESSION_ID = 0
INITIAL_EPOCH, FINAL_EPOCH = 0, -1
EVICTION_MS = 120_000
"""Kafka's ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS`` (not a config): a session idle this long may be evicted by
any new one, and one created this long ago by one with more partitions."""
SHARDS = 8
"""Kafka's ``NumFetchSessionCacheShards``: the slots are divided among this many shards."""
SESSION_ID_RANGE = (2**31 - 1) // SHARDS
"""The ids of shard n are n * this up to (n + 1) * this (Kafka's ``sessionIdRange``)."""
PARTITIONS_CACHED = 200_000
"""Partitions held across all sessions at most, by default (logwright's bound; ~300 bytes each)."""

PartitionKey = tuple[object, int]
"""A partition as the session names it: topic name (v7-v12) or topic id (v13+; a `uuid.UUID`), and index."""


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``, as Kafka's ``FetchMetadata.nextEpoch``: wraps to 1, never back to 0."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == 2**31 - 1 else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    """What the consumer last asked of a partition (named as a request's partition is, so a read takes either) and
    what it was last answered."""

    key: PartitionKey
    fetch_offset: int
    partition_max_bytes: int
    log_start_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    high_watermark: int = -1
    local_log_start: int = -1

    @property
    def partition(self) -> int:
        return self.key[1]

    def asked(self, fetch_offset: int, partition_max_bytes: int, log_start_offset: int, current_leader_epoch: int,
              last_fetched_epoch: int) -> None:
        self.fetch_offset, self.partition_max_bytes, self.log_start_offset = (
            fetch_offset, partition_max_bytes, log_start_offset)
        self.current_leader_epoch, self.last_fetched_epoch = current_leader_epoch, last_fetched_epoch

    def must_answer(self, has_records: bool, error: int, high_watermark: int, log_start: int) -> bool:
        """Whether an incremental answer carries this partition; remembers what it carries (Kafka's
        ``maybeUpdateResponseData``: an error forgets the high watermark, so the partition is answered again once
        the error is gone)."""
        answer = has_records
        if self.high_watermark != high_watermark:
            answer, self.high_watermark = True, high_watermark
        if self.local_log_start != log_start:
            answer, self.local_log_start = True, log_start
        if error:
            answer, self.high_watermark = True, -1
        return answer


@dataclass(slots=True)
class FetchSession:
    session_id: int
    uses_topic_ids: bool
    created_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[PartitionKey, CachedPartition] = field(default_factory=dict)
    """In the order a read takes them (insertion order; a partition answered with records is moved to the end)."""
    cached_size: int = 0
    """The partition count as of the last `touch`: what eviction compares, as Kafka's ``cachedSize``."""
    asked_now: set[PartitionKey] = field(default_factory=set)
    """The partitions the request being answered named (joined or updated): read whatever their offsets."""
    read_as_of: object = None
    """What the broker said of its catalog and log starts when the session's last answer was read; while it says
    the same, a partition whose high watermark is the one last answered and its fetch offset cannot have anything
    to answer, and the read skips it (logwright's; Kafka reads every partition of a session)."""

    def update(self, asked: Iterable[tuple[PartitionKey, int, int, int, int, int]], forgotten: Iterable[PartitionKey],
               room: int) -> bool:
        """Apply an incremental request: partitions asked join or are updated, forgotten ones leave. False, and
        nothing changed, when more than ``room`` partitions would join."""
        asked = list(asked)
        if sum(1 for entry in asked if entry[0] not in self.partitions) > room:
            return False
        self.asked_now = {entry[0] for entry in asked}
        for key, fetch_offset, max_bytes, log_start, leader_epoch, last_fetched in asked:
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(key, fetch_offset, max_bytes, log_start, leader_epoch,
                                                       last_fetched)
            else:
                cached.asked(fetch_offset, max_bytes, log_start, leader_epoch, last_fetched)
        for key in forgotten:
            self.partitions.pop(key, None)
        return True

    def answered_with_records(self, key: PartitionKey) -> None:
        """Move the partition to the end of the order, as Kafka does for one whose answer carried records."""
        cached = self.partitions.pop(key, None)
        if cached is not None:
            self.partitions[key] = cached


class Refusal(Enum):
    """Why an incremental fetch is refused: the error code Kafka answers it with (the whole request)."""

    NOT_FOUND = 70  # FETCH_SESSION_ID_NOT_FOUND
    INVALID_EPOCH = 71  # INVALID_FETCH_SESSION_EPOCH
    TOPIC_ID_ERROR = 106  # FETCH_SESSION_TOPIC_ID_ERROR


@dataclass(slots=True)
class _Shard:
    """One of Kafka's cache shards: its share of the slots, the sessions it holds, its range of session ids."""

    number: int
    max_entries: int
    sessions: dict[int, FetchSession] = field(default_factory=dict)


class FetchSessionCache:
    """The broker's sessions, in `SHARDS` shards as Kafka 4.4 keeps them: each has ``slots // SHARDS`` slots (so
    fewer than 8 slots hold no session at all, as on Kafka), a new session goes to the next shard in turn and may
    only evict within it, and a session's id says its shard. ``slots`` is
    ``max.incremental.fetch.session.cache.slots``, `max_partitions` ``logwright.fetch.session.cache.partitions``."""

    def __init__(self, slots: int = 1000, max_partitions: int = PARTITIONS_CACHED,
                 rng: random.Random | None = None) -> None:
        self.shards = [_Shard(number, slots // SHARDS) for number in range(SHARDS)]
        self.max_partitions = max_partitions
        self.rng = rng or random.Random()
        self.sessions: dict[int, FetchSession] = {}
        """Every shard's sessions by id."""
        self.partitions_cached = 0
        self.evictions = 0
        self._turn = 0

    def close(self, session_id: int) -> bool:
        session = self.sessions.pop(session_id, None)
        if session is None:
            return False
        del self.shards[min(session_id // SESSION_ID_RANGE, SHARDS - 1)].sessions[session_id]
        self.partitions_cached -= session.cached_size
        return True

    def incremental(self, session_id: int, epoch: int, uses_topic_ids: bool,
                    asked: Iterable[tuple[PartitionKey, int, int, int, int, int]], forgotten: Iterable[PartitionKey],
                    now_ms: int) -> FetchSession | Refusal | None:
        """Take an incremental request: its session, updated and its epoch moved on; a `Refusal`; or ``None`` when
        the update left the session empty (closed: the request is answered without a session)."""
        session = self.sessions.get(session_id)
        if session is None:
            return Refusal.NOT_FOUND
        if session.epoch != epoch:
            return Refusal.INVALID_EPOCH
        if session.uses_topic_ids != uses_topic_ids:
            return Refusal.TOPIC_ID_ERROR
        if not session.update(asked, forgotten, self.max_partitions - self.partitions_cached):
            self.close(session_id)
            return Refusal.NOT_FOUND
        if not session.partitions:
            self.close(session_id)
            return None
        self._touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return session

    def open(self, partitions: list[CachedPartition], uses_topic_ids: bool, now_ms: int) -> int:
        """A new session of ``partitions`` (as answered by a full fetch of epoch 0): its id, or `INVALID_SESSION_ID`
        when its shard has no slot for it."""
        self._turn += 1
        shard = self.shards[self._turn % SHARDS]
        if self.partitions_cached + len(partitions) > self.max_partitions:
            return INVALID_SESSION_ID
        if len(shard.sessions) >= shard.max_entries and not self._evict_for(shard, len(partitions), now_ms):
            return INVALID_SESSION_ID
        session_id = self._new_id(shard)
        session = FetchSession(session_id, uses_topic_ids, now_ms, now_ms, next_epoch(INITIAL_EPOCH),
                               {cached.key: cached for cached in partitions})
        self.sessions[session_id] = shard.sessions[session_id] = session
        self._touch(session, now_ms)
        return session_id

    def _touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        self.partitions_cached += len(session.partitions) - session.cached_size
        session.cached_size = len(session.partitions)

    def _evict_for(self, shard: _Shard, size: int, now_ms: int) -> bool:
        """Kafka's ``tryEvict`` for a consumer's session of ``size`` partitions, within ``shard``: the least recently
        used session if idle over `EVICTION_MS`, else the smallest one created over `EVICTION_MS` before its last use
        if the new one is larger (lowest id first among equals, as Kafka's ordering of evictable keys)."""
        if not shard.sessions:
            return False
        stale = min(shard.sessions.values(), key=lambda s: (s.last_used_ms, s.session_id))
        if now_ms - stale.last_used_ms > EVICTION_MS:
            victim = stale
        else:
            evictable = [s for s in shard.sessions.values() if s.last_used_ms - s.created_ms > EVICTION_MS]
            if not evictable:
                return False
            victim = min(evictable, key=lambda s: (s.cached_size, s.session_id))
            if (size, 0) < (victim.cached_size, victim.session_id):
                return False
        self.close(victim.session_id)
        self.evictions += 1
        return True

    def _new_id(self, shard: _Shard) -> int:
        """A random id in the shard's range, as Kafka's ``newSessionId``."""
        low, high = max(1, shard.number * SESSION_ID_RANGE), (shard.number + 1) * SESSION_ID_RANGE
        while True:
            session_id = self.rng.randrange(low, high)
            if session_id not in self.sessions:
                return session_id
