"""Transaction coordinator decisions and the per-partition transaction index: given events, when a command,
then events; no I/O."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.core.errors import (
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidTransactionTimeout,
    InvalidTxnState,
    ProducerFenced,
)
from logwright.core.events import Event, LogTruncated, OffsetCommitted, ProducerIdAllocated, RecordsAppended
from logwright.core.events.transactions import (
    TransactionalOffsetCommitted,
    TransactionalProducerInitialized,
    TransactionEnded,
    TransactionMarkerWritten,
)
from logwright.core.log.producers import COUNTER_KEY, MAX_EPOCH, PRODUCERS
from logwright.core.projection import fold
from logwright.core.transactions.partition_transactions import (
    PARTITION_TRANSACTIONS,
    AbortedTransaction,
    OpenTransaction,
    PartitionTransactions,
    ending_abort,
)
from logwright.core.transactions.pending_offsets import PendingOffsets
from logwright.core.transactions.transactions import (
    COMPLETE_ABORT,
    COMPLETE_COMMIT,
    ONGOING,
    TRANSACTIONS,
    TransactionalIdOwner,
    TransactionState,
    add_group,
    add_partitions,
    check_offset_commit,
    check_transactional_append,
    end_transaction,
    end_transaction_v2,
    expire,
    expired_transactional_ids,
    init_transactional,
    owner_key,
    pending_offsets,
    transaction_key,
)

MAX_TIMEOUT = 900_000


class Log:
    """The events so far and the states they fold to, as the broker would hold them."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, *events: Event) -> None:
        self.events.extend(events)

    def state(self, transactional_id: str = "tx") -> TransactionState | None:
        found = fold(TRANSACTIONS, self.events).get(transaction_key(transactional_id))
        return found if isinstance(found, TransactionState) else None

    def init(self, transactional_id: str = "tx", timeout_ms: int = 60_000, now_ms: int = 0, **ids: int) -> Any:
        counter = fold(PRODUCERS, self.events).get(COUNTER_KEY)
        completion, events = init_transactional(self.state(transactional_id), counter, transactional_id,
                                                timeout_ms, MAX_TIMEOUT, now_ms, **ids)
        if completion is not None:
            self.complete(completion)
        self.add(*events)
        return completion

    def complete(self, completion: Any) -> None:
        for offset, partition_id in enumerate(completion.partition_ids, start=100):
            self.add(RecordsAppended(partition_id, offset, 1, 70, 0, completion.producer_id, completion.marker_epoch,
                                     -1, True),
                     TransactionMarkerWritten(partition_id, offset, completion.producer_id, completion.marker_epoch,
                                              completion.committed))
        self.add(*completion.events)


def test_a_transactional_id_keeps_its_producer_id_and_each_init_bumps_the_epoch() -> None:
    log = Log()
    log.init()
    log.init("other")
    log.init()
    state = log.state()
    assert state is not None and (state.producer_id, state.producer_epoch, state.previous_epoch) == (0, 1, 0)
    assert log.state("other") is not None and log.state("other").producer_id == 1  # type: ignore[union-attr]
    assert any(isinstance(event, ProducerIdAllocated) for event in log.events)


def test_timeouts_above_the_broker_maximum_are_refused() -> None:
    with pytest.raises(InvalidTransactionTimeout, match="transaction.max.timeout.ms=900000"):
        Log().init(timeout_ms=MAX_TIMEOUT + 1)
    with pytest.raises(InvalidTransactionTimeout):
        Log().init(timeout_ms=0)


