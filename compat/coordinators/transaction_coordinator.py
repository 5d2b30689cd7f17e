"""The async side of the transaction coordinator (`core.transactions`): ending transactions and their timeout.

A transaction ends in one WriteBatch: a control batch (COMMIT or ABORT marker, Kafka's control-record
format, attributes isTransactional | isControl, base sequence -1) into every partition it touched,
the group offsets it carried (on commit) and `TransactionEnded`; over more than `MARKERS_PER_TURN`
partitions the markers are staged a part a turn, still into that one WriteBatch (`complete`).
`TransactionTimer` keeps when each open transaction times out and a `DeadlineTimer` sleeps until the
earliest on `broker.clock`, then aborts what is due; LogwrightAdvanceClock runs it right after moving
a manual clock. The timer is built with the broker, so a transaction left open before a restart times
out on the restarted broker's clock without a client.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import struct
from collections.abc import Callable, Sequence

from logwright.compat.appends import stage_batch
from logwright.compat.broker import Broker
from logwright.compat.broker_commits import STORE_RETRY_MS
from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.compat.errors import ErrorCode
from logwright.compat.kafka.config_resources import failure
from logwright.compat.wire.record_batch import BatchHeader, Record, build_batch, parse_header
from logwright.core.errors import ConcurrentTransactions, DomainError, quoted
from logwright.core.events.transactions import (
    GroupAddedToTransaction,
    PartitionsAddedToTransaction,
    TransactionalProducerInitialized,
    TransactionEnded,
    TransactionMarkerWritten,
)
from logwright.core.log.producers import MARKER_COORDINATOR_EPOCH, producer_key
from logwright.core.transactions.partition_transactions import ending_abort
from logwright.core.transactions.transactions import ONGOING, Completion, TransactionState, expire
from logwright.eventstore.interface import LoggedEvent

log = logging.getLogger(__name__)

_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
ABORT_MARKER = 0
COMMIT_MARKER = 1


def marker_batch(producer_id: int, producer_epoch: int, committed: bool, timestamp: int,
                 coordinator_epoch: int = MARKER_COORDINATOR_EPOCH) -> bytes:
    """A control batch holding one COMMIT or ABORT marker (the broker's own at coordinator epoch 0: one coordinator,
    ever; an admin's, `write_txn_markers`, at the epoch it names)."""
    key = _CONTROL_KEY.pack(0, COMMIT_MARKER if committed else ABORT_MARKER)
    value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    return build_batch([Record(0, timestamp, key, value)], producer_id=producer_id, producer_epoch=producer_epoch,
                       base_sequence=-1, is_transactional=True, is_control=True)


MARKERS_PER_TURN = 500
"""Partitions whose markers one turn stages: a transaction over more ends a part at a time (`complete`). Staging a
marker costs about 25 us, so ending a 10,000-partition transaction in one stretch held every client 0.25 s."""


def stage_completion(broker: Broker, completion: Completion) -> None:
    """Stage the markers and events ending a transaction at once (one WriteBatch: no ``await`` in between), for a
    transaction of at most `MARKERS_PER_TURN` partitions; `complete` takes any."""
    with broker.staging_together():
        _stage_markers(broker, completion, completion.partition_ids, _marker_of(broker, completion))
        broker.stage(completion.events)


async def complete(broker: Broker, completion: Completion) -> None:
    """Stage the end of a transaction, over several turns when it has more than `MARKERS_PER_TURN` partitions, and
    in one WriteBatch all the same (`Broker.stage_in_parts`). Meanwhile its transactional id is ending
    (`check_not_ending`): another request for it is answered CONCURRENT_TRANSACTIONS, and a transactional batch of
    its producer is refused, so nothing joins the transaction between two parts."""
    partition_ids = completion.partition_ids
    if len(partition_ids) <= MARKERS_PER_TURN:
        stage_completion(broker, completion)
        return
    broker.ending_transactions[completion.ended.transactional_id] = (  # in the deciding turn
        completion.producer_id, completion.marker_epoch)
    if completion.allocated:  # in the deciding turn too: no other request allocates that id meanwhile
        broker.stage(completion.allocated)
    # a task of its own, shielded: a client disconnecting cancels its request, and an end cut between two parts
    # would commit some partitions' markers and leave the transaction open (then aborted over them)
    await asyncio.shield(broker.run_to_the_end(_end_over_turns(broker, completion), "transaction-end"))


async def _end_over_turns(broker: Broker, completion: Completion) -> None:
    """`complete`'s parts, once the transactional id is marked ending; unmarks it."""
    partition_ids = completion.partition_ids
    marker = _marker_of(broker, completion)
    try:
        parts: list[Callable[[], object]] = [
            functools.partial(_stage_markers, broker, completion, partition_ids[start : start + MARKERS_PER_TURN],
                              marker)
            for start in range(0, len(partition_ids), MARKERS_PER_TURN)]
        parts.append(functools.partial(broker.stage, [*completion.offsets, completion.ended]))
        await broker.stage_in_parts(parts)
        await broker.durable()  # in this task, which staged the parts: a failed commit is raised here, not lost
    finally:
        del broker.ending_transactions[completion.ended.transactional_id]


def check_not_ending(broker: Broker, transactional_id: str | None) -> None:
    """Raise `ConcurrentTransactions` while this transactional id's transaction is being ended over turns."""
    if transactional_id is not None and transactional_id in broker.ending_transactions:
        raise ConcurrentTransactions(f"the transaction of {quoted(transactional_id)} is being ended; retry")


def _marker_of(broker: Broker, completion: Completion) -> bytes:
    """The control batch every partition of the transaction gets (its base offset is patched as it is stored)."""
    return marker_batch(completion.producer_id, completion.marker_epoch, completion.committed, broker.clock.now_ms())


def _stage_markers(broker: Broker, completion: Completion, partition_ids: Sequence[int], marker: bytes) -> None:
    """The marker of ``partition_ids``, built once, the plugins deriving from them together
    (`Broker.staging_together`): a batch built and a derivation asked for each partition cost a fifth more."""
    header = parse_header(marker)
    with broker.staging_together():
        for partition_id in partition_ids:
            if not broker.partition_exists(partition_id):
                continue  # the topic was deleted while the transaction was open
            stage_marker(broker, partition_id, marker, header, completion.committed)


def stage_marker(broker: Broker, partition_id: int, marker: bytes, header: BatchHeader, committed: bool,
                 coordinator_epoch: int = MARKER_COORDINATOR_EPOCH) -> None:
    """Stage a marker (`marker_batch`, its ``header``) into an existing partition with its `TransactionMarkerWritten`,
    which ends the producer's transaction there (an abort with the range the store indexes, as Kafka's transaction
    index keeps it)."""
    offset = stage_batch(broker, partition_id, marker, header, -1)
    broker.producer_activity[producer_key(partition_id, header.producer_id)] = header.max_timestamp
    ending = None if committed else ending_abort(
        broker.store.state("partition_transactions", str(partition_id)), header.producer_id, offset)
    first_offset, last_stable_offset = ending or (-1, -1)
    broker.stage([TransactionMarkerWritten(partition_id, offset, header.producer_id, header.producer_epoch, committed,
                                           first_offset, last_stable_offset, coordinator_epoch)])


def wire_failure(error: DomainError, api_version: int, fenced_from_version: int) -> tuple[ErrorCode, str | None]:
    """The code and message of a refused transactional request; PRODUCER_FENCED (KIP-588) exists only from
    ``fenced_from_version`` of each API, older versions say INVALID_PRODUCER_EPOCH."""
    code, message = failure(error)
    if code == ErrorCode.PRODUCER_FENCED and api_version < fenced_from_version:
        code = ErrorCode.INVALID_PRODUCER_EPOCH
    return code, message


_TRANSACTION_EVENTS = (TransactionalProducerInitialized, PartitionsAddedToTransaction, GroupAddedToTransaction,
                       TransactionEnded)


class TransactionTimer:
    """Aborts timed-out transactions; one per broker, on the broker's clock.

    The deadline of each open transaction (start plus timeout) is kept in memory, read from the store at
    start-up and followed from the committed transaction events, so the timer never scans every
    transactional id.
    """

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._deadlines: dict[str, int] = {}
        """Transactional id → when its open transaction times out (ms on the broker clock)."""
        self.timer = DeadlineTimer(broker.clock, self.next_deadline, self.tick, "logwright-transactions")
        for state in broker.store.entities("transactions").values():
            if isinstance(state, TransactionState):
                self._follow(state)
        broker.store.add_commit_listener(self._on_commit, _TRANSACTION_EVENTS)

    def _follow(self, state: TransactionState | None) -> None:
        if state is None:
            return
        if state.status == ONGOING:
            self._deadlines[state.transactional_id] = deadline = state.started_ms + state.timeout_ms
            self.timer.schedule(deadline)
        else:
            self._deadlines.pop(state.transactional_id, None)

    def _on_commit(self, events: Sequence[LoggedEvent]) -> None:
        for logged in events:
            if isinstance(logged.event, _TRANSACTION_EVENTS):
                self._follow(self.broker.transaction(logged.event.transactional_id))

    def next_deadline(self) -> int | None:
        return min(self._deadlines.values(), default=None)

    def tick(self) -> int:
        """Abort every transaction past its timeout now; returns how many (their effects are staged)."""
        now = self.broker.clock.now_ms()
        aborted = 0
        for transactional_id, deadline in list(self._deadlines.items()):
            if deadline > now:
                continue
            del self._deadlines[transactional_id]
            state = self.broker.transaction(transactional_id)
            completion = expire(state, now) if state is not None else None
            if state is None or completion is None:
                self._follow(state)  # ended or restarted since: keep its new deadline, if any
                continue
            log.info("transaction of %r (producer id %d) timed out after %d ms: aborted, epoch bumped to %d",
                     state.transactional_id, state.producer_id, state.timeout_ms, completion.marker_epoch)
            if len(completion.partition_ids) <= MARKERS_PER_TURN:
                stage_completion(self.broker, completion)
            elif transactional_id not in self.broker.ending_transactions:
                self.broker.ending_transactions[transactional_id] = (  # before the task starts
                    completion.producer_id, completion.marker_epoch)
                self.broker.run_to_the_end(self._abort_over_turns(completion), "transaction-timeout-abort")
            else:  # its client is ending it: should that end fail, the transaction times out again
                self._retry_later(transactional_id)
                continue
            aborted += 1
        return aborted

    async def _abort_over_turns(self, completion: Completion) -> None:
        transactional_id = completion.ended.transactional_id
        try:
            await _end_over_turns(self.broker, completion)
        except Exception:  # noqa: BLE001 - the store failed meanwhile: the transaction stays open; try again later
            log.exception("the abort of the timed-out transaction of %r failed", transactional_id)
            self._retry_later(transactional_id)

    def _retry_later(self, transactional_id: str) -> None:
        """Look at an open transaction's timeout again in `STORE_RETRY_MS` (an end under way, or one that failed)."""
        state = self.broker.transaction(transactional_id)
        if state is not None and state.status == ONGOING:
            self._deadlines[transactional_id] = retry_at = self.broker.clock.now_ms() + STORE_RETRY_MS
            self.timer.schedule(retry_at)


def transaction_timer(broker: Broker) -> TransactionTimer:
    """The broker's transaction timer."""
    return broker.coordinators.transactions
