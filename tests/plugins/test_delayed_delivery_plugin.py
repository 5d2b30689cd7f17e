"""The built-in ``delayed_delivery`` plugin through its two hooks, as the broker calls them, and a third-party
plugin holding back offsets beside it (the answers add up)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from logwright.compat.wire.appended_batches import appended_batch
from logwright.compat.wire.compression import Compression
from logwright.compat.wire.record_batch import build_batch, with_base_offset
from logwright.compat.wire.records import Record
from logwright.core.clock import ManualClock
from logwright.core.events import Event, LogTruncated, OffsetCommitted, TopicDeleted
from logwright.core.events.log import DelayedRecordsDropped, DelayedRecordsIndexed
from logwright.core.log.delayed_delivery import DELAYED_RECORDS, DelayedIndex
from logwright.core.log.delayed_view import HeldSpan
from logwright.core.log.index_hooks import AppendedBatch, HeldBack, HoldBackQuery, StagedChange
from logwright.core.projection import fold
from logwright.eventstore.check import check_store
from logwright.eventstore.codec import TypeRegistry
from logwright.eventstore.rocksdb import RocksEventStore
from logwright.plugins.api import hookimpl
from logwright.plugins.host import PluginHost

from tests.compat.brokers import in_process_broker

AT, AFTER = "logwright.deliver.at.ms", "logwright.deliver.after.ms"


class Index:
    """The plugin's projection rows folded from what the deriver returns, as the store would fold them."""

    def __init__(self, host: PluginHost, compressed: bool = False) -> None:
        deriver = host.event_deriver()
        assert deriver is not None
        self.derive = deriver
        holder = host.holder()
        assert holder is not None
        self.hold = holder
        self.compressed = compressed
        self.log: list[Event] = []
        self.memo: dict[str, Any] = {}
        self.log_start: dict[int, int] = {7: 0}

    def rows(self, name: str) -> dict[str, Any]:
        """The plugin's rows; other derivers' (the backlog quota's eviction points) are empty here."""
        return fold(DELAYED_RECORDS, self.log) if name == DELAYED_RECORDS.name else {}

    def batch(self, records: list[Record], codec: Compression = Compression.NONE, base: int = 40) -> AppendedBatch:
        data = with_base_offset(build_batch(records, compression=codec), base)
        return appended_batch(data, "t", 0, 7, lambda name: "true" if self.compressed else "false")

    def stage(self, now_ms: int, *batches: AppendedBatch, events: tuple[Event, ...] = ()) -> list[Event]:
        derived = self.derive(StagedChange(events, batches, now_ms, self.log_start.get, self.rows, self.memo))
        self.log.extend((*events, *derived))
        return derived

    def held(self, now_ms: int, in_order: bool = False) -> HeldBack | None:
        return self.hold(HoldBackQuery(7, 0, 1000, now_ms, in_order, True, self.rows, self.memo))


@pytest.fixture
def index() -> Index:
    return Index(PluginHost.load(installed=False))


def test_an_append_with_delay_headers_gets_one_row_of_its_own(index: Index) -> None:
    records = [Record(0, 1, None, b"a"), Record(1, 1, None, b"b", ((AFTER, b"3000"),)),
               Record(2, 1, None, b"c", ((AT, b"junk"),)), Record(3, 1, None, b"logwright.deliver. in a value")]
    assert index.stage(100, index.batch(records)) == [DelayedRecordsIndexed(7, 100, ((41, 3100),), True)]
    assert index.stage(100, index.batch([Record(0, 1, None, b"plain")], base=44)) == []
    held = index.held(200)
    assert held is not None and held.spans == (HeldSpan(41, 41, 3100),) and held.next_due_ms == 3100
    assert index.held(200, in_order=True) is None, "Exclusive and Failover deliver at once"
    assert index.held(3100) is None


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD])
def test_compressed_batches_are_opened_only_when_the_topic_asks(codec: Compression) -> None:
    records = [Record(0, 1, None, b"a", ((AFTER, b"10"),))]
    closed = Index(PluginHost.load(installed=False))
    assert closed.stage(0, closed.batch(records, codec)) == []
    opened = Index(PluginHost.load(installed=False), compressed=True)
    assert opened.stage(0, opened.batch(records, codec)) == [DelayedRecordsIndexed(7, 0, ((40, 10),), True)]


def test_malformed_records_are_delivered_at_once_not_refused(index: Index) -> None:
    data = bytearray(with_base_offset(build_batch([Record(0, 1, None, b"a", ((AFTER, b"10"),))]), 40))
    data[61] = 0x7F  # the first record's length varint now lies
    assert index.stage(0, appended_batch(bytes(data), "t", 0, 7, lambda name: None)) == []


