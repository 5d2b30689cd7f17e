"""The ``producers`` projection: sequences for idempotence, and what DescribeProducers shows of a producer, as Kafka's
producer state keeps it (last timestamp, the coordinator epoch of its last marker)."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest
from logwright.core.errors import InvalidProducerEpoch, OutOfOrderSequence, TransactionCoordinatorFenced
from logwright.core.events import Event, ProducerStatesExpired, RecordsAppended, TransactionMarkerWritten
from logwright.core.log.producers import (
    LAST_EPOCH,
    PRODUCERS,
    BatchSequence,
    ProducerState,
    check_marker,
    check_sequence,
    idle_producers,
    is_marker,
    producer_key,
)
from logwright.core.projection import fold
from logwright.eventstore.codec import default_registry

PARTITION = 3
PRODUCER = 7
KEY = producer_key(PARTITION, PRODUCER)


def batch(offset: int, sequence: int, count: int = 2, epoch: int = 0, timestamp: int = 1_000,
          transactional: bool = False) -> RecordsAppended:
    return RecordsAppended(PARTITION, offset, count, 100, timestamp, PRODUCER, epoch, sequence, transactional)


def marker(offset: int, epoch: int = 0, timestamp: int = 9_000) -> RecordsAppended:
    """A control batch as the transaction coordinator stores it: transactional, without a sequence."""
    return RecordsAppended(PARTITION, offset, 1, 78, timestamp, PRODUCER, epoch, -1, True)


def state_after(*events: Event) -> Any:
    return fold(PRODUCERS, list(events)).get(KEY)


def test_a_batch_keeps_its_max_timestamp_and_no_coordinator_epoch() -> None:
    state = state_after(batch(0, 0, timestamp=1_500), batch(2, 2, timestamp=1_200))
    assert state == ProducerState(0, state.recent, 1_200, -1)
    assert [entry.first_sequence for entry in state.recent] == [0, 2]


def test_a_marker_keeps_its_epochs_batches_and_records_its_time_and_coordinator_epoch() -> None:
    state = state_after(batch(0, 0, transactional=True), marker(2, timestamp=9_100))
    assert (state.producer_epoch, state.last_timestamp, state.coordinator_epoch) == (0, 9_100, 0)
    assert list(state.recent) == [BatchSequence(0, 1, 0)]
    assert check_sequence(state, 0, 0, 2) is not None  # still a duplicate
    assert check_sequence(state, 0, 2, 1) is None
    later = state_after(batch(0, 0, transactional=True), marker(2), batch(3, 2, transactional=True, timestamp=9_500))
    assert (later.last_timestamp, later.coordinator_epoch) == (9_500, 0)  # a batch keeps the marker's epoch


def test_a_marker_at_a_bumped_epoch_starts_the_sequences_over_and_fences_the_old_epoch() -> None:
    state = state_after(batch(0, 0, transactional=True), marker(2, epoch=1))
    assert (state.producer_epoch, list(state.recent), state.coordinator_epoch) == (1, [], 0)
    assert check_sequence(state, 1, 0, 1) is None
    with pytest.raises(OutOfOrderSequence):
        check_sequence(state, 1, 5, 1)
    with pytest.raises(InvalidProducerEpoch):
        check_sequence(state, 0, 2, 1)


def test_a_marker_on_a_partition_the_producer_never_wrote_makes_a_row_without_batches() -> None:
    assert state_after(marker(0, timestamp=42)) == ProducerState(0, last_timestamp=42, coordinator_epoch=0)


def test_an_admins_marker_leaves_its_coordinator_epoch_in_the_row() -> None:
    """WriteTxnMarkers names a coordinator epoch; the broker's own markers are at 0 and need no second event."""
    admin = state_after(batch(0, 0, epoch=2), marker(2, epoch=3),
                        TransactionMarkerWritten(PARTITION, 2, PRODUCER, 3, False, 0, 3, coordinator_epoch=9))
    assert (admin.producer_epoch, tuple(admin.recent), admin.coordinator_epoch) == (3, (), 9)
    own = TransactionMarkerWritten(PARTITION, 2, PRODUCER, 3, False, 0, 3)
    assert PRODUCERS.entity_keys(own) == ()
    assert state_after(batch(0, 0), marker(2), own).coordinator_epoch == 0