def test_commit_ends_the_transaction_with_its_partitions_and_offsets() -> None:
    log = Log()
    log.init()
    log.add(add_partitions(log.state(), 0, 0, [3, 1], now_ms=10))  # type: ignore[arg-type]
    assert add_partitions(log.state(), 0, 0, [1], now_ms=11) is None, "a retry adds nothing"
    log.add(add_group(log.state(), 0, 0, "g", now_ms=12))  # type: ignore[arg-type]
    check_offset_commit(log.state(), 0, 0, "g")
    with pytest.raises(InvalidTxnState):
        check_offset_commit(log.state(), 0, 0, "not-added")
    state = log.state()
    assert state is not None and (state.status, state.partition_ids, state.started_ms) == (ONGOING, (1, 3), 10)
    check_transactional_append(state, 0, 0, 3)
    with pytest.raises(InvalidTxnState):
        check_transactional_append(state, 0, 0, 2)
    log.add(TransactionalOffsetCommitted("tx", 0, 0, OffsetCommitted("g", "t", 0, 42, commit_time_ms=12)))
    assert pending_offsets([log.state()]) == {"g": {("t", 0)}}
    completion = end_transaction(log.state(), 0, 0, True, now_ms=20)
    assert completion is not None and completion.partition_ids == (1, 3) and completion.committed
    assert completion.offsets == (OffsetCommitted("g", "t", 0, 42, -1, None, 12),)
    log.complete(completion)
    state = log.state()
    assert state is not None and (state.status, state.partition_ids, state.producer_epoch) == (COMPLETE_COMMIT, (), 0)
    assert pending_offsets([state]) == {}
    assert end_transaction(state, 0, 0, True, now_ms=21) is None, "a retried commit is answered again"
    with pytest.raises(InvalidTxnState):
        end_transaction(state, 0, 0, False, now_ms=21)


def test_reinit_aborts_the_open_transaction_and_fences_the_zombie() -> None:
    log = Log()
    log.init()
    log.add(add_partitions(log.state(), 0, 0, [5], now_ms=1))  # type: ignore[arg-type]
    completion = log.init(now_ms=2)
    assert completion is not None and not completion.committed and completion.marker_epoch == 1
    assert completion.ended.reason == "reinitialized"
    with pytest.raises(ProducerFenced):
        end_transaction(log.state(), 0, 0, True, now_ms=3)
    with pytest.raises(InvalidProducerEpoch):
        check_transactional_append(log.state(), 0, 0, 5)
    with pytest.raises(InvalidProducerIdMapping):
        add_partitions(log.state(), 7, 1, [5], now_ms=3)


def test_an_expired_transaction_is_aborted_with_the_epoch_bumped_and_the_producer_may_recover() -> None:
    log = Log()
    log.init(timeout_ms=1_000)
    log.add(add_partitions(log.state(), 0, 0, [2], now_ms=100))  # type: ignore[arg-type]
    state = log.state()
    assert state is not None and expire(state, 1_099) is None
    completion = expire(state, 1_100)
    assert completion is not None and completion.ended == TransactionEnded("tx", 0, 1, False, "timeout", 1_100)
    log.complete(completion)
    state = log.state()
    assert state is not None and (state.status, state.producer_epoch, state.previous_epoch) == (COMPLETE_ABORT, 1, 0)
    with pytest.raises(ProducerFenced):
        end_transaction(state, 0, 0, True, now_ms=1_200)
    log.init(producer_id=0, producer_epoch=0)  # KIP-360: the previous epoch may ask for a bump
    state = log.state()
    assert state is not None and state.producer_epoch == 2


def test_an_exhausted_epoch_gets_a_fresh_producer_id() -> None:
    log = Log()
    log.init()
    exhausted = TransactionState("tx", 0, MAX_EPOCH, 1_000)
    _, events = init_transactional(exhausted, fold(PRODUCERS, log.events).get(COUNTER_KEY), "tx", 1_000,
                                   MAX_TIMEOUT, 0)
    assert [type(event).__name__ for event in events] == ["ProducerIdAllocated", "TransactionalProducerInitialized"]
    assert events[-1].producer_id == 1 and events[-1].producer_epoch == 0  # type: ignore[attr-defined]


def test_partition_index_tracks_the_last_stable_offset_and_aborted_ranges() -> None:
    def data(offset: int, producer_id: int) -> RecordsAppended:
        return RecordsAppended(7, offset, 2, 100, 0, producer_id, 0, offset, True)

    events: list[Event] = [
        RecordsAppended(7, 0, 5, 100, 0),
        data(5, producer_id=1),
        data(7, producer_id=2),
        data(9, producer_id=1),
    ]
    state = fold(PARTITION_TRANSACTIONS, events)["7"]
    assert state == PartitionTransactions((OpenTransaction(1, 5), OpenTransaction(2, 7)))
    assert state.last_stable_offset(11) == 5
    events += [RecordsAppended(7, 11, 1, 70, 0, 1, 0, -1, True), TransactionMarkerWritten(7, 11, 1, 0, False)]
    state = fold(PARTITION_TRANSACTIONS, events)["7"]
    assert state.last_stable_offset(12) == 7
    assert state.aborted == (AbortedTransaction(1, 5, 11),)
    assert state.aborted_between(0, 5) == () and state.aborted_between(11, 12) == state.aborted
    events += [RecordsAppended(7, 12, 1, 70, 0, 2, 0, -1, True), TransactionMarkerWritten(7, 12, 2, 0, True)]
    state = fold(PARTITION_TRANSACTIONS, events)["7"]
    assert state.open == () and state.last_stable_offset(13) == 13
    events.append(LogTruncated(7, 12))
    assert "7" not in fold(PARTITION_TRANSACTIONS, events), "aborted ranges below the log start are forgotten"


