"""A compaction pass over a real RocksDB store, slice by slice: a crash between slices (the store closed and
reopened) leaves a log that is partly compacted and whole, a later pass finishes it, appends and a truncation
arriving between slices survive, and `logwright check` agrees throughout. The segment models of a topic that
becomes compacted are built in slices too."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from logwright.compat.broker import Broker
from logwright.compat.coordinators import cleaning_pass
from logwright.compat.coordinators.cleaning_pass import PassReport, run_pass
from logwright.compat.coordinators.segment_models import SegmentModels
from logwright.compat.wire.record_batch import Record, build_batch, decode_records, parse_header
from logwright.core.compaction.cleanable import CleaningChoice
from logwright.core.compaction.segments import Segment
from logwright.core.compaction.settings import CompactionSettings
from logwright.core.compaction.state import CleanerCheckpoint, checkpoint_key
from logwright.core.events import ConfigChanged, RecordsAppended, TopicCreated
from logwright.core.log.partition_log import append_batch, empty_partition, partition_key
from logwright.eventstore.check import check_store
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore

KEYS = 8
SETTINGS = CompactionSettings(1 << 30, 100, 0, 2**63 - 1, 0.5, 1000)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RocksEventStore]:
    opened = RocksEventStore(tmp_path / "store")
    opened.append([TopicCreated("t", b"\x01" * 16, (0,), (("cleanup.policy", "compact"),))])
    opened.commit()
    yield opened
    opened.close()


def append(store: RocksEventStore, rounds: range) -> None:
    """Batches of one round each: every key updated once, value = the round."""
    for round_index in rounds:
        state = store.state("partitions", partition_key(0)) or empty_partition(0)
        records = [Record(0, 1_000 + 50 * round_index, b"k%d" % key, b"%d" % round_index + b"." * 200)
                   for key in range(KEYS)]
        decided = append_batch(state, KEYS, 0, 1_000 + 50 * round_index)
        data = build_batch(records, base_offset=decided.base_offset)
        store.append([RecordsAppended(0, decided.base_offset, KEYS, len(data), 1_000 + 50 * round_index)],
                     [StoredBatch(0, decided.base_offset, data)])
        store.commit()


def contents(store: RocksEventStore) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(record.offset, record.key, record.value) for _, data in store.scan_batches(0, 0, 2**62)
            for record in decode_records(data)]


def latest(store: RocksEventStore) -> dict[bytes | None, bytes | None]:
    return {key: value for _, key, value in contents(store)}


def run(store: RocksEventStore, end: int, rewrites: int | None = None, between: object = None) -> PassReport:
    """A pass committed slice by slice (as the broker does), cut short after ``rewrites`` rewriting slices."""
    report = PassReport(0, 0)
    for _ in run_pass(store, 0, CleaningChoice(0, end, 0, 1, False), SETTINGS, 1000, 5_000, report):
        store.commit()
        if callable(between):
            between(report)
        if rewrites is not None and report.slices >= rewrites:
            break
    store.commit()
    return report


@pytest.fixture(autouse=True)
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cleaning_pass, "SLICE_BYTES", 4096)


def test_a_pass_cut_short_leaves_a_whole_log_and_the_next_pass_finishes(store: RocksEventStore, tmp_path: Path
                                                                         ) -> None:
    append(store, range(40))
    before = latest(store)
    report = run(store, end=39 * KEYS, rewrites=3)
    assert not report.completed and report.records_removed > 0
    store.close()
    reopened = RocksEventStore(tmp_path / "store")
    try:
        assert latest(reopened) == before
        offsets = [offset for offset, _, _ in contents(reopened)]
        assert offsets == sorted(set(offsets))
        assert check_store(reopened).consistent
        finished = run(reopened, end=39 * KEYS)
        assert finished.completed and finished.cleaned_to == 39 * KEYS
        assert contents(reopened)[:KEYS] == [(38 * KEYS + key, b"k%d" % key, b"38" + b"." * 200)
                                            for key in range(KEYS)]
        assert len(contents(reopened)) == 2 * KEYS, "the head batch is past the pass's end"
        assert latest(reopened) == before
        headers = [parse_header(data) for _, data in reopened.scan_batches(0, 0, 2**62)]
        assert [(header.base_offset, header.last_offset_delta) for header in headers] == [
            (38 * KEYS, KEYS - 1), (39 * KEYS, KEYS - 1)]
        state = reopened.state("partitions", partition_key(0))
        assert state.byte_size == sum(len(data) for _, data in reopened.scan_batches(0, 0, 2**62))
        assert state.batch_count == 2
        assert check_store(reopened).consistent
    finally:
        reopened.close()


def test_appends_and_a_truncation_between_slices_are_kept(store: RocksEventStore) -> None:
    append(store, range(30))
    appended = iter(range(30, 33))
    truncated: list[int] = []

    def meanwhile(report: PassReport) -> None:
        round_index = next(appended, None)
        if round_index is not None:
            append(store, range(round_index, round_index + 1))
        if report.slices >= 1 and not truncated:  # the first rewritten slice went below the new log start
            truncated.append(store.truncate(0, 5 * KEYS) or -1)

    report = run(store, end=29 * KEYS, between=meanwhile)
    assert report.completed and truncated
    found = contents(store)
    assert all(offset >= 5 * KEYS for offset, _, _ in found), "nothing below the new log start came back"
    assert [offset for offset, _, _ in found][-3 * KEYS:] == [*range(30 * KEYS, 33 * KEYS)]
    assert {key: value for _, key, value in found} == {b"k%d" % key: b"32" + b"." * 200 for key in range(KEYS)}
    assert check_store(store).consistent


def test_the_models_of_a_topic_turned_compacted_are_built_in_slices_while_appends_arrive(
        store: RocksEventStore) -> None:
    """AlterConfigs makes ``t`` compacted with 40 rounds stored: the model is built by a task, a few batches per
    slice (4 KiB here), appends committed meanwhile are read too, and the result is the model a start-up builds."""
    store.append([ConfigChanged("topic", "t", (("cleanup.policy", None),))])
    store.commit()
    append(store, range(40))

    async def scenario() -> tuple[list[Segment], int]:
        broker = Broker(store)
        built: list[int] = []
        models = SegmentModels(broker, lambda: built.append(len(models.models)))
        store.add_commit_listener(models.on_commit)
        models.load()
        assert models.models == {}
        broker.stage([ConfigChanged("topic", "t", (("cleanup.policy", "compact"), ("segment.ms", "100")))])
        await broker.durable()
        turns = 0
        while not built:
            append(store, range(40 + turns, 41 + turns))
            turns += 1
            await asyncio.sleep(0)
        return models.models[0].segments, turns

    segments, turns = asyncio.run(scenario())
    assert turns > 3, "the build took several turns of the event loop"
    fresh = SegmentModels(Broker(store), lambda: None)
    fresh.load()
    assert segments == fresh.models[0].segments
    assert segments[-1].next_offset == (40 + turns) * KEYS
    assert len(segments) > 10, "a segment rolls every third round (50 ms apart, segment.ms=100)"


def test_without_a_running_loop_the_models_are_built_at_once(store: RocksEventStore) -> None:
    store.append([ConfigChanged("topic", "t", (("cleanup.policy", None),))])
    store.commit()
    append(store, range(5))
    models = SegmentModels(Broker(store), lambda: None)
    store.add_commit_listener(models.on_commit)
    models.load()
    store.append([ConfigChanged("topic", "t", (("cleanup.policy", "compact"),))])
    store.commit()
    assert models.models[0].segments[-1].next_offset == 5 * KEYS


def test_a_pass_records_the_largest_timestamp_it_kept_and_its_first_batch(store: RocksEventStore) -> None:
    """k0@9999 first, then rounds of every key at 1000 + 50 r: the pass (many slices) removes k0@9999, so the
    kept maximum is the last cleaned round's time at that round's batch, what Kafka's cleaned segments'
    maxTimestampSoFar say; the checkpoint keeps it for ListOffsets MAX_TIMESTAMP."""
    state = empty_partition(0)
    assert store.state("partitions", partition_key(0)) is None, "nothing appended yet: no row"
    data = build_batch([Record(0, 9_999, b"k0", b"first")], base_offset=0)
    store.append([RecordsAppended(0, append_batch(state, 1, 0, 9_999).base_offset, 1, len(data), 9_999)],
                 [StoredBatch(0, 0, data)])
    store.commit()
    append(store, range(20))
    report = run(store, end=1 + 19 * KEYS)
    assert report.completed and report.slices > 1
    checkpoint = store.state("compaction", checkpoint_key(0))
    assert isinstance(checkpoint, CleanerCheckpoint) and checkpoint.kept_max_known
    assert (checkpoint.kept_max_timestamp, checkpoint.kept_max_timestamp_offset) == (1_000 + 50 * 18, 1 + 18 * KEYS)
    assert check_store(store).consistent