@pytest.mark.parametrize(("epoch", "open_there", "version", "refused"), [
    (4, True, 0, None), (5, True, 0, None), (3, False, 0, InvalidProducerEpoch),
    (5, True, 2, None), (4, False, 2, None), (4, True, 2, InvalidProducerEpoch), (3, False, 2, InvalidProducerEpoch),
    (4, True, 7, InvalidProducerEpoch),  # any version from 2 is version 2's rule
])
def test_a_marker_for_an_older_epoch_is_refused_and_from_version_2_the_same_epoch_unless_a_retry(
        epoch: int, open_there: bool, version: int, refused: type[Exception] | None) -> None:
    state = ProducerState(4, coordinator_epoch=1)
    if refused is None:
        check_marker(state, open_there, epoch, 1, version)
    else:
        with pytest.raises(refused):
            check_marker(state, open_there, epoch, 1, version)


def test_a_marker_at_the_last_epoch_may_be_written_again_and_an_older_coordinator_is_fenced() -> None:
    check_marker(ProducerState(LAST_EPOCH), True, LAST_EPOCH, -1, 2)
    check_marker(None, True, 0, -1, 2)  # a producer the partition does not know takes any marker
    with pytest.raises(TransactionCoordinatorFenced):
        check_marker(ProducerState(4, coordinator_epoch=6), False, 5, 5, 0)
    check_marker(ProducerState(4, coordinator_epoch=6), False, 5, 6, 0)


def test_only_a_producers_control_batch_is_a_marker() -> None:
    plain = RecordsAppended(PARTITION, 0, 1, 10, 5, -1, -1, -1, False)
    assert not is_marker(plain) and not is_marker(batch(0, 0, transactional=True)) and is_marker(marker(0))
    assert fold(PRODUCERS, [plain]) == {}


def test_a_row_stored_before_the_timestamp_and_coordinator_epoch_reads_them_as_unknown() -> None:
    registry = default_registry()
    stored = registry.encode(ProducerState(2, state_after(batch(0, 0)).recent))
    tag, version, epoch, recent, _timestamp, _coordinator_epoch = msgpack.unpackb(stored, raw=False)
    older = msgpack.packb([tag, version, epoch, recent], use_bin_type=True)
    assert registry.decode(older, "producers/3/7") == ProducerState(2, state_after(batch(0, 0)).recent, -1, -1)


def test_a_producer_the_partition_does_not_know_may_start_at_any_sequence() -> None:
    assert check_sequence(None, 0, 17, 3) is None
    assert check_sequence(None, 5, 0, 1) is None


def test_expired_producer_states_are_forgotten_and_only_theirs() -> None:
    other = RecordsAppended(PARTITION, 4, 1, 10, 5, PRODUCER + 1, 0, 0, False)
    states = fold(PRODUCERS, [batch(0, 0), other, ProducerStatesExpired(PARTITION, (PRODUCER,))])
    assert KEY not in states and producer_key(PARTITION, PRODUCER + 1) in states


def test_idle_producers_are_those_idle_long_enough_without_an_open_transaction() -> None:
    rows = {producer_key(partition, producer): ProducerState(0) for partition, producer in
            ((1, 10), (1, 11), (1, 12), (2, 10), (2, 13))}
    active = {"1/10": 9_000, "1/11": 3_000, "2/10": 4_000}
    idle = idle_producers(rows, active, {1: frozenset({12})}, now_ms=10_000, expiration_ms=6_000, known_since_ms=2_000)
    assert idle == {1: (11,), 2: (10, 13)}, "1/10 active lately, 1/12 in a transaction, 2/13 unseen since the start"
    assert idle_producers(rows, active, {}, now_ms=7_999, expiration_ms=6_000, known_since_ms=2_000) == {}