def test_rows_go_when_due_truncated_or_deleted(index: Index) -> None:
    index.stage(0, index.batch([Record(0, 1, None, b"a", ((AFTER, b"10"),))], base=40))
    index.stage(0, index.batch([Record(0, 1, None, b"b", ((AFTER, b"50"),))], base=41))
    index.stage(0, index.batch([Record(0, 1, None, b"c", ((AFTER, b"90"),))], base=42))
    index.stage(0, index.batch([Record(0, 1, None, b"d", ((AFTER, b"90"),))], base=43))
    # Any change staged on the partition (here an acquisition's cursor event would do) drops what is due.
    assert index.stage(10, events=(LogTruncated(7, 0),)) == [DelayedRecordsDropped(7, (40,))]
    assert index.stage(20, events=(LogTruncated(7, 42),)) == [DelayedRecordsDropped(7, (41,))]
    assert index.stage(20, events=(TopicDeleted("t", b"\0" * 16, (7,)),)) == [DelayedRecordsDropped(7, (42, 43))]
    assert index.rows(DELAYED_RECORDS.name) == {}


def test_a_restarted_broker_drops_rows_left_while_the_plugin_was_off(index: Index) -> None:
    index.stage(0, index.batch([Record(0, 1, None, b"a", ((AFTER, b"1000"),))], base=40))
    index.memo.clear()  # a new broker on the same store; meanwhile the partition was truncated past the row
    index.log_start[7] = 41
    assert index.stage(5, events=(OffsetCommitted("g", "t", 0, 1, -1, "", 5),)) == []  # not the plugin's concern
    # the first change it derives from (here an event naming another partition) drops the row left behind
    assert index.stage(5, events=(LogTruncated(8, 0),)) == [DelayedRecordsDropped(7, (40,))]


def test_another_plugin_holds_back_beside_the_built_in() -> None:
    class HoldOffsetThree:
        @hookimpl
        def logwright_hold_back(self, query: HoldBackQuery) -> HeldBack | None:
            return HeldBack.of((HeldSpan(3, 3, query.now_ms + 5),)) if query.first <= 3 <= query.last else None

    index = Index(PluginHost.load(installed=False, extra=[("hold_three", HoldOffsetThree())]))
    index.stage(0, index.batch([Record(0, 1, None, b"a", ((AFTER, b"100"),))], base=40))
    held = index.held(10)
    assert held is not None
    assert held.offsets.ranges == ((3, 3), (40, 40)) and held.next_due_ms == 15
    assert held.spans == (HeldSpan(3, 3, 15), HeldSpan(40, 40, 100))


def test_disabled_it_implements_nothing() -> None:
    host = PluginHost.load(installed=False, disabled=["delayed_delivery"])
    [info] = [info for info in host.plugins() if info.name == "delayed_delivery"]
    assert info.disabled and info.hooks == () and info.registrations == ()
    assert "logwright.delayed.delivery.compressed.enable" not in {key.name for key in host.config_keys()}
    assert "delayed_records" not in {projection.name for projection in host.projections()}


@dataclass(frozen=True, slots=True)
class _IndexedBeforeRows(Event):
    """`DelayedRecordsIndexed` as the first index wrote it: three fields, no ``own_row``."""

    TAG: ClassVar[int] = 12
    partition_id: int
    appended_at_ms: int
    entries: tuple[tuple[int, int], ...]


def test_a_log_written_by_the_first_index_reads_folds_and_checks(tmp_path: Path) -> None:
    """Tag 12 entries without ``own_row`` decode as legacy entries, fold into the partition's one row as they
    always did, are held back through the hook, and ``logwright check`` finds the store consistent."""
    old_types = TypeRegistry()
    old_types.register(_IndexedBeforeRows)
    old = RocksEventStore(tmp_path / "data", projections=(), types=old_types)
    old.append([_IndexedBeforeRows(7, 1000, ((3, 5000), (4, 2000))), _IndexedBeforeRows(7, 2500, ((9, 9000),))])
    old.commit()
    old.close()

    host = PluginHost.load(installed=False)
    store = RocksEventStore(tmp_path / "data", projections=host.projections(), types=host.type_registry())
    try:
        assert dict(store.entities(DELAYED_RECORDS.name)) == {"7": DelayedIndex(7, ((3, 5000), (9, 9000)))}
        broker = in_process_broker(store, clock=ManualClock(3000), host=host)
        held = broker.held_back(7, 0, 100, detailed=True)
        assert held.spans == (HeldSpan(3, 3, 5000), HeldSpan(9, 9, 9000)) and held.next_due_ms == 5000
        assert check_store(store).consistent
    finally:
        store.close()
