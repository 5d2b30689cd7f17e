"""The EventStore contract on `RocksEventStore`, and what only the RocksDB engine offers."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgpack
import pytest
from logwright.core.clock import ManualClock
from logwright.core.errors import CorruptState
from logwright.core.events import OffsetCommitted, TopicDeleted
from logwright.core.log.catalog import COUNTER_KEY, create_partitions, topic_key
from logwright.core.log.partition_log import PARTITIONS, partition_key
from logwright.eventstore import batch_files, keys, rocksdb, stored_commits, stored_deletes
from logwright.eventstore.check import check_store
from logwright.eventstore.interface import Durability
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.eventstore.store_errors import ReadOnlyStore

from . import raw
from .contract import BIG, EventStoreContract, Opener
from .support import batch_base_offset, new_topic, produce


class TestRocksEventStore(EventStoreContract):
    read_only_error = ReadOnlyStore

    def open_store(self, path: Path, **options: Any) -> RocksEventStore:
        return RocksEventStore(path, **options)

    def forget_projection(self, path: Path, projection: str) -> None:
        prefix = keys.state_key(projection, "")
        doomed = [key for key in raw.items(path, "state") if key.startswith(prefix)]
        assert doomed, f"projection {projection!r} has no state rows to forget"
        raw.delete(path, "state", doomed)
        raw.delete(path, "meta", [raw.state_sequence_key(projection)])

    def claim_coverage(self, path: Path, projection: str, sequence: int) -> None:
        raw.put(path, "meta", raw.state_sequence_key(projection), keys.encode_sequence(sequence))


@pytest.fixture
def opener(tmp_path: Path) -> Any:
    opener = Opener(TestRocksEventStore(), tmp_path / "store", ManualClock())
    yield opener
    opener.close_all()


def test_close_commits_what_is_staged(opener: Opener) -> None:
    store = opener()
    store.append([OffsetCommitted("g", "t", 0, 1)])
    assert opener.reopen(store).committed_sequence == 1


def test_index_entries_are_written_with_the_append_and_removed_with_the_topic(opener: Opener) -> None:
    store = opener()
    created = new_topic(store, "t", 2)
    produce(store, 0)
    store.append([], index_entries=[(keys.time_index_key(0, 1_000), b"\x00" * 8),
                                    (keys.time_index_key(1, 2_000), b"\x01" * 8)])
    assert store.seek_index(keys.time_index_key(0, 0), keys.time_index_key(2, 0)) is None, "staged, not written"
    store.commit()
    assert store.seek_index(keys.time_index_key(0, 0), keys.time_index_key(1, 0)) == (
        keys.time_index_key(0, 1_000), b"\x00" * 8)
    assert store.seek_index(keys.time_index_key(0, 1_001), keys.time_index_key(1, 0)) is None
    store.append([TopicDeleted("t", created.topic_id, created.partition_ids)])
    store.commit()
    assert store.seek_index(keys.time_index_key(0, 0), keys.time_index_key(2, 0)) is None
    assert store.read_batches(0, 0, BIG) == []


def test_truncate_commits_first_only_for_a_partition_whose_batches_this_turn_changed(opener: Opener) -> None:
    """Its scan of the batches below the new start reads committed rows: a batch staged on the same partition must
    be committed first, another partition's staged truncation need not be (DeleteRecords of many partitions)."""
    store = opener()
    first, second = new_topic(store, "t", 2).partition_ids
    for partition_id in (first, second):
        produce(store, partition_id, record_count=5)
        produce(store, partition_id, record_count=5)
    store.commit()
    store.truncate(first, 10)
    committed = store.committed_sequence
    store.truncate(second, 5)
    assert store.committed_sequence == committed, "nothing of the second partition was staged: no commit first"
    produce(store, second, record_count=5)
    store.truncate(second, 15)
    assert store.committed_sequence > committed, "the batch at 10 was staged: committed before the scan"
    store.commit()
    state = store.state("partitions", partition_key(second))
    assert (state.log_start_offset, state.batch_count, state.byte_size) == (15, 0, 0)
    assert store.state("partitions", partition_key(first)).batch_count == 0
    assert store.read_batches(second, 15, BIG) == [] and store.read_batches(first, 10, BIG) == []


