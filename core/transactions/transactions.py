"""The transaction coordinator: one state per transactional id, and the decisions that change it (KIP-98).

Clients of transaction version 1 run the classic protocol: InitProducerId, AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn. Clients of version 2 (KIP-890 part 2, finalized by logwright as by
Kafka 4.4) add partitions and groups by producing (Produce v12+) and committing offsets (TxnOffsetCommit v5+),
and each of their ends (EndTxn v5+) bumps the epoch (`end_transaction_v2`). Ending is one step here (Kafka's
PrepareCommit/PrepareAbort and marker round trips collapse into one WriteBatch), so the states are Empty, Ongoing,
CompleteCommit and CompleteAbort. The producer id of a transactional id is stable (but for a version 2 end at the
last epoch); each InitProducerId bumps its epoch, fencing older instances, and aborts a transaction the previous
instance left open. A transaction open longer than its timeout is aborted by the broker with the epoch bumped, as
Kafka does.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import singledispatch
from typing import Any, ClassVar

from logwright.core.errors import (
    InvalidProducerEpoch,
    InvalidProducerIdMapping,
    InvalidRequest,
    InvalidTransactionTimeout,
    InvalidTxnState,
    NotInTransaction,
    ProducerFenced,
    quoted,
)
from logwright.core.events import Event, OffsetCommitted
from logwright.core.events.transactions import (
    GroupAddedToTransaction,
    PartitionsAddedToTransaction,
    TransactionalIdsExpired,
    TransactionalOffsetCommitted,
    TransactionalProducerInitialized,
    TransactionEnded,
)
from logwright.core.log.producers import MAX_EPOCH, ProducerIdCounter, allocate_producer_id
from logwright.core.projection import Projection
from logwright.core.transactions.pending_offsets import NO_PENDING_OFFSETS, PendingOffsets

EMPTY = "Empty"
ONGOING = "Ongoing"
COMPLETE_COMMIT = "CompleteCommit"
COMPLETE_ABORT = "CompleteAbort"


@dataclass(frozen=True, slots=True)
class TransactionState:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    previous_epoch: int = -1
    status: str = EMPTY
    partition_ids: tuple[int, ...] = ()
    groups: tuple[str, ...] = ()
    pending_offsets: PendingOffsets = NO_PENDING_OFFSETS
    """TxnOffsetCommit's offsets, appended as they are when the transaction commits."""
    started_ms: int = -1
    updated_ms: int = -1
    previous_producer_id: int = -1
    """The producer id before a transaction version 2 end moved to a fresh one (its epochs exhausted): a retry of
    that end still names it."""

    VERSION: ClassVar[int] = 2

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 ends before ``previous_producer_id``: its default reads it."""
        return fields

    def __post_init__(self) -> None:
        if not isinstance(self.pending_offsets, PendingOffsets):  # decoded from a store, or written in a test
            object.__setattr__(self, "pending_offsets", PendingOffsets(self.pending_offsets))


@dataclass(frozen=True, slots=True)
class TransactionalIdOwner:
    """Which transactional id a producer id belongs to (Produce knows only the producer id)."""

    transactional_id: str


@dataclass(frozen=True, slots=True)
class Completion:
    """How a transaction ends: a control batch at ``marker_epoch`` into each partition, then ``offsets``
    (on commit) and ``ended``, all in one WriteBatch."""

    producer_id: int
    marker_epoch: int
    committed: bool
    partition_ids: tuple[int, ...]
    offsets: tuple[OffsetCommitted, ...]
    ended: TransactionEnded
    allocated: tuple[Event, ...] = ()
    """The fresh producer id's allocation, when the end moves the transactional id to one (staged first)."""

    @property
    def events(self) -> list[Event]:
        """What is staged with the markers, in order."""
        return [*self.allocated, *self.offsets, self.ended]

    @property
    def next_producer_id_and_epoch(self) -> tuple[int, int]:
        """The producer id and epoch the transactional id has once this end is written (EndTxn v5 answers them)."""
        if self.ended.next_producer_id >= 0:
            return self.ended.next_producer_id, 0
        return self.ended.producer_id, self.ended.producer_epoch


