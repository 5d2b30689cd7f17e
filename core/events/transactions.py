"""Events of Kafka transactions (KIP-98; tags 60-69).

The transaction coordinator's state (`core.transactions`) and each partition's index of open and
aborted transactions (`core.partition_transactions`) are folded from these. A transaction ends in one
WriteBatch: a control batch per partition (a `RecordsAppended` with its `TransactionMarkerWritten`), the
group offsets it carried (`OffsetCommitted`, on commit) and `TransactionEnded`, so a crash leaves the
transaction either open or complete, never half-marked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from logwright.core.events.base import Event
from logwright.core.events.groups import OffsetCommitted


@dataclass(frozen=True, slots=True)
class TransactionalProducerInitialized(Event):
    """InitProducerId for a transactional id: its producer id and the epoch every older instance is fenced
    below. ``previous_epoch`` is the epoch before this one (-1 if none), which a retrying producer may
    still name (KIP-360)."""

    TAG: ClassVar[int] = 60
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    previous_epoch: int = -1
    now_ms: int = -1
    """Broker time of the InitProducerId, from which an idle transactional id expires (-1 in events written before:
    from the broker's start)."""


@dataclass(frozen=True, slots=True)
class PartitionsAddedToTransaction(Event):
    """AddPartitionsToTxn: partitions (global ids) joined the transaction; the first addition starts it."""

    TAG: ClassVar[int] = 61
    transactional_id: str
    producer_id: int
    producer_epoch: int
    partition_ids: tuple[int, ...]
    now_ms: int


@dataclass(frozen=True, slots=True)
class GroupAddedToTransaction(Event):
    """AddOffsetsToTxn: the group's offsets will be committed (or dropped) with the transaction."""

    TAG: ClassVar[int] = 62
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group: str
    now_ms: int


@dataclass(frozen=True, slots=True)
class TransactionalOffsetCommitted(Event):
    """TxnOffsetCommit: ``commit`` is pending until the transaction ends; on commit it is appended as it is."""

    TAG: ClassVar[int] = 63
    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: OffsetCommitted


@dataclass(frozen=True, slots=True)
class TransactionMarkerWritten(Event):
    """A COMMIT or ABORT control batch stored at ``offset`` (its `RecordsAppended` precedes this event).

    An ABORT names the aborted transaction's ``first_offset`` on the partition and the partition's
    ``last_stable_offset`` once it ended (the first offset of the earliest transaction still open, else ``offset +
    1``), as Kafka's transaction index keeps them: the store indexes it by its marker (`RocksEventStore.aborted`), and a
    lookup stops at the first whose last stable offset reaches past the read. Both are -1 in markers written before
    (and in commits): those aborts are in the partition's `PartitionTransactions.aborted` row instead."""

    TAG: ClassVar[int] = 64
    VERSION: ClassVar[int] = 3
    partition_id: int
    offset: int
    producer_id: int
    producer_epoch: int
    committed: bool
    first_offset: int = -1
    last_stable_offset: int = -1
    coordinator_epoch: int = 0
    """The coordinator epoch its control record carries: 0 for the broker's own coordinator, the request's for a
    marker an admin wrote (WriteTxnMarkers, version 3 on)."""

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 (before the store indexed aborts) named neither: its aborts are in the partition's row. Versions
        1 and 2 end before ``coordinator_epoch``: its default (the broker's own coordinator) reads it."""
        return [*fields, -1, -1] if version == 1 else fields

    @property
    def indexed_abort(self) -> bool:
        """An abort the store indexes (markers written since the index exist)."""
        return not self.committed and self.first_offset >= 0


@dataclass(frozen=True, slots=True)
class TransactionEnded(Event):
    """The transaction is complete, its markers written. ``producer_epoch`` is the transactional id's epoch
    from now on: bumped when the broker aborted on its own (``reason`` "timeout" or "reinitialized"),
    which fences the producer that left it open, and by every end a transaction version 2 client asks for
    (EndTxn v5, KIP-890)."""

    TAG: ClassVar[int] = 65
    VERSION: ClassVar[int] = 2
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    reason: str
    now_ms: int
    next_producer_id: int = -1
    """The producer id the transactional id continues with at epoch 0, when a transaction version 2 end found
    ``producer_id``'s epochs exhausted (Kafka's nextProducerId); -1 when it keeps its id (version 1 never named
    one)."""

    @staticmethod
    def upgrade_fields(version: int, fields: list[Any]) -> list[Any]:
        """Version 1 ends before ``next_producer_id``: its default reads it."""
        return fields


@dataclass(frozen=True, slots=True)
class TransactionalIdsExpired(Event):
    """Transactional ids idle ``transactional.id.expiration.ms`` without a transaction open, forgotten with their
    producer ids' ownership, as Kafka's coordinator removes them: a later InitProducerId starts afresh."""

    TAG: ClassVar[int] = 66
    transactional_ids: tuple[str, ...]
    producer_ids: tuple[int, ...]


TRANSACTION_EVENT_TYPES: tuple[type[Event], ...] = (
    TransactionalProducerInitialized,
    PartitionsAddedToTransaction,
    GroupAddedToTransaction,
    TransactionalOffsetCommitted,
    TransactionMarkerWritten,
    TransactionEnded,
    TransactionalIdsExpired,
)
