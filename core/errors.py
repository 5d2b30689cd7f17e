"""Domain errors: what a command may be refused for, with a message a user can act on.

The wire layer maps each class to a Kafka error code (`compat/errors.py`); the core never knows codes.
"""

from __future__ import annotations


class DomainError(Exception):
    """A command was refused; nothing was changed."""


QUOTED_CHARACTERS = 100


def quoted(text: str | None, limit: int = QUOTED_CHARACTERS) -> str:
    """``repr(text)``, cut after ``limit`` characters: a message naming what a client sent stays short however long
    the client made it (a 32,767-character group id named in each error of a LeaveGroup of 10,000 members held
    320 MB)."""
    if text is None or len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


class UnknownTopic(DomainError):
    pass


class TopicAlreadyExists(DomainError):
    pass


class InvalidTopicName(DomainError):
    pass


class InvalidPartitions(DomainError):
    pass


class UnknownPartition(DomainError):
    pass


class InvalidConfig(DomainError):
    pass


class OffsetOutOfRange(DomainError):
    pass


class UnknownGroup(DomainError):
    pass


class CorruptState(DomainError):
    """Stored bytes could not be decoded; the message names where they are."""


class StorageUnavailable(DomainError):
    """The store could not write (disk full, I/O error): nothing the command staged was kept."""


class OutOfOrderSequence(DomainError):
    pass


class InvalidProducerEpoch(DomainError):
    pass


class TransactionCoordinatorFenced(DomainError):
    """A transaction marker names an older coordinator epoch than the producer's last marker on the partition."""


class InvalidGroupId(DomainError):
    pass


class UnknownMember(DomainError):
    """The member id is not (or no longer) in the group: the client must rejoin without it."""


class IllegalGeneration(DomainError):
    """The request names an old generation of the group: the client must rejoin."""


class CommitToNoGroup(IllegalGeneration):
    """A member's commit (a generation named) to a group that does not exist: ILLEGAL_GENERATION, as Kafka answers
    TxnOffsetCommit and OffsetCommit before v9; OffsetCommit v9+ answers GROUP_ID_NOT_FOUND (Kafka 4.4)."""


class RebalanceInProgress(DomainError):
    """The group is rebalancing: the member must rejoin before it can sync or commit."""


class InconsistentGroupProtocol(DomainError):
    pass


class InvalidSessionTimeout(DomainError):
    pass


class MemberIdRequired(DomainError):
    """A v4+ JoinGroup without a member id: the client rejoins with ``member_id`` (KIP-394)."""

    def __init__(self, message: str, member_id: str) -> None:
        super().__init__(message)
        self.member_id = member_id


class FencedInstanceId(DomainError):
    """Another member now holds this static ``group.instance.id``."""


class GroupMaxSizeReached(DomainError):
    pass


class NonEmptyGroup(DomainError):
    pass


class GroupSubscribedToTopic(DomainError):
    pass


class OffsetMetadataTooLarge(DomainError):
    pass


class InvalidReplicationFactor(DomainError):
    """There is one broker: a topic can have one replica only."""


class InvalidReplicaAssignment(DomainError):
    """A manual assignment named another broker, several replicas or a wrong set of partitions."""


class InvalidRequest(DomainError):
    """The request contradicts itself (duplicate entries, fields that exclude each other)."""


class UnknownTopicId(DomainError):
    pass


class UnsupportedFeature(DomainError):
    """The request is valid Kafka but asks for something logwright does not implement yet."""


class InvalidRecordState(DomainError):
    """An acknowledgement names records that are not in the state it needs (not acquired by that consumer)."""


class UnknownSubscription(DomainError):
    """No cursor exists for that subscription on that partition."""


class ConsumerBusy(DomainError):
    """The subscription's mode refuses this consumer: an Exclusive subscription already has one, or the
    key-hash ranges it declares are owned by another consumer (Pulsar's ``ConsumerBusy``)."""


class FencedMemberEpoch(DomainError):
    """A share (or KIP-848) group member sent an epoch that is not its current one: it must rejoin with epoch 0."""


class ShareSessionNotFound(DomainError):
    """A ShareFetch or ShareAcknowledge continues a share session the broker does not have."""


class InvalidShareSessionEpoch(DomainError):
    """A share session request carries an epoch other than the one the broker expects next."""


class ShareSessionLimitReached(DomainError):
    """The broker holds ``group.share.max.share.sessions`` share sessions already: a new one is refused."""


class PolicyViolation(DomainError):
    """A policy refuses the request: a plugin's (an admission wrapper over a produce, for example) or a topic's
    (DeleteRecords on a compact-only topic)."""


class ProducerFenced(DomainError):
    """A transactional producer's epoch is older than its transactional id's: a newer instance (or a
    transaction timeout) fenced it. Old request versions see INVALID_PRODUCER_EPOCH instead."""


class InvalidProducerIdMapping(DomainError):
    """The producer id is not the one the transactional id holds (or the transactional id is unknown)."""


class InvalidTxnState(DomainError):
    """The transaction is not in a state that allows the request: a partition not added to it, an EndTxn
    that contradicts the transaction's completed outcome."""


class NotInTransaction(InvalidTxnState):
    """A transactional write to a partition, or an offset commit for a group, that no ongoing transaction of the
    producer added: INVALID_TXN_STATE, and TRANSACTION_ABORTABLE for the clients of KIP-890 (Produce v11+,
    TxnOffsetCommit v4+), who abort and carry on, as Kafka 4.4 answers them."""


class ConcurrentTransactions(DomainError):
    """The transactional id's transaction is being ended (its markers staged over several turns): ask again once it
    has ended, as Kafka answers while a transaction is in PrepareCommit or PrepareAbort."""


class InvalidTransactionTimeout(DomainError):
    """``transaction.timeout.ms`` is not positive or exceeds the broker's ``transaction.max.timeout.ms``."""


class UnreleasedInstanceId(DomainError):
    """A KIP-848 member joins with an instance id another live member still holds (it must leave with epoch -2
    or time out first)."""


class UnsupportedAssignor(DomainError):
    """A KIP-848 member names a server-side assignor the broker does not have."""


class StaleMemberEpoch(DomainError):
    """An OffsetCommit or OffsetFetch of a KIP-848 group member carries an epoch other than its current one."""


class MalformedEmbeddedProtocol(DomainError):
    """A classic member's consumer protocol metadata does not read where the broker must read it: Kafka's
    IllegalStateException, which clients get as UNKNOWN_SERVER_ERROR."""


class InvalidRegularExpression(DomainError):
    """A KIP-848 member's subscribed topic regex does not compile."""


class CorruptRecords(DomainError):
    """A batch's records do not parse where the broker must read them (keys for deduplication, compaction)."""


class AppendHeld(DomainError):
    """An admission plugin holds an append (a backlog quota's ``producer_request_hold``): the produce request
    waits, its connection open, and is asked again after each commit until admitted or its timeout passes."""


class ThrottlingQuotaExceeded(DomainError):
    """A client's ``controller_mutation_rate`` (KIP-599) has no tokens left: the topic's creation, deletion or new
    partitions are refused, as Kafka's controller refuses them from the versions that know the error."""