def test_batches_staged_before_a_deletion_in_the_same_commit_are_deleted_with_it(opener: Opener) -> None:
    """Record batches enter the WriteBatch after the small rows (`_put_staged_records`), but never after a range
    delete staged behind them: the deletion wins, as it would have with the puts in staging order."""
    store = opener()
    created = new_topic(store, "t", 2)
    kept = new_topic(store, "u", 1)
    store.commit()
    produce(store, created.partition_ids[0])
    produce(store, kept.partition_ids[0])
    store.append([TopicDeleted("t", created.topic_id, created.partition_ids)])
    produce(store, kept.partition_ids[0])
    store.commit()
    opener.close(store)
    stored = raw.items(opener.path, "records")
    assert [keys.parse_record_key(key) for key in stored] == [(kept.partition_ids[0], 0), (kept.partition_ids[0], 10)]


def test_deleting_a_topic_whose_partition_ids_are_interleaved_with_another_keeps_the_others(opener: Opener) -> None:
    """A topic's partitions go by runs of consecutive ids (one range tombstone per run, not per partition); a
    topic that grew later (CreatePartitions) has two runs with another topic's ids between them."""
    store = opener()
    grown = new_topic(store, "t", 2)
    between = new_topic(store, "u", 2)
    added = create_partitions(store.state("catalog", topic_key("t")), store.state("catalog", COUNTER_KEY), "t", 4)
    store.append([added])
    store.commit()
    every = (*grown.partition_ids, *between.partition_ids, *added.partition_ids)
    assert list(every) == sorted(every), "u's ids lie between t's two runs"
    for partition_id in every:
        produce(store, partition_id)
        store.append([], index_entries=[(keys.time_index_key(partition_id, 1_000), b"offset")])
    store.commit()
    store.append([TopicDeleted("t", grown.topic_id, (*grown.partition_ids, *added.partition_ids))])
    store.commit()
    assert stored_deletes._runs((*added.partition_ids, *grown.partition_ids)) == [
        (grown.partition_ids[0], grown.partition_ids[-1]), (added.partition_ids[0], added.partition_ids[-1])]
    opener.close(store)
    stored = [keys.parse_record_key(key) for key in raw.items(opener.path, "records")]
    assert stored == [(partition_id, 0) for partition_id in between.partition_ids]
    indexed = [keys.parse_time_index_key(key)[0] for key in raw.items(opener.path, "index")
               if key[:1] == keys.time_index_key(0, 0)[:1]]
    assert indexed == list(between.partition_ids)


def test_the_format_version_is_recorded_and_a_newer_one_is_refused(opener: Opener) -> None:
    opener.close(opener())
    assert keys.decode_sequence(raw.items(opener.path, "meta")[keys.META_FORMAT_VERSION]) == keys.FORMAT_VERSION
    raw.put(opener.path, "meta", keys.META_FORMAT_VERSION, keys.encode_sequence(keys.FORMAT_VERSION + 1))
    with pytest.raises(CorruptState, match="newer logwright") as refused:
        opener()
    assert refused.value is not None, "the caller may keep the error while it repairs the database"
    raw.put(opener.path, "meta", keys.META_FORMAT_VERSION, keys.encode_sequence(keys.FORMAT_VERSION))
    assert opener().committed_sequence == 0, "a failed open leaves the database unlocked"