def test_an_abort_the_store_indexes_is_not_kept_in_the_partitions_row() -> None:
    """A marker carrying its transaction's first offset and the partition's last stable offset after it (what the
    coordinator writes) ends the transaction; its abort is the store's index row, not an entry of this row."""
    events: list[Event] = [RecordsAppended(7, 5, 2, 100, 0, 1, 0, 0, True), RecordsAppended(7, 7, 2, 100, 0, 2, 0, 0,
                                                                                              True)]
    state = fold(PARTITION_TRANSACTIONS, events)["7"]
    assert ending_abort(state, 1, 9) == (5, 7), "producer 2, open from 7, holds the last stable offset"
    assert ending_abort(state, 3, 9) is None, "nothing of producer 3's to abort here"
    assert ending_abort(PartitionTransactions((OpenTransaction(2, 7),)), 2, 9) == (7, 10), "none left open: after it"
    events += [RecordsAppended(7, 9, 1, 70, 0, 1, 0, -1, True), TransactionMarkerWritten(7, 9, 1, 0, False, 5, 7)]
    state = fold(PARTITION_TRANSACTIONS, events)["7"]
    assert state == PartitionTransactions((OpenTransaction(2, 7),)) and state.aborted == ()
    assert TransactionMarkerWritten(7, 9, 1, 0, False, 5, 7).indexed_abort
    assert not TransactionMarkerWritten(7, 9, 1, 0, False).indexed_abort, "written before the index: kept in the row"
    assert not TransactionMarkerWritten(7, 9, 1, 0, True, 5, 7).indexed_abort