def transaction_key(transactional_id: str) -> str:
    return f"txn/{transactional_id}"


def owner_key(producer_id: int) -> str:
    return f"pid/{producer_id}"


def _keys(event: Event) -> tuple[str, ...]:
    if isinstance(event, TransactionalProducerInitialized):
        return (transaction_key(event.transactional_id), owner_key(event.producer_id))
    if isinstance(event, TransactionEnded) and event.next_producer_id >= 0:
        return (transaction_key(event.transactional_id), owner_key(event.next_producer_id))
    if isinstance(event, PartitionsAddedToTransaction | GroupAddedToTransaction | TransactionalOffsetCommitted
                  | TransactionEnded):
        return (transaction_key(event.transactional_id),)
    if isinstance(event, TransactionalIdsExpired):
        return (*map(transaction_key, event.transactional_ids), *map(owner_key, event.producer_ids))
    return ()


def _started(state: TransactionState, now_ms: int) -> TransactionState:
    """The state with a transaction running: a new one (empty) unless one is already ongoing."""
    if state.status == ONGOING:
        return replace(state, updated_ms=now_ms)
    return replace(state, status=ONGOING, partition_ids=(), groups=(), pending_offsets=NO_PENDING_OFFSETS,
                   started_ms=now_ms, updated_ms=now_ms)


@singledispatch
def _evolve(event: Event, state: object, key: str) -> object:
    return state


@_evolve.register
def _(event: TransactionalProducerInitialized, state: object, key: str) -> object:
    if key.startswith("pid/"):
        return TransactionalIdOwner(event.transactional_id)
    return TransactionState(event.transactional_id, event.producer_id, event.producer_epoch, event.timeout_ms,
                            event.previous_epoch, updated_ms=event.now_ms)


@_evolve.register
def _(event: TransactionalIdsExpired, state: object, key: str) -> object:
    return None


@_evolve.register
def _(event: PartitionsAddedToTransaction, state: object, key: str) -> object:
    assert isinstance(state, TransactionState)
    running = _started(state, event.now_ms)
    return replace(running, partition_ids=tuple(sorted({*running.partition_ids, *event.partition_ids})))


@_evolve.register
def _(event: GroupAddedToTransaction, state: object, key: str) -> object:
    assert isinstance(state, TransactionState)
    running = _started(state, event.now_ms)
    return replace(running, groups=tuple(sorted({*running.groups, event.group})))


@_evolve.register
def _(event: TransactionalOffsetCommitted, state: object, key: str) -> object:
    assert isinstance(state, TransactionState)
    commit = event.commit
    return replace(state, pending_offsets=state.pending_offsets.with_commit(commit), updated_ms=commit.commit_time_ms)


@_evolve.register
def _(event: TransactionEnded, state: object, key: str) -> object:
    if key.startswith("pid/"):
        return TransactionalIdOwner(event.transactional_id)
    assert isinstance(state, TransactionState)
    if event.next_producer_id >= 0:  # the epochs of its id exhausted: a fresh id at epoch 0 (transaction version 2)
        state = replace(state, producer_id=event.next_producer_id, producer_epoch=0, previous_epoch=-1,
                        previous_producer_id=event.producer_id)
        event = replace(event, producer_epoch=0)
    bumped = event.producer_epoch != state.producer_epoch
    return replace(state, producer_epoch=event.producer_epoch,
                   previous_epoch=state.producer_epoch if bumped else state.previous_epoch,
                   status=COMPLETE_COMMIT if event.committed else COMPLETE_ABORT, partition_ids=(), groups=(),
                   pending_offsets=NO_PENDING_OFFSETS, updated_ms=event.now_ms)  # its start kept, as Kafka keeps it


TRANSACTIONS: Projection[object] = Projection(
    name="transactions", entity_keys=_keys, evolve=lambda state, event, key: _evolve(event, state, key),
    handles=frozenset({TransactionalProducerInitialized, PartitionsAddedToTransaction, GroupAddedToTransaction,
                       TransactionalOffsetCommitted, TransactionEnded, TransactionalIdsExpired}),
    removed_by=frozenset({TransactionalIdsExpired}),
)


