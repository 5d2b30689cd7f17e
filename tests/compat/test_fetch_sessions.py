"""The fetch session cache on its own (no I/O): epochs, updates, answers and Kafka's eviction rules."""

from __future__ import annotations

import random

from logwright.compat import fetch_sessions
from logwright.compat.fetch_sessions import (
    EVICTION_MS,
    INVALID_SESSION_ID,
    SESSION_ID_RANGE,
    SHARDS,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
    Refusal,
    next_epoch,
)


def partitions(*indexes: int, topic: str = "t") -> list[CachedPartition]:
    return [CachedPartition((topic, index), 0, 1_000, -1, -1, -1, high_watermark=5, local_log_start=0)
            for index in indexes]


def asked(index: int, offset: int, topic: str = "t") -> tuple[tuple[object, int], int, int, int, int, int]:
    return (topic, index), offset, 1_000, -1, -1, -1


def cache(slots: int = 1000) -> FetchSessionCache:
    return FetchSessionCache(slots, fetch_sessions.PARTITIONS_CACHED, random.Random(7))


def test_epochs_move_on_and_wrap_past_the_largest_to_one() -> None:
    assert [next_epoch(epoch) for epoch in (0, 1, 41, 2**31 - 1, -1, -5)] == [1, 2, 42, 1, -1, -1]


def test_an_incremental_fetch_takes_the_expected_epoch_once() -> None:
    sessions = cache()
    session_id = sessions.open(partitions(0, 1), False, now_ms=0)
    assert session_id != INVALID_SESSION_ID
    session = sessions.incremental(session_id, 1, False, [], [], now_ms=1)
    assert isinstance(session, FetchSession) and session.epoch == 2
    assert sessions.incremental(session_id, 1, False, [], [], now_ms=2) is Refusal.INVALID_EPOCH
    assert sessions.incremental(session_id, 2, True, [], [], now_ms=2) is Refusal.TOPIC_ID_ERROR
    assert sessions.incremental(session_id + 1, 2, False, [], [], now_ms=2) is Refusal.NOT_FOUND
    assert sessions.incremental(session_id, 2, False, [], [], now_ms=2) is session and session.epoch == 3


def test_updates_join_change_and_forget_partitions_and_an_empty_session_closes() -> None:
    sessions = cache()
    session_id = sessions.open(partitions(0, 1), False, now_ms=0)
    session = sessions.incremental(session_id, 1, False, [asked(1, 9), asked(2, 3)], [("t", 0)], now_ms=1)
    assert isinstance(session, FetchSession)
    assert [(key, cached.fetch_offset) for key, cached in session.partitions.items()] == [(("t", 1), 9), (("t", 2), 3)]
    assert sessions.partitions_cached == 2
    assert sessions.incremental(session_id, 2, False, [], [("t", 1), ("t", 2)], now_ms=2) is None
    assert session_id not in sessions.sessions and sessions.partitions_cached == 0


def test_an_answer_carries_records_errors_and_moved_offsets_only() -> None:
    (cached,) = partitions(0)
    assert not cached.must_answer(False, 0, 5, 0)
    assert cached.must_answer(True, 0, 5, 0)
    assert cached.must_answer(False, 0, 6, 0) and not cached.must_answer(False, 0, 6, 0)
    assert cached.must_answer(False, 0, 6, 2) and not cached.must_answer(False, 0, 6, 2)
    assert cached.must_answer(False, 1, -1, -1)  # an error: answered, and the high watermark forgotten
    assert cached.high_watermark == -1 and cached.must_answer(False, 0, 6, 2)


def test_a_partition_answered_with_records_goes_last() -> None:
    session = FetchSession(1, False, 0, 0, 1, {cached.key: cached for cached in partitions(0, 1, 2)})
    session.answered_with_records(("t", 0))
    assert [key[1] for key in session.partitions] == [1, 2, 0]


def open_in_shard(sessions: FetchSessionCache, shard: int, size: int, now_ms: int) -> int:
    """Open a session in ``shard`` (sessions go to the shards in turn: the turn is set to land there)."""
    sessions._turn = shard - 1
    return sessions.open(partitions(*range(size)), False, now_ms)


def test_the_slots_are_divided_among_eight_shards_taken_in_turn() -> None:
    assert cache(slots=SHARDS - 1).open(partitions(0), False, now_ms=0) == INVALID_SESSION_ID  # none per shard
    sessions = cache(slots=2 * SHARDS)
    opened = [sessions.open(partitions(0), False, now_ms=0) for _ in range(2 * SHARDS)]
    assert INVALID_SESSION_ID not in opened
    assert sorted(session_id // SESSION_ID_RANGE for session_id in opened) == sorted([*range(SHARDS)] * 2)
    assert all(sessions.open(partitions(0), False, now_ms=1) == INVALID_SESSION_ID for _ in range(SHARDS))


def test_a_full_shard_evicts_its_stale_session_first() -> None:
    sessions = cache(slots=2 * SHARDS)
    old = open_in_shard(sessions, 3, 3, now_ms=0)
    recent = open_in_shard(sessions, 3, 1, now_ms=EVICTION_MS)
    elsewhere = open_in_shard(sessions, 4, 1, now_ms=0)  # stale too, but in another shard
    assert open_in_shard(sessions, 3, 1, now_ms=EVICTION_MS + 1) != INVALID_SESSION_ID  # old idle > 120 s
    assert old not in sessions.sessions and {recent, elsewhere} <= set(sessions.sessions)
    assert sessions.evictions == 1 and sessions.partitions_cached == 3


def test_without_stale_sessions_only_a_larger_session_evicts_a_smaller_one_past_its_first_two_minutes() -> None:
    sessions = cache(slots=SHARDS)
    small = open_in_shard(sessions, 5, 2, now_ms=0)
    assert open_in_shard(sessions, 5, 3, now_ms=10) == INVALID_SESSION_ID  # small is too young
    for now_ms in range(60_000, 3 * EVICTION_MS, 60_000):  # used every minute: never stale
        assert isinstance(sessions.incremental(small, sessions.sessions[small].epoch, False, [], [], now_ms),
                          FetchSession)
    now_ms = 3 * EVICTION_MS
    assert open_in_shard(sessions, 5, 2, now_ms) == INVALID_SESSION_ID  # not larger
    larger = open_in_shard(sessions, 5, 3, now_ms)
    assert larger != INVALID_SESSION_ID and list(sessions.sessions) == [larger]


def test_a_cache_of_no_slots_opens_no_session() -> None:
    assert cache(slots=0).open(partitions(0), False, now_ms=0) == INVALID_SESSION_ID


def test_partitions_held_across_sessions_are_bounded() -> None:
    sessions = FetchSessionCache(1000, 5, random.Random(7))
    first = sessions.open(partitions(0, 1, 2), False, now_ms=0)
    assert sessions.open(partitions(0, 1, 2), False, now_ms=0) == INVALID_SESSION_ID
    assert sessions.incremental(first, 1, False, [asked(3, 0), asked(4, 0)], [], now_ms=1) is not None  # 5: room
    assert sessions.incremental(first, 2, False, [asked(5, 0)], [], now_ms=2) is Refusal.NOT_FOUND  # 6: closed
    assert sessions.sessions == {} and sessions.partitions_cached == 0