def test_a_transactional_commit_of_thousands_of_partitions_folds_without_walking_the_pending_offsets(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each TxnOffsetCommit partition is an event; the fold puts it in a persistent map instead of searching and
    rebuilding a tuple of the commits so far: 5,000 partitions folded in 0.68 s, quadratic. Iterating the pending
    offsets is counted, and the fold of 2,000 commits (one of them again) may not do it once."""
    log = Log()
    log.init()
    log.add(add_group(log.state(), 0, 0, "g", now_ms=1))  # type: ignore[arg-type]
    walks = 0
    sort = PendingOffsets.sorted

    def counted(self: PendingOffsets) -> tuple[OffsetCommitted, ...]:
        nonlocal walks
        walks += 1
        return sort(self)

    monkeypatch.setattr(PendingOffsets, "sorted", counted)
    commits = [OffsetCommitted("g", "t", partition, partition + 100, commit_time_ms=2) for partition in range(2_000)]
    again = OffsetCommitted("g", "t", 1_234, 7, commit_time_ms=3)
    log.add(*(TransactionalOffsetCommitted("tx", 0, 0, commit) for commit in [*commits, again]))
    state = log.state()
    assert walks == 0
    assert state is not None and len(state.pending_offsets) == 2_000 and state.updated_ms == 3
    completion = end_transaction(state, 0, 0, True, now_ms=4)
    assert completion is not None and walks == 1
    assert completion.offsets == tuple(again if commit.partition == 1_234 else commit for commit in commits), (
        "the latest commit per partition, in partition order")
    assert pending_offsets([state]) == {"g": {("t", partition) for partition in range(2_000)}}


def test_a_transactions_partitions_are_found_at_every_edge_of_their_bisection() -> None:
    """Each batch a transaction appends looks its partition up by bisection of the sorted ids (a scan for each batch
    of a 10,000-partition transaction grew with partitions times batches): the first, the last, and ids between and
    outside them."""
    log = Log()
    log.init()
    log.add(add_partitions(log.state(), 0, 0, range(0, 20_000, 2), now_ms=1))  # type: ignore[arg-type]
    state = log.state()
    for partition_id in (0, 2, 9_998, 19_998):
        check_transactional_append(state, 0, 0, partition_id)
    for partition_id in (-1, 1, 9_999, 19_999, 20_000):
        with pytest.raises(InvalidTxnState):
            check_transactional_append(state, 0, 0, partition_id)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8)), max_size=12), st.integers(0, 120),
       st.integers(0, 120))
def test_the_aborted_transactions_between_two_offsets_are_found_as_a_scan_of_all_finds_them(
        spans: list[tuple[int, int]], start: int, end: int) -> None:
    """Found from the first whose marker is at the start or later (bisection over markers in order)."""
    aborted, marker = [], 0
    for gap, length in spans:  # markers in the order written, each transaction's records before its marker
        marker += gap + 1
        aborted.append(AbortedTransaction(len(aborted), max(0, marker - length), marker))
    state = PartitionTransactions((), tuple(aborted))
    scanned = tuple(entry for entry in aborted if entry.first_offset < end and entry.last_offset >= start)
    assert state.aborted_between(start, end) == (scanned if start < end else ()), "an empty range: none"


def test_init_naming_another_producer_id_is_fenced_and_an_unknown_transactional_id_starts_afresh() -> None:
    """As Kafka 4.4 (tests/integration/test_transaction_checks.py): a producer naming an id that is not its
    transactional id's was taken over; one naming an id for a transactional id the broker does not know (expired,
    say) gets a fresh producer id at epoch 0."""
    log = Log()
    log.init()
    with pytest.raises(ProducerFenced):
        log.init(producer_id=7, producer_epoch=0)
    log.init("other", producer_id=42, producer_epoch=3)
    state = log.state("other")
    assert state is not None and state.producer_epoch == 0 and state.producer_id != 42


def test_idle_transactional_ids_without_an_open_transaction_expire_with_their_producer_ids() -> None:
    log = Log()
    log.init("idle", now_ms=1_000)
    log.init("ended", now_ms=1_000)
    log.add(add_partitions(log.state("ended"), 1, 0, [7], 2_000))  # type: ignore[arg-type]
    log.complete(end_transaction(log.state("ended"), 1, 0, True, 3_000))  # type: ignore[arg-type]
    log.init("open", now_ms=1_000)
    log.add(add_partitions(log.state("open"), 2, 0, [7], 2_000))  # type: ignore[arg-type]
    states = [state for state in fold(TRANSACTIONS, log.events).values() if isinstance(state, TransactionState)]
    assert expired_transactional_ids(states, 10_999, 10_000, 0) is None
    decided = expired_transactional_ids(states, 11_000, 10_000, 0)
    assert decided is not None and (decided.transactional_ids, decided.producer_ids) == (("idle",), (0,))
    later = expired_transactional_ids(states, 13_000, 10_000, 0)
    assert later is not None and set(later.transactional_ids) == {"idle", "ended"}, "an open one never expires"
    log.add(later)
    folded = fold(TRANSACTIONS, log.events)
    assert transaction_key("idle") not in folded and owner_key(0) not in folded and owner_key(1) not in folded
    assert log.state("open") is not None
    assert log.init("idle", now_ms=20_000) is None and log.state("idle").producer_id == 3  # type: ignore[union-attr]


def test_a_state_that_never_recorded_its_update_counts_from_the_brokers_start() -> None:
    state = TransactionState("old", 4, 0, 60_000)
    assert expired_transactional_ids([state], 15_000, 10_000, 5_001) is None
    assert expired_transactional_ids([state], 15_000, 10_000, 5_000) is not None


def test_every_version_2_end_bumps_the_epoch_and_a_retry_names_the_epoch_before_it() -> None:
    """EndTxn v5 as Kafka 4.4 answers it (tests/integration/test_transaction_version_2.py runs the same on both): the
    end's markers and the epoch from then on are one higher; the previous epoch retries that end (the other outcome is
    INVALID_TXN_STATE); the current epoch with nothing open may abort (an empty transaction, bumped again) but not
    commit."""
    log = Log()
    log.init()
    log.add(add_partitions(log.state(), 0, 0, [4], now_ms=1))  # type: ignore[arg-type]
    with pytest.raises(ProducerFenced):
        end_transaction_v2(log.state(), None, 0, 1, True, now_ms=2)
    with pytest.raises(InvalidProducerIdMapping):
        end_transaction_v2(log.state(), None, 9, 0, True, now_ms=2)
    with pytest.raises(InvalidProducerIdMapping):
        end_transaction_v2(None, None, 0, 0, True, now_ms=2)
    completion = end_transaction_v2(log.state(), None, 0, 0, True, now_ms=2)
    assert completion is not None and (completion.marker_epoch, completion.partition_ids) == (1, (4,))
    assert completion.next_producer_id_and_epoch == (0, 1) and not completion.allocated
    log.complete(completion)
    state = log.state()
    assert state is not None and (state.status, state.producer_epoch, state.previous_epoch) == (COMPLETE_COMMIT, 1, 0)
    assert end_transaction_v2(state, None, 0, 0, True, now_ms=3) is None, "a retry of the commit"
    for epoch, committed in ((0, False), (1, True)):
        with pytest.raises(InvalidTxnState):
            end_transaction_v2(state, None, 0, epoch, committed, now_ms=3)
    with pytest.raises(ProducerFenced):
        end_transaction_v2(state, None, 0, 2, False, now_ms=3)
    empty = end_transaction_v2(state, None, 0, 1, False, now_ms=4)
    assert empty is not None and (empty.marker_epoch, empty.partition_ids, empty.committed) == (2, (), False)
    log.complete(empty)
    state = log.state()
    assert state is not None and (state.status, state.producer_epoch) == (COMPLETE_ABORT, 2)
    assert end_transaction_v2(state, None, 0, 1, False, now_ms=5) is None, "a retry of the abort"
    with pytest.raises(InvalidTxnState):
        end_transaction_v2(state, None, 0, 1, True, now_ms=5)
    with pytest.raises(ProducerFenced):
        end_transaction_v2(state, None, 0, 0, False, now_ms=5)
    with pytest.raises(InvalidProducerEpoch):
        check_transactional_append(state, 0, 1, 4)
    log.add(add_partitions(state, 0, 2, [4], now_ms=6))  # type: ignore[arg-type]
    check_transactional_append(log.state(), 0, 2, 4)


def test_a_version_2_end_from_the_last_epoch_moves_the_transactional_id_to_a_fresh_producer_id() -> None:
    """Kafka's nextProducerId: the markers carry the old id at 32,767, the transactional id goes on with a fresh id at
    epoch 0 (its owner row written with the end), and a retry naming the old id at 32,766 is answered as a retry."""
    log = Log()
    log.init()
    log.add(TransactionalProducerInitialized("tx", 0, MAX_EPOCH, 60_000, MAX_EPOCH - 1, 1))
    log.add(add_partitions(log.state(), 0, MAX_EPOCH, [7], now_ms=2))  # type: ignore[arg-type]
    counter = fold(PRODUCERS, log.events).get(COUNTER_KEY)
    completion = end_transaction_v2(log.state(), counter, 0, MAX_EPOCH, True, now_ms=3)
    assert completion is not None and completion.marker_epoch == MAX_EPOCH + 1
    assert [type(event).__name__ for event in completion.allocated] == ["ProducerIdAllocated"]
    assert completion.ended.next_producer_id == 1 and completion.next_producer_id_and_epoch == (1, 0)
    log.complete(completion)
    state = log.state()
    assert state is not None and (state.producer_id, state.producer_epoch, state.previous_producer_id) == (1, 0, 0)
    assert fold(TRANSACTIONS, log.events).get(owner_key(1)) == TransactionalIdOwner("tx")
    assert fold(PRODUCERS, log.events).get(COUNTER_KEY).next_producer_id == 2  # type: ignore[union-attr]
    assert end_transaction_v2(state, None, 0, MAX_EPOCH, True, now_ms=4) is None, "the retry names the old id"
    with pytest.raises(InvalidProducerIdMapping):
        end_transaction_v2(state, None, 0, 0, True, now_ms=4)
    expired = expired_transactional_ids([state], now_ms=10**9, expiration_ms=1, known_since_ms=0)
    assert expired is not None and expired.producer_ids == (1, 0)