def test_durability_is_validated(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        RocksEventStore(tmp_path / "store", durability="sometimes")
    store = RocksEventStore(tmp_path / "other", durability="fsync")
    assert store.durability is Durability.FSYNC
    store.close()


def test_projection_names_must_be_unique(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unique"):
        RocksEventStore(tmp_path / "store", projections=(PARTITIONS, PARTITIONS))


def test_cursor_state_with_holes_in_flight_and_counts_survives_a_reopen(opener: Opener) -> None:
    """Every ack is durable and nothing is capped (W3); locks and delivery counts come back too (W1, W4)."""
    from logwright.core.cursors import cursor_commands as commands
    from logwright.core.cursors.cursor import CURSORS, cursor_key
    from logwright.core.events.cursors import SubscriptionCreated

    store = opener()
    key = cursor_key("sub", 0)
    store.append([SubscriptionCreated("sub", 0, "t", 0)])
    acquired = commands.acquire(store.state("cursors", key), 0, 20_002, "c1", 20_002, 0, 30_000)
    store.append([acquired])
    every_other = tuple((offset, offset) for offset in range(0, 20_000, 2))
    store.append([commands.acknowledge(store.state("cursors", key), "c1", every_other)])
    store.append(commands.release(store.state("cursors", key), "c1", ((20_001, 20_001),), 0, 0, 5))
    store.commit()
    before = store.state("cursors", key)
    assert len(before.settled.ranges) == 10_000 - 1 and before.mark_delete_position == 0
    reopened = opener.reopen(store)
    assert reopened.state("cursors", key) == before
    assert commands.delivery_count(reopened.state("cursors", key), 20_001) == 1
    assert commands.in_flight_for(reopened.state("cursors", key), "c1")[0] == (1, 1)
    assert CURSORS.name == "cursors"



def _covered(path: Path) -> dict[str, int]:
    prefix = keys.META_STATE_SEQUENCE + b"."
    return {key[len(prefix):].decode(): keys.decode_sequence(value)
            for key, value in raw.items(path, "meta").items() if key.startswith(prefix)}


def _crash_image(store: RocksEventStore, path: Path) -> Path:
    """The store as a crash would leave it (a checkpoint: what the write-ahead log holds, nothing written at close)."""
    store.checkpoint(str(path))
    return path


def _offset_commits_after_a_topic(opener: Opener, commits: int) -> tuple[RocksEventStore, int]:
    """A store with a topic, then ``commits`` commits of one committed offset each; and the topic's sequence."""
    store = opener()
    new_topic(store, "t", 1)
    store.commit()
    created_at = store.last_sequence
    for offset in range(commits):
        store.append([OffsetCommitted("g", "t", 0, offset)])
        store.commit()
    return store, created_at


def test_a_commit_writes_the_covered_sequence_of_the_projections_it_changed_only(
        opener: Opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored_commits, "STATE_SEQUENCES_REFRESHED_EVERY", 50)
    store, created_at = _offset_commits_after_a_topic(opener, 10)
    covered = _covered(_crash_image(store, tmp_path / "crashed"))
    assert covered["committed_offsets"] == store.last_sequence
    assert covered["catalog"] == created_at, "the catalog did not change after the topic was created"
    store.close()
    assert set(_covered(opener.path).values()) == {store.last_sequence}, "close writes every covered sequence"


def test_every_covered_sequence_is_written_again_within_the_refresh_bound(
        opener: Opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stored_commits, "STATE_SEQUENCES_REFRESHED_EVERY", 50)
    store, _ = _offset_commits_after_a_topic(opener, 120)
    assert min(_covered(_crash_image(store, tmp_path / "crashed")).values()) > store.last_sequence - 50


def test_after_a_crash_projections_behind_the_log_refold_to_the_same_state(
        opener: Opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A projection whose covered sequence was not written refolds the events since, which change nothing of it;
    the ones that changed are not folded twice."""
    monkeypatch.setattr(stored_commits, "STATE_SEQUENCES_REFRESHED_EVERY", 1_000)
    store = opener()
    created = new_topic(store, "t", 2)
    store.commit()
    for offset in range(30):
        produce(store, created.partition_ids[offset % 2], record_count=3)
        store.append([OffsetCommitted("g", "t", offset % 2, offset)])
        store.commit()
    expected = {projection.name: dict(store.entities(projection.name)) for projection in store.projections}
    crashed = _crash_image(store, tmp_path / "crashed")
    assert min(_covered(crashed).values()) < store.last_sequence, "some projection is behind the log"
    reopened = opener(crashed)
    assert {projection.name: dict(reopened.entities(projection.name))
            for projection in reopened.projections} == expected
    assert check_store(reopened).consistent
    opener.close(reopened)
    assert set(_covered(crashed).values()) == {store.last_sequence}, "the refold wrote every covered sequence"


def test_ack_holes_past_pulsars_cap_survive_a_crash(opener: Opener, tmp_path: Path) -> None:
    """Pulsar persists at most ``managedLedgerMaxUnackedRangesToPersist`` (10,000) acknowledged ranges and replays
    the rest after a crash; here 30,000 holes, acknowledged over many commits, are all in the crash image (what the
    write-ahead log holds, nothing written at close) and in `logwright check`'s refold of it."""
    from logwright.core.cursors import cursor_commands as commands
    from logwright.core.cursors.cursor import cursor_key
    from logwright.core.events.cursors import SubscriptionCreated

    store = opener()
    key = cursor_key("sub", 0)
    store.append([SubscriptionCreated("sub", 0, "t", 0)])
    store.append([commands.acquire(store.state("cursors", key), 0, 60_000, "c1", 60_000, 0, 30_000)])
    store.commit()
    for start in range(0, 60_000, 6_000):  # ten commits of 3,000 acknowledgements each, every other offset
        acked = tuple((offset, offset) for offset in range(start + 1, start + 6_000, 2))
        store.append([commands.acknowledge(store.state("cursors", key), "c1", acked)])
        store.commit()
    before = store.state("cursors", key)
    assert len(before.settled.ranges) == 30_000 and before.mark_delete_position == -1
    reopened = opener(_crash_image(store, tmp_path / "crashed"))
    assert reopened.state("cursors", key) == before
    assert check_store(reopened).consistent
    opener.close(reopened)


def test_a_row_changed_again_after_it_was_put_ahead_waits_for_the_commit_when_asked(opener: Opener,
                                                                                    tmp_path: Path) -> None:
    """``defer_rows_changed_again`` (`Broker.stage_over_turns`'s parts): a group's head changes with every part, so
    once put ahead it is left for a later call or the commit, which encode it once; rows changed for the first time
    are still put, and the commit writes the head's last state."""
    store, _ = _offset_commits_after_a_topic(opener, 0)
    store.append([OffsetCommitted("g", "t", 0, 5)])
    store.put_changed_rows(defer_rows_changed_again=True)
    assert store.changed_rows == 0, "nothing was put ahead yet: the head and the offset both go"
    store.append([OffsetCommitted("g", "t", 1, 6)])
    store.put_changed_rows(defer_rows_changed_again=True)
    assert store.changed_rows == 1, "the head, changed again, waits; partition 1's new row was put"
    store.append([OffsetCommitted("g", "t", 2, 7)])
    store.put_changed_rows(defer_rows_changed_again=True)
    assert store.changed_rows == 1
    store.commit()
    assert store.changed_rows == 0
    expected = dict(store.entities("committed_offsets"))
    reopened = opener(_crash_image(store, tmp_path / "deferred"))
    assert dict(reopened.entities("committed_offsets")) == expected
    assert {key: state.offset for key, state in expected.items() if not key.startswith("#")} == {
        "t/0/g": 5, "t/1/g": 6, "t/2/g": 7}
    assert check_store(reopened).consistent
    opener.close(reopened)


def test_rows_put_ahead_of_the_commit_are_written_by_it_all_or_none(opener: Opener, tmp_path: Path) -> None:
    """`put_changed_rows` (a long staging's parts, `Broker.stage_over_turns`) encodes rows into the commit's
    WriteBatch early: a row changed again is put again and the later value wins; before the commit none of it is on
    disk; after it the store reopens to the same state, nothing folded twice."""
    store, created_at = _offset_commits_after_a_topic(opener, 0)
    committed_before = store.committed_sequence
    store.append([OffsetCommitted("g", "t", 0, 5), OffsetCommitted("h", "t", 0, 6)])
    rows = store.changed_rows
    store.put_changed_rows(limit=1)  # a slice (`Broker._scheduled_commit`): the rest stay to be put
    assert store.changed_rows == rows - 1
    store.put_changed_rows()
    assert store.changed_rows == 0
    store.append([OffsetCommitted("g", "t", 0, 7)])
    store.put_changed_rows()
    store.append([OffsetCommitted("k", "t", 0, 8)])
    before_commit = _crash_image(store, tmp_path / "before")
    store.commit()
    expected = dict(store.entities("committed_offsets"))
    assert {key: state.offset for key, state in expected.items() if not key.startswith("#")} == {
        "t/0/g": 7, "t/0/h": 6, "t/0/k": 8}
    reopened = opener(tmp_path / "before")
    assert dict(reopened.entities("committed_offsets")) == {}, "rows put ahead are not written without the commit"
    assert reopened.last_sequence == committed_before
    opener.close(reopened)
    assert before_commit.exists()
    crashed = _crash_image(store, tmp_path / "after")
    assert _covered(crashed)["committed_offsets"] == store.last_sequence
    reopened = opener(crashed)
    assert dict(reopened.entities("committed_offsets")) == expected
    assert check_store(reopened).consistent
    opener.close(reopened)


LOG_BYTES_BOUND = 80_000_000


def _await_scheduled_flushes(store: RocksEventStore, give_up_s: float = 30.0) -> None:
    """Let the flushes RocksDB scheduled finish before the next write. A loaded machine (CI beside three test
    workers) otherwise lets the writer run ahead of the flush thread: each log file grows past the bound before
    the switch, and recycled files keep the size they reached (84 MB kept once for 120 MB written). Waiting does
    not schedule anything: without ``max_total_wal_size`` no flush is pending and the log still grows to 120 MB."""
    give_up = time.monotonic() + give_up_s
    while time.monotonic() < give_up and (
            store._db.property_int_value("rocksdb.num-running-flushes")
            or any(view.property_int_value("rocksdb.mem-table-flush-pending") for view in store._views.values())):
        time.sleep(0.01)


def test_the_write_ahead_log_stays_bounded_and_its_files_are_reused(
        opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a bound, the small column families kept every log file alive: the log grew with the records (here
    1 MB batches kept in RocksDB, as batches below `batch_files.INLINE_BELOW` are)."""
    monkeypatch.setattr(rocksdb, "WAL_BYTES_KEPT", 8 * 1024 * 1024)
    monkeypatch.setattr(batch_files, "INLINE_BELOW", 2**31)
    store = opener()
    created = new_topic(store, "t", 1)
    store.commit()
    for _ in range(120):
        produce(store, created.partition_ids[0], record_count=1, payload_size=1_000_000)
        store.commit()
        _await_scheduled_flushes(store)
    # bounded, not exact: the bound (8 MB) plus the file being written and the four kept for reuse, each about the
    # bound plus one commit; two thirds of what was written, which an unbounded log (all 120 MB) never meets
    log_bytes = sum(path.stat().st_size for path in opener.path.glob("*.log"))
    assert log_bytes < LOG_BYTES_BOUND, f"{log_bytes} bytes of write-ahead log for 120 MB written"
    assert "reusing log" in "".join(path.read_text(errors="replace") for path in opener.path.glob("LOG"))


def test_a_projection_that_replaces_another_deletes_its_rows_at_a_writable_open(
        opener: Opener, caplog: pytest.LogCaptureFixture) -> None:
    """An upgrade that renames a projection (pop's ``pop_inflight`` became ``pop_runs``) leaves no rows behind."""
    from logwright.core import CORE_PROJECTIONS
    from logwright.core.projection import Projection

    opener.close(opener())
    for entity in ("a", "b"):
        raw.put(opener.path, "state", keys.state_key("old_counts", entity), keys.encode_sequence(1) + b"\xc1")
    raw.put(opener.path, "meta", raw.state_sequence_key("old_counts"), keys.encode_sequence(1))
    successor = Projection("new_counts", lambda event: (), lambda state, event, key: state, replaces=("old_counts",))
    projections = (*CORE_PROJECTIONS, successor)
    with caplog.at_level("WARNING"):
        opener.close(opener(read_only=True, projections=projections))
    assert "unknown projection" not in caplog.text
    assert any(key.startswith(b"old_counts\x00") for key in raw.items(opener.path, "state")), "read-only: kept"
    opener.close(opener(projections=projections))
    assert not any(key.startswith(b"old_counts\x00") for key in raw.items(opener.path, "state"))
    assert raw.state_sequence_key("old_counts") not in raw.items(opener.path, "meta")
    with caplog.at_level("WARNING"):
        opener.close(opener())
    assert "unknown projection" not in caplog.text


def test_a_commit_of_a_partition_its_group_committed_before_writes_that_row_alone(opener: Opener) -> None:
    """The group's head lists the partition already, so its row is not rewritten: a commit of a few partitions of a
    big group writes those few rows (a row's stored sequence is the event that last wrote it)."""
    store = opener()
    store.append([OffsetCommitted("g", "t", partition, 1) for partition in range(100)])
    store.commit()
    later = store.append([OffsetCommitted("g", "t", 7, 2)])
    store.commit()
    written = {entity: sequence for name, entity, sequence, _ in store.stored_states("committed_offsets")}
    assert written["t/7/g"] == later
    assert written["#g"] == 100 and written["t/8/g"] == 9, "the head and the other rows were not rewritten"
    assert opener.reopen(store).state("committed_offsets", "t/7/g").offset == 2


def test_a_store_with_a_row_per_group_is_refolded_into_rows_per_partition_at_the_first_writable_open(
        opener: Opener) -> None:
    """Stores written before kept a group's offsets in one row (projection ``group_offsets``, tag 1006). The first
    writable open folds the offset events into ``committed_offsets`` and deletes the old rows; a group deleted by
    an old `GroupDeleted` (which named no partitions) leaves a row its head no longer lists, which readers skip."""
    from logwright.core.backlog.positions import GroupPositions, scan_topic
    from logwright.core.events import GroupDeleted
    from logwright.core.groups.group_offsets import group_offsets

    store = opener()
    store.append([OffsetCommitted("g1", "t", 0, 5), OffsetCommitted("g1", "t", 1, 6), OffsetCommitted("g2", "t", 0, 7),
                  GroupDeleted("g2")])
    last = store.last_sequence
    opener.close(store)
    old_rows = [key for key in raw.items(opener.path, "state") if key.startswith(b"committed_offsets\x00")]
    raw.delete(opener.path, "state", old_rows)
    raw.delete(opener.path, "meta", [raw.state_sequence_key("committed_offsets")])
    legacy = msgpack.packb([1006, 1, (("t", 0, b"\xc1"),)])  # never decoded: the projection is gone
    raw.put(opener.path, "state", keys.state_key("group_offsets", "g1"), keys.encode_sequence(last) + legacy)
    raw.put(opener.path, "meta", raw.state_sequence_key("group_offsets"), keys.encode_sequence(last))

    read_only = opener(read_only=True)
    assert group_offsets(read_only.entities("committed_offsets"), "g1") is not None, "refolded in memory"
    opener.close(read_only)
    upgraded = opener()
    states = upgraded.entities("committed_offsets")
    g1 = group_offsets(states, "g1")
    assert g1 is not None and [(p, c.offset) for _, p, c in g1] == [(0, 5), (1, 6)]
    assert group_offsets(states, "g2") is None and "t/0/g2" in states, "the old deletion's row stays, unread"
    assert list(scan_topic(GroupPositions(), states, "t", (0, 1))[0]) == ["t/0/g1"]
    assert check_store(upgraded).consistent
    opener.close(upgraded)
    rows = raw.items(opener.path, "state")
    assert not any(key.startswith(b"group_offsets\x00") for key in rows)
    assert keys.state_key("committed_offsets", "t/1/g1") in rows


def test_a_commit_listener_given_event_types_hears_only_commits_holding_one(opener: Opener) -> None:
    store = opener()
    every: list[int] = []
    deletions: list[int] = []
    store.add_commit_listener(lambda logged: every.append(len(logged)))
    store.add_commit_listener(lambda logged: deletions.append(len(logged)), (TopicDeleted,))
    store.append([OffsetCommitted("g", "t", 0, 1), OffsetCommitted("g", "t", 1, 1)])
    store.commit()
    new_topic(store, "t", 1)
    store.commit()
    store.append([OffsetCommitted("g", "t", 0, 2), TopicDeleted("t", b"\0" * 16, (0,))])
    store.commit()
    assert every == [2, 1, 2]
    assert deletions == [2], "only the commit holding a TopicDeleted, with all of its events"


def test_a_refold_of_some_projections_decodes_only_the_events_they_fold(opener: Opener) -> None:
    """The first start with a renamed or new projection refolds the whole log into it: the events it does not fold
    are skipped by their tag, not decoded (a damaged one among them goes unnoticed here; `check` reads them all)."""
    from logwright.core.events import RecordsAppended

    store = opener()
    new_topic(store, "t", 1)
    produce(store, 0)
    store.append([OffsetCommitted("g", "t", 0, 10)])
    produce(store, 0)
    store.append([OffsetCommitted("g", "t", 0, 20)])
    store.commit()
    appended = [logged.sequence for logged in store.read_events() if isinstance(logged.event, RecordsAppended)]
    tags = store.types.event_tags([OffsetCommitted])
    assert [type(logged.event) for logged in store.read_events(tags=tags)] == [OffsetCommitted, OffsetCommitted]
    opener.close(store)
    damaged = raw.items(opener.path, "events")[keys.event_key(appended[0])]
    raw.put(opener.path, "events", keys.event_key(appended[0]), damaged[:12] + b"\xc1" * 8)
    raw.delete(opener.path, "meta", [raw.state_sequence_key("committed_offsets")])
    reopened = opener()
    assert reopened.state("committed_offsets", "t/0/g").offset == 20
    with pytest.raises(CorruptState):
        list(reopened.read_events())


def _point_deletes_in_memtable(store: RocksEventStore) -> int:
    return int(store._views["records"].property_value("rocksdb.num-deletes-active-mem-table") or 0)


def test_a_truncation_deletes_a_few_batches_key_by_key_and_many_with_one_range_delete(
        opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every range delete in the memtable made the next iterator fragment them all again (DeleteRecords of 5,000
    one-batch partitions spent ~1 s seeking): up to `POINT_DELETES_UP_TO` batches go one key each. RocksDB counts the
    point deletes in the records family's memtable; a range delete is not among them."""
    monkeypatch.setattr(stored_deletes, "POINT_DELETES_UP_TO", 3)
    store = opener()
    few, many = new_topic(store, "t", 2).partition_ids
    for partition_id, batches in ((few, 4), (many, 5)):
        for _ in range(batches):
            produce(store, partition_id, record_count=5)
    store.commit()
    before = _point_deletes_in_memtable(store)
    store.truncate(few, 17)  # the batches at 0, 5 and 10 go; 15..19 holds the new start
    store.commit()
    assert _point_deletes_in_memtable(store) == before + 3
    store.truncate(many, 20)  # four batches: over the limit
    store.commit()
    assert _point_deletes_in_memtable(store) == before + 3
    store.truncate(few, -1)  # the batch at 15: one more
    store.commit()
    assert _point_deletes_in_memtable(store) == before + 4
    reopened = opener.reopen(store)
    for partition_id, start, batches in ((few, 20, 0), (many, 20, 1)):
        state = reopened.state("partitions", partition_key(partition_id))
        assert (state.log_start_offset, state.batch_count) == (start, batches)
        assert len(reopened.read_batches(partition_id, start, BIG)) == batches


def _entries_in_memtable(store: RocksEventStore) -> int:
    return int(store._views["records"].property_value("rocksdb.num-entries-active-mem-table") or 0)


def test_rows_covered_by_range_deletes_are_flushed_out_of_the_memtable(
        opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `seek_for_prev` from a key that covered rows precede walks every one of them while they sit in the memtable
    (a deleted 5,000-partition topic made the next topic's first truncation 3.4 ms slower each): a topic deletion, and
    range-deleting truncations once they covered `FLUSHED_AFTER_COVERING` batches, switch the records family's
    memtable for a flushed one. What stays readable is unchanged."""
    monkeypatch.setattr(stored_deletes, "POINT_DELETES_UP_TO", 1)
    monkeypatch.setattr(stored_deletes, "FLUSHED_AFTER_COVERING", 6)
    store = opener()
    doomed = new_topic(store, "doomed", 3)
    kept = new_topic(store, "kept", 2).partition_ids
    for partition_id in (*doomed.partition_ids, *kept):
        for _ in range(4):
            produce(store, partition_id, record_count=5)
    store.commit()
    assert _entries_in_memtable(store) > 0
    store.truncate(kept[0], 15)  # three batches range-deleted: 3 of 6 covered
    store.commit()
    assert _entries_in_memtable(store) > 0, "flushed before the covered batches added up"
    store.truncate(kept[1], 15)  # 6 of 6
    store.commit()
    assert _entries_in_memtable(store) == 0
    produce(store, kept[0], record_count=5)
    store.commit()
    assert _entries_in_memtable(store) == 1
    store.append([TopicDeleted("doomed", doomed.topic_id, doomed.partition_ids)])
    store.commit()
    assert _entries_in_memtable(store) == 0, "a topic deletion flushes whatever it covered"
    for partition_id, batches in ((kept[0], 2), (kept[1], 1)):
        assert len(store.read_batches(partition_id, 15, BIG)) == batches
        assert [batch_base_offset(batch) for batch in store.read_batches(partition_id, 16, BIG)][:1] == [15]
    assert all(store.read_batches(partition_id, 0, BIG) == [] for partition_id in doomed.partition_ids)