def expired_transactional_ids(states: Iterable[TransactionState], now_ms: int, expiration_ms: int,
                              known_since_ms: int) -> TransactionalIdsExpired | None:
    """The transactional ids to forget: without a transaction open (Empty, CompleteCommit, CompleteAbort, as Kafka
    allows) and last updated at least ``expiration_ms`` ago (``transactional.id.expiration.ms``; a state that never
    recorded it counts from ``known_since_ms``, the broker's start)."""
    expired = [state for state in states
               if state.status != ONGOING
               and now_ms - (state.updated_ms if state.updated_ms >= 0 else known_since_ms) >= expiration_ms]
    if not expired:
        return None
    return TransactionalIdsExpired(  # a producer id it moved from goes too (its owner row still names it)
        tuple(state.transactional_id for state in expired),
        tuple(producer for state in expired for producer in (state.producer_id, state.previous_producer_id)
              if producer >= 0))


def check_producer(state: TransactionState | None, producer_id: int, producer_epoch: int) -> TransactionState:
    """The transaction of a request naming this producer id and epoch; raises if the pair is not current."""
    if state is None or state.producer_id != producer_id:
        raise InvalidProducerIdMapping(
            f"producer id {producer_id} is not the one of this transactional id"
            + (f" ({state.producer_id})" if state is not None else " (unknown: call InitProducerId first)")
        )
    if producer_epoch != state.producer_epoch:
        raise ProducerFenced(f"producer epoch {producer_epoch} is not the current epoch {state.producer_epoch} of "
                             f"transactional id {quoted(state.transactional_id)}: a newer producer (or a transaction "
                             f"timeout) fenced this one")
    return state


def _complete(state: TransactionState, committed: bool, epoch: int, reason: str, now_ms: int) -> Completion:
    offsets = state.pending_offsets.sorted() if committed else ()
    ended = TransactionEnded(state.transactional_id, state.producer_id, epoch, committed, reason, now_ms)
    return Completion(state.producer_id, epoch, committed, state.partition_ids, offsets, ended)


def init_transactional(
    state: TransactionState | None,
    counter: ProducerIdCounter | None,
    transactional_id: str,
    timeout_ms: int,
    max_timeout_ms: int,
    now_ms: int,
    producer_id: int = -1,
    producer_epoch: int = -1,
) -> tuple[Completion | None, tuple[Event, ...]]:
    """InitProducerId with a transactional id: the abort of a transaction left open (if any), then the events.

    The producer id stays; the epoch goes up by one (a fresh id at epoch 0 once the epoch is exhausted).
    From v3 a producer may name its id and its current or previous epoch to be bumped (KIP-360); naming another id
    or epoch is `ProducerFenced`. A producer naming an id for a transactional id the broker does not know starts
    afresh, as in Kafka 4.4 (its transactional id may have expired).
    """
    if not 0 < timeout_ms <= max_timeout_ms:
        raise InvalidTransactionTimeout(
            f"transaction.timeout.ms={timeout_ms} must be positive and at most the broker's "
            f"transaction.max.timeout.ms={max_timeout_ms}"
        )
    if (producer_id < 0) != (producer_epoch < 0):
        raise InvalidRequest(f"producer id {producer_id} and epoch {producer_epoch}: give both or neither")
    if state is None:
        allocated = allocate_producer_id(counter, transactional_id)
        return None, (allocated, TransactionalProducerInitialized(transactional_id, allocated.producer_id, 0,
                                                                  timeout_ms, now_ms=now_ms))
    if producer_id >= 0:
        if producer_id != state.producer_id:
            raise ProducerFenced(f"producer id {producer_id} is not the one of transactional id "
                                 f"{quoted(transactional_id)}: another producer took it over")
        if producer_epoch not in (state.producer_epoch, state.previous_epoch):
            raise ProducerFenced(f"producer epoch {producer_epoch} of transactional id {quoted(transactional_id)} "
                                 f"is older than the current {state.producer_epoch}")
    exhausted = state.producer_epoch >= MAX_EPOCH
    epoch = state.producer_epoch if exhausted else state.producer_epoch + 1
    completion = _complete(state, False, epoch, "reinitialized", now_ms) if state.status == ONGOING else None
    if exhausted:
        allocated = allocate_producer_id(counter, transactional_id)
        return completion, (allocated, TransactionalProducerInitialized(transactional_id, allocated.producer_id,
                                                                        0, timeout_ms, now_ms=now_ms))
    return completion, (TransactionalProducerInitialized(transactional_id, state.producer_id, epoch, timeout_ms,
                                                         state.producer_epoch, now_ms),)


