"""The store's index of aborted transactions (Kafka's segment transaction index): one row per ABORT marker written with
it, read from a marker on until one's last stable offset reaches past the read, deleted below a new log start and with
its topic, checked against the events by `logwright check`. The row of `partition_transactions` keeps no indexed
abort (it rewrote all of them on every transaction of the partition)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from logwright.core.events import RecordsAppended
from logwright.core.events.transactions import TransactionMarkerWritten
from logwright.core.log.catalog import delete_topic, topic_key
from logwright.core.log.partition_log import append_batch
from logwright.core.projection import fold
from logwright.core.transactions.partition_transactions import (
    PARTITION_TRANSACTIONS,
    PartitionTransactions,
    ending_abort,
)
from logwright.eventstore import keys
from logwright.eventstore.check import check_store
from logwright.eventstore.interface import StoredBatch
from logwright.eventstore.rocksdb import RocksEventStore

from .support import fake_batch, new_topic, open_store, partition_state, reopen_store

EVERY = 2**63 - 1


class Partition:
    """Transactions on one partition, staged as the broker stages them: data batches, then each ending's control batch
    and marker; every event also kept in the form markers had before the index (for the reference fold)."""

    def __init__(self, store: RocksEventStore, partition_id: int) -> None:
        self.store, self.partition_id = store, partition_id
        self.sequences: dict[int, int] = {}
        self.before_the_index: list[RecordsAppended | TransactionMarkerWritten] = []

    def _append(self, producer_id: int, records: int, control: bool) -> int:
        decided = append_batch(partition_state(self.store, self.partition_id), records, 0, 1_000)
        sequence = -1 if control else self.sequences.get(producer_id, 0)
        if not control:
            self.sequences[producer_id] = sequence + records
        event = RecordsAppended(self.partition_id, decided.base_offset, records, 100, 1_000, producer_id, 0, sequence,
                                True)
        self.store.append([event], [StoredBatch(self.partition_id, decided.base_offset,
                                                fake_batch(decided.base_offset, records))])
        self.before_the_index.append(event)
        return decided.base_offset

    def data(self, producer_id: int, records: int = 1) -> None:
        self._append(producer_id, records, control=False)

    def end(self, producer_id: int, committed: bool) -> int:
        offset = self._append(producer_id, 1, control=True)
        state = self.store.state("partition_transactions", str(self.partition_id))
        first, stable = (-1, -1) if committed else ending_abort(state, producer_id, offset) or (-1, -1)
        self.store.append([TransactionMarkerWritten(self.partition_id, offset, producer_id, 0, committed, first,
                                                    stable)])
        self.before_the_index.append(TransactionMarkerWritten(self.partition_id, offset, producer_id, 0, committed))
        return offset

    def exact(self, start: int, end: int) -> list[tuple[int, int, int]]:
        """What the row kept before the index answers: every aborted transaction overlapping the read."""
        state = fold(PARTITION_TRANSACTIONS, self.before_the_index).get(str(self.partition_id))
        if not isinstance(state, PartitionTransactions):
            return []
        return [(entry.producer_id, entry.first_offset, entry.last_offset)
                for entry in state.aborted_between(start, end)]


STEPS = st.lists(st.tuples(st.sampled_from(["data", "commit", "abort"]), st.integers(1, 4), st.integers(1, 3)),
                 min_size=1, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=STEPS)
def test_the_index_answers_every_read_as_the_row_kept_before_it_did(tmp_path_factory, steps) -> None:  # type: ignore[no-untyped-def]
    """Interleaved transactions of four producers: for every read range, the indexed lookup with Kafka's stop rule
    lists exactly the aborted transactions the exact scan of the old row lists."""
    opened: list[RocksEventStore] = []
    store, partition = one_partition(opened, tmp_path_factory.mktemp("aborted") / "data")
    try:
        open_producers: set[int] = set()
        for action, producer_id, records in steps:
            if action == "data":
                partition.data(producer_id, records)
                open_producers.add(producer_id)
            elif producer_id in open_producers:
                partition.end(producer_id, committed=action == "commit")
                open_producers.discard(producer_id)
        store.commit()
        end_of_log = partition_state(store, partition.partition_id).next_offset
        for start in range(end_of_log + 1):
            for end in range(start, end_of_log + 2):
                assert store.aborted(partition.partition_id, start, end) == partition.exact(start, end), (start, end)
        row = store.state("partition_transactions", str(partition.partition_id))
        assert row is None or not row.aborted, "no indexed abort is kept in the row"
        assert check_store(store).consistent
    finally:
        for each in opened:
            each.close()


def one_partition(opened: list[RocksEventStore], path: Path) -> tuple[RocksEventStore, Partition]:
    store = open_store(opened, path)
    new_topic(store, "t")
    return store, Partition(store, store.state("catalog", topic_key("t")).partition_ids[0])


def test_a_lookup_stops_at_the_first_marker_whose_last_stable_offset_reaches_the_read(tmp_path: Path) -> None:
    opened: list[RocksEventStore] = []
    store, partition = one_partition(opened, tmp_path / "data")
    partition.data(1)  # 0
    partition.data(2)  # 1
    first_marker = partition.end(1, committed=False)  # 2: producer 2 still open from 1, so its LSO is 1
    partition.data(3)  # 3
    second_marker = partition.end(2, committed=False)  # 4: producer 3 open from 3: LSO 3
    third_marker = partition.end(3, committed=False)  # 5: nothing open: LSO 6
    store.commit()
    rows = [row[1:] for row in store.aborted_rows()]
    assert rows == [(1, 0, first_marker, 1), (2, 1, second_marker, 3), (3, 3, third_marker, 6)]
    pid = partition.partition_id
    assert store.aborted(pid, 0, 1) == [(1, 0, 2)], "stopped at the first marker: its LSO, 1, reaches the read's end"
    assert store.aborted(pid, 0, 2) == [(1, 0, 2), (2, 1, 4)], "the first's LSO is before the end: on to the second"
    assert store.aborted(pid, 3, 4) == [(2, 1, 4), (3, 3, 5)], "from the first marker at 3 or later"
    assert store.aborted(pid, 6, 7) == [] and store.aborted(pid, 5, 5) == []
    for _ in range(2):
        assert store.aborted(pid, 0, EVERY) == [(1, 0, 2), (2, 1, 4), (3, 3, 5)]
        store = reopen_store(opened, store)
    for each in opened:
        each.close()


def test_a_new_log_start_and_a_deleted_topic_take_their_aborted_transactions_with_them(tmp_path: Path) -> None:
    opened: list[RocksEventStore] = []
    store = open_store(opened, tmp_path / "data")
    created = new_topic(store, "t", 2)
    partitions = [Partition(store, partition_id) for partition_id in created.partition_ids]
    markers = {}
    for partition in partitions:
        markers[partition.partition_id] = []
        for producer_id in (1, 2, 3):
            partition.data(producer_id, 2)
            markers[partition.partition_id].append(partition.end(producer_id, committed=False))
    store.commit()
    first, second = created.partition_ids
    store.truncate(first, markers[first][1])  # the second marker stays: its transaction's records still do
    store.commit()
    assert [marker for _, _, marker in store.aborted(first, 0, EVERY)] == markers[first][1:]
    assert check_store(store).consistent
    store.append([delete_topic(store.state("catalog", topic_key("t")), "t")])
    store.commit()
    assert list(store.aborted_rows()) == [] and store.aborted(second, 0, EVERY) == []
    assert check_store(store).consistent
    for each in opened:
        each.close()


def test_check_finds_an_index_that_disagrees_with_the_events(tmp_path: Path) -> None:
    opened: list[RocksEventStore] = []
    store, partition = one_partition(opened, tmp_path / "data")
    partition.data(1)
    marker = partition.end(1, committed=False)
    store.commit()
    store.close()
    opened.clear()
    from rocksdict import Options, Rdict  # noqa: PLC0415 - only this test writes behind the store's back

    raw = Rdict(str(tmp_path / "data"), Options(raw_mode=True),
                column_families={name: Options(raw_mode=True) for name in keys.COLUMN_FAMILIES})
    raw.get_column_family("index").delete(keys.aborted_key(partition.partition_id, marker))
    raw.close()
    report = check_store(open_store(opened, tmp_path / "data", read_only=True))
    assert not report.consistent and any("aborted-transaction index" in line for line in report.differences)
    for each in opened:
        each.close()


def test_an_abort_is_listed_from_when_its_marker_is_staged(tmp_path: Path) -> None:
    """The partition's last stable offset passes a transaction as soon as its marker is staged (a transaction's end
    over many partitions stages its markers over several turns before one commit), so a Fetch may read its records
    then: the lookup lists the staged abort before its row is written, and forgets it if the commit is dropped."""
    opened: list[RocksEventStore] = []
    store, partition = one_partition(opened, tmp_path / "data")
    partition.data(1, 3)
    store.commit()
    marker = partition.end(1, committed=False)
    assert store.aborted(partition.partition_id, 0, 1) == [(1, 0, marker)], "staged, not committed"
    assert list(store.aborted_rows()) == []
    store.commit()
    assert store.aborted(partition.partition_id, 0, 1) == [(1, 0, marker)]
    assert [row[3] for row in store.aborted_rows()] == [marker]
    partition.data(2)
    partition.end(2, committed=False)
    store.reopen()  # what a failed commit does: the staged abort is gone with the rest
    assert store.aborted(partition.partition_id, 0, EVERY) == [(1, 0, marker)]
    for each in opened:
        each.close()


def test_which_partitions_have_aborts_is_known_across_reopens_and_followed_by_a_secondary(tmp_path: Path) -> None:
    """A read_committed Fetch asks every partition it reads for its aborts: the store knows which partitions have any
    (loaded from the index when it opens, added to as a marker is staged), and the others answer without an index
    lookup; a secondary instance, whose primary indexes aborts it never sees staged, always looks."""
    opened: list[RocksEventStore] = []
    store = open_store(opened, tmp_path / "data")
    created = new_topic(store, "t", 3)
    first, middle, last = (Partition(store, partition_id) for partition_id in created.partition_ids)
    for partition in (first, middle, last):
        partition.data(1, 2)
    marker = middle.end(1, committed=False)
    first.end(1, committed=True)
    store.commit()
    secondary = open_store(opened, tmp_path / "data", secondary=tmp_path / "secondary", load_state=False,
                           projections=())
    for _ in range(2):
        assert store.aborted(middle.partition_id, 0, EVERY) == [(1, 0, marker)]
        assert store.aborted(first.partition_id, 0, EVERY) == [] and store.aborted(last.partition_id, 0, EVERY) == []
        assert store._aborting == {middle.partition_id}
        store = reopen_store(opened, store)
    last.store = store
    last_marker = last.end(1, committed=False)  # staged: listed at once, and still known once committed and reopened
    assert store.aborted(last.partition_id, 0, EVERY) == [(1, 0, last_marker)]
    store.commit()
    secondary.catch_up()
    assert secondary.aborted(last.partition_id, 0, EVERY) == [(1, 0, last_marker)], "the primary's, seen on catch-up"
    assert secondary._aborting is None
    store = reopen_store(opened, store)
    assert store._aborting == {middle.partition_id, last.partition_id}
    assert store.aborted(last.partition_id, 0, EVERY) == [(1, 0, last_marker)]
    for each in opened:
        each.close()
