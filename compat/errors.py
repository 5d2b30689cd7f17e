"""Kafka error codes, and the one place where domain errors become them.

The numbers are Kafka's (``org.apache.kafka.common.protocol.Errors``, 4.x); a test checks them
against kio's generated table. The core raises `DomainError` subclasses that know nothing of the
wire; `error_code_for` is how a handler turns one into the code a client understands.
"""

from __future__ import annotations

from enum import IntEnum

from logwright.core import errors as domain


class ErrorCode(IntEnum):
    """Every error code of the Kafka protocol; ``int`` so kio and ``struct`` take it as it is."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133

    @property
    def retriable(self) -> bool:
        """Whether Kafka clients retry on their own when they see this code."""
        return self in _RETRIABLE


_RETRIABLE = frozenset({
    ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.NOT_CONTROLLER, ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH, ErrorCode.LISTENER_NOT_FOUND,
    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.OFFSET_NOT_AVAILABLE,
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
    ErrorCode.UNSTABLE_OFFSET_COMMIT, ErrorCode.THROTTLING_QUOTA_EXCEEDED, ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.INCONSISTENT_TOPIC_ID, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, ErrorCode.ELECTION_NOT_NEEDED,
    ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH, ErrorCode.SHARE_SESSION_LIMIT_REACHED,
})


class KafkaError(Exception):
    """An error to answer with ``code`` on the wire, carrying a message a user can act on."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        self.code = code
        self.message = message if message is not None else code.name.lower().replace("_", " ")
        super().__init__(f"{code.name} ({int(code)}): {self.message}")


_DOMAIN_CODES: dict[type[domain.DomainError], ErrorCode] = {
    domain.UnknownTopic: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    domain.UnknownPartition: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    domain.TopicAlreadyExists: ErrorCode.TOPIC_ALREADY_EXISTS,
    domain.InvalidTopicName: ErrorCode.INVALID_TOPIC_EXCEPTION,
    domain.InvalidPartitions: ErrorCode.INVALID_PARTITIONS,
    domain.InvalidConfig: ErrorCode.INVALID_CONFIG,
    domain.OffsetOutOfRange: ErrorCode.OFFSET_OUT_OF_RANGE,
    domain.UnknownGroup: ErrorCode.GROUP_ID_NOT_FOUND,
    domain.CorruptState: ErrorCode.KAFKA_STORAGE_ERROR,
    domain.StorageUnavailable: ErrorCode.KAFKA_STORAGE_ERROR,
    domain.OutOfOrderSequence: ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
    domain.InvalidProducerEpoch: ErrorCode.INVALID_PRODUCER_EPOCH,
    domain.TransactionCoordinatorFenced: ErrorCode.TRANSACTION_COORDINATOR_FENCED,
    domain.ProducerFenced: ErrorCode.PRODUCER_FENCED,
    domain.InvalidProducerIdMapping: ErrorCode.INVALID_PRODUCER_ID_MAPPING,
    domain.InvalidTxnState: ErrorCode.INVALID_TXN_STATE,
    domain.NotInTransaction: ErrorCode.INVALID_TXN_STATE,  # TRANSACTION_ABORTABLE in Produce v11+, TxnOffsetCommit v4+
    domain.ConcurrentTransactions: ErrorCode.CONCURRENT_TRANSACTIONS,
    domain.InvalidTransactionTimeout: ErrorCode.INVALID_TRANSACTION_TIMEOUT,
    domain.InvalidGroupId: ErrorCode.INVALID_GROUP_ID,
    domain.UnknownMember: ErrorCode.UNKNOWN_MEMBER_ID,
    domain.IllegalGeneration: ErrorCode.ILLEGAL_GENERATION,
    domain.CommitToNoGroup: ErrorCode.ILLEGAL_GENERATION,  # GROUP_ID_NOT_FOUND from OffsetCommit v9 (its handler)
    domain.RebalanceInProgress: ErrorCode.REBALANCE_IN_PROGRESS,
    domain.InconsistentGroupProtocol: ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
    domain.InvalidSessionTimeout: ErrorCode.INVALID_SESSION_TIMEOUT,
    domain.MemberIdRequired: ErrorCode.MEMBER_ID_REQUIRED,
    domain.FencedInstanceId: ErrorCode.FENCED_INSTANCE_ID,
    domain.GroupMaxSizeReached: ErrorCode.GROUP_MAX_SIZE_REACHED,
    domain.NonEmptyGroup: ErrorCode.NON_EMPTY_GROUP,
    domain.GroupSubscribedToTopic: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
    domain.OffsetMetadataTooLarge: ErrorCode.OFFSET_METADATA_TOO_LARGE,
    domain.InvalidReplicationFactor: ErrorCode.INVALID_REPLICATION_FACTOR,
    domain.InvalidReplicaAssignment: ErrorCode.INVALID_REPLICA_ASSIGNMENT,
    domain.InvalidRequest: ErrorCode.INVALID_REQUEST,
    domain.UnknownTopicId: ErrorCode.UNKNOWN_TOPIC_ID,
    domain.UnsupportedFeature: ErrorCode.UNSUPPORTED_VERSION,
    domain.InvalidRecordState: ErrorCode.INVALID_RECORD_STATE,
    domain.CorruptRecords: ErrorCode.CORRUPT_MESSAGE,
    domain.UnknownSubscription: ErrorCode.GROUP_ID_NOT_FOUND,
    domain.ConsumerBusy: ErrorCode.GROUP_MAX_SIZE_REACHED,
    domain.FencedMemberEpoch: ErrorCode.FENCED_MEMBER_EPOCH,
    domain.ShareSessionNotFound: ErrorCode.SHARE_SESSION_NOT_FOUND,
    domain.ShareSessionLimitReached: ErrorCode.SHARE_SESSION_LIMIT_REACHED,
    domain.InvalidShareSessionEpoch: ErrorCode.INVALID_SHARE_SESSION_EPOCH,
    domain.PolicyViolation: ErrorCode.POLICY_VIOLATION,
    domain.AppendHeld: ErrorCode.THROTTLING_QUOTA_EXCEEDED,
    domain.ThrottlingQuotaExceeded: ErrorCode.THROTTLING_QUOTA_EXCEEDED,
    domain.UnreleasedInstanceId: ErrorCode.UNRELEASED_INSTANCE_ID,
    domain.UnsupportedAssignor: ErrorCode.UNSUPPORTED_ASSIGNOR,
    domain.StaleMemberEpoch: ErrorCode.STALE_MEMBER_EPOCH,
    domain.InvalidRegularExpression: ErrorCode.INVALID_REGULAR_EXPRESSION,
    domain.MalformedEmbeddedProtocol: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def error_code_for(error: BaseException) -> ErrorCode:
    """The wire code for ``error``: its own class's, else its nearest mapped base class's.

    A `KafkaError` carries its code; anything unmapped is ``UNKNOWN_SERVER_ERROR``, which a test
    keeps from happening to the domain errors the core defines.
    """
    if isinstance(error, KafkaError):
        return error.code
    for cls in type(error).__mro__:
        code = _DOMAIN_CODES.get(cls)
        if code is not None:
            return code
    return ErrorCode.UNKNOWN_SERVER_ERROR


def mapped_domain_errors() -> frozenset[type[domain.DomainError]]:
    """The domain error classes with a code of their own (for the completeness test)."""
    return frozenset(_DOMAIN_CODES)