def add_partitions(state: TransactionState | None, producer_id: int, producer_epoch: int,
                   partition_ids: Iterable[int], now_ms: int) -> PartitionsAddedToTransaction | None:
    """AddPartitionsToTxn; ``None`` when every partition is already in the ongoing transaction (a retry)."""
    current = check_producer(state, producer_id, producer_epoch)
    known = set(current.partition_ids) if current.status == ONGOING else set()
    added = tuple(sorted(set(partition_ids) - known))
    if not added and current.status == ONGOING:
        return None
    return PartitionsAddedToTransaction(current.transactional_id, producer_id, producer_epoch, added, now_ms)


def add_group(state: TransactionState | None, producer_id: int, producer_epoch: int, group: str,
              now_ms: int) -> GroupAddedToTransaction | None:
    """AddOffsetsToTxn; ``None`` when the group is already in the ongoing transaction."""
    current = check_producer(state, producer_id, producer_epoch)
    if current.status == ONGOING and group in current.groups:
        return None
    return GroupAddedToTransaction(current.transactional_id, producer_id, producer_epoch, group, now_ms)


def check_offset_commit(state: TransactionState | None, producer_id: int, producer_epoch: int,
                        group: str) -> TransactionState:
    """TxnOffsetCommit is allowed for a group added to the ongoing transaction (AddOffsetsToTxn)."""
    current = check_producer(state, producer_id, producer_epoch)
    if current.status != ONGOING or group not in current.groups:
        raise NotInTransaction(f"group {quoted(group)} is not in an ongoing transaction of transactional id "
                              f"{quoted(current.transactional_id)}: call AddOffsetsToTxn first")
    return current


def end_transaction(state: TransactionState | None, producer_id: int, producer_epoch: int, committed: bool,
                    now_ms: int) -> Completion | None:
    """EndTxn: how the ongoing transaction ends; ``None`` for a retry of the outcome already reached."""
    current = check_producer(state, producer_id, producer_epoch)
    if current.status == ONGOING:
        return _complete(current, committed, current.producer_epoch, "client", now_ms)
    if current.status == (COMPLETE_COMMIT if committed else COMPLETE_ABORT):
        return None
    outcome = "commit" if committed else "abort"
    raise InvalidTxnState(f"cannot {outcome}: transactional id {quoted(current.transactional_id)} is {current.status}")


def end_transaction_v2(state: TransactionState | None, counter: ProducerIdCounter | None, producer_id: int,
                       producer_epoch: int, committed: bool, now_ms: int) -> Completion | None:
    """EndTxn from v5 (transaction version 2, KIP-890 part 2), as Kafka 4.4 decides it: every end bumps the epoch,
    so a zombie's late write is fenced by the markers themselves; ``None`` for a retry of the end already written.

    A retry names the epoch before the bump (or, after a move to a fresh producer id, the old id at the last epoch).
    An abort with the current epoch and no transaction open is an end of its own (an empty transaction aborted,
    epoch bumped), a commit there INVALID_TXN_STATE. An end from the epoch 32,766 moves the transactional id to a
    fresh producer id at epoch 0; its markers carry the old id at 32,767.
    """
    if state is None:
        raise InvalidProducerIdMapping(f"producer id {producer_id} belongs to no transactional id (unknown: call "
                                       f"InitProducerId first)")
    retry_on_overflow = (state.previous_producer_id == producer_id and producer_epoch == MAX_EPOCH
                         and state.producer_epoch == 0)
    retry_on_bump = state.producer_epoch == producer_epoch + 1
    retry = retry_on_bump or retry_on_overflow
    current = producer_epoch == state.producer_epoch
    valid = current or (retry and state.status in (COMPLETE_COMMIT, COMPLETE_ABORT))
    if state.producer_id != producer_id and not retry_on_overflow:
        raise InvalidProducerIdMapping(f"producer id {producer_id} is not the one of this transactional id "
                                       f"({state.producer_id})")
    if not valid:
        raise ProducerFenced(f"producer epoch {producer_epoch} is neither the current epoch {state.producer_epoch} "
                             f"of transactional id {quoted(state.transactional_id)} nor the one its last end bumped")
    outcome = "commit" if committed else "abort"
    if state.status == ONGOING:
        return _bumped_end(state, counter, committed, now_ms)
    if committed:
        if state.status == COMPLETE_COMMIT and retry:
            return None
        raise InvalidTxnState(f"cannot {outcome}: transactional id {quoted(state.transactional_id)} is {state.status}")
    if retry:  # (a retry and the current epoch never meet: only a completed transaction gets here with one)
        if state.status == COMPLETE_COMMIT:
            raise InvalidTxnState(f"cannot abort: transactional id {quoted(state.transactional_id)} is "
                                  f"{state.status}")
        return None
    return _bumped_end(state, counter, False, now_ms)  # an empty transaction aborted


def _bumped_end(state: TransactionState, counter: ProducerIdCounter | None, committed: bool,
                now_ms: int) -> Completion:
    """A transaction version 2 end: markers at the next epoch (a fresh producer id from then on, at the last one)."""
    epoch = state.producer_epoch + 1 if state.producer_epoch < MAX_EPOCH + 1 else state.producer_epoch
    completion = _complete(state, committed, epoch, "client", now_ms)
    if state.producer_epoch < MAX_EPOCH:
        return completion
    allocated = allocate_producer_id(counter, state.transactional_id)
    return replace(completion, allocated=(allocated,),
                   ended=replace(completion.ended, next_producer_id=allocated.producer_id))


def expire(state: TransactionState, now_ms: int) -> Completion | None:
    """The abort of a transaction open longer than its timeout, with the epoch bumped (fencing its producer)."""
    if state.status != ONGOING or now_ms < state.started_ms + state.timeout_ms:
        return None
    epoch = min(state.producer_epoch + 1, MAX_EPOCH)
    return _complete(state, False, epoch, "timeout", now_ms)


def check_transactional_append(state: TransactionState | None, producer_id: int, producer_epoch: int,
                               partition_id: int) -> None:
    """A transactional batch may be appended only by the current epoch to a partition added to its transaction."""
    if state is None or state.producer_id != producer_id:
        raise InvalidProducerIdMapping(f"producer id {producer_id} belongs to no transactional id")
    if producer_epoch != state.producer_epoch:
        raise InvalidProducerEpoch(f"producer epoch {producer_epoch} is not the current epoch "
                                   f"{state.producer_epoch} of transactional id {quoted(state.transactional_id)}")
    if state.status != ONGOING or not _holds(state.partition_ids, partition_id):
        raise NotInTransaction(f"the partition was not added to the transaction of {quoted(state.transactional_id)} "
                              f"(AddPartitionsToTxn must come first)")


def _holds(partition_ids: tuple[int, ...], partition_id: int) -> bool:
    """Whether the sorted ``partition_ids`` hold ``partition_id``: a binary search, asked for every batch a
    transaction appends (a scan of a 10,000-partition transaction for each of its batches grew with their product)."""
    index = bisect_left(partition_ids, partition_id)
    return index < len(partition_ids) and partition_ids[index] == partition_id


def pending_offsets(states: Iterable[object]) -> dict[str, set[tuple[str, int]]]:
    """Per group, the partitions with a transactional offset not yet committed or aborted: one pass over the
    transactions answers every group of a request (a pass per group grew with groups times transactional ids)."""
    pending: dict[str, set[tuple[str, int]]] = {}
    for state in states:
        if isinstance(state, TransactionState) and state.status == ONGOING:
            for entry in state.pending_offsets:
                pending.setdefault(entry.group, set()).add((entry.topic, entry.partition))
    return pending
