"""Which ACL each request needs as a whole, in one table read before the handler runs (with an authorizer).

Kafka's ``KafkaApis`` checks a request in two ways. A check of the request as a whole (the cluster's ALTER for
CreateAcls, the group's READ for a JoinGroup, the transactional id's WRITE for an EndTxn) refuses it with its
response's error answer, every entry carrying the code (``getErrorResponse``); those checks are `RULES`, here, so
one table says what every API asks. Checks of each entity a request names (the topics of a Produce, the groups of a
DescribeGroups) answer or filter each entity on its own; the handlers make them (`compat.authorization.allowed`),
and `IN_HANDLER` lists the keys whose handlers do. `OPEN` keys need nothing (ApiVersions, the SASL exchange,
DescribeCluster) or decide themselves who may (a delegation token's owner and renewers).

A served key in none of these is for super users only: logwright's extension keys (their bodies are the handler's
to read, and a clock or a cursor is the cluster's) and nothing else; `tests/compat/test_authorization_rules.py`
checks that every Kafka key is placed.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from logwright.compat.authorization import allowed, allowed_any, allowed_on_cluster, principal
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, has_field, make, response_module
from logwright.core.acls.bindings import CLUSTER_NAME, AclOperation, ResourceType

Check = Callable[[RequestContext, Any], ErrorCode | None]
"""A refusal's error code, or ``None`` when the request may go on."""

_CODES = {ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
          ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
          ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
          ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED}


@dataclass(frozen=True, slots=True)
class Needs:
    """``operation`` on the resource ``name`` reads from the request (``None``: nothing to check)."""

    operation: AclOperation
    resource_type: ResourceType
    name: Callable[[Any], str | None]

    def __call__(self, context: RequestContext, request: Any) -> ErrorCode | None:
        name = self.name(request)
        if name is None or allowed(context, self.operation, self.resource_type, name):
            return None
        return _CODES[self.resource_type]


def cluster(operation: AclOperation) -> Needs:
    return Needs(operation, ResourceType.CLUSTER, lambda _: CLUSTER_NAME)


def group(operation: AclOperation, field: str = "group_id") -> Needs:
    """A group's ACL; a null group id (a hostile request) is checked as the empty name, never skipped."""
    return Needs(operation, ResourceType.GROUP, lambda request: getattr(request, field) or "")


def transactional_id(operation: AclOperation) -> Needs:
    return Needs(operation, ResourceType.TRANSACTIONAL_ID, lambda request: request.transactional_id)


def _idempotent_producer(context: RequestContext, request: Any) -> ErrorCode | None:
    """InitProducerId without a transactional id: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic
    (KIP-679: a producer allowed to write anywhere may be idempotent)."""
    if request.transactional_id is not None:
        return None
    if allowed_on_cluster(context, AclOperation.IDEMPOTENT_WRITE) or allowed_any(
            context, AclOperation.WRITE, ResourceType.TOPIC):
        return None
    return ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def _sync_protocol_named(context: RequestContext, request: Any) -> ErrorCode | None:
    """SyncGroup v5+ must name its protocol type and name: a null one is INCONSISTENT_GROUP_PROTOCOL before the
    group's ACL is asked, as Kafka 4.4 checks it first (an answer, not a refusal: the handler answers the same)."""
    if getattr(request, "protocol_type", "") is None or getattr(request, "protocol_name", "") is None:
        return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    return None


def _share_group_named(context: RequestContext, request: Any) -> ErrorCode | None:
    """ShareFetch and ShareAcknowledge must name their group: a null one is INVALID_REQUEST before the group's ACL
    is asked, as Kafka 4.4 checks it first."""
    return ErrorCode.INVALID_REQUEST if request.group_id is None else None


RULES: dict[int, tuple[Check, ...]] = {
    0: (transactional_id(AclOperation.WRITE),),  # Produce: then WRITE on each topic, in the handler
    8: (group(AclOperation.READ),),  # OffsetCommit: then READ on each topic
    9: (Needs(AclOperation.DESCRIBE, ResourceType.GROUP, lambda request: getattr(request, "group_id", None)),),
    # OffsetFetch v1-7 (v8+ name groups: the handler checks each), then DESCRIBE on each topic
    11: (group(AclOperation.READ),),  # JoinGroup
    12: (group(AclOperation.READ),),  # Heartbeat
    13: (group(AclOperation.READ),),  # LeaveGroup
    14: (_sync_protocol_named, group(AclOperation.READ)),  # SyncGroup
    22: (transactional_id(AclOperation.WRITE), _idempotent_producer),  # InitProducerId
    24: (Needs(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID,
               lambda request: request.v3_and_below_transactional_id),),  # AddPartitionsToTxn: then WRITE on topics
    25: (transactional_id(AclOperation.WRITE), group(AclOperation.READ)),  # AddOffsetsToTxn
    26: (transactional_id(AclOperation.WRITE),),  # EndTxn
    28: (transactional_id(AclOperation.WRITE), group(AclOperation.READ)),  # TxnOffsetCommit: then topics
    29: (cluster(AclOperation.DESCRIBE),),  # DescribeAcls
    30: (cluster(AclOperation.ALTER),),  # CreateAcls
    31: (cluster(AclOperation.ALTER),),  # DeleteAcls
    34: (cluster(AclOperation.ALTER),),  # AlterReplicaLogDirs
    35: (cluster(AclOperation.DESCRIBE),),  # DescribeLogDirs
    43: (cluster(AclOperation.ALTER),),  # ElectLeaders
    45: (cluster(AclOperation.ALTER),),  # AlterPartitionReassignments
    46: (cluster(AclOperation.DESCRIBE),),  # ListPartitionReassignments
    47: (group(AclOperation.DELETE),),  # OffsetDelete: then READ on each topic
    48: (cluster(AclOperation.DESCRIBE_CONFIGS),),  # DescribeClientQuotas
    49: (cluster(AclOperation.ALTER_CONFIGS),),  # AlterClientQuotas
    50: (cluster(AclOperation.DESCRIBE),),  # DescribeUserScramCredentials
    51: (cluster(AclOperation.ALTER),),  # AlterUserScramCredentials
    55: (cluster(AclOperation.DESCRIBE),),  # DescribeQuorum
    57: (cluster(AclOperation.ALTER),),  # UpdateFeatures
    68: (group(AclOperation.READ),),  # ConsumerGroupHeartbeat: then DESCRIBE on each subscribed topic
    74: (cluster(AclOperation.DESCRIBE_CONFIGS),),  # ListConfigResources
    76: (group(AclOperation.READ),),  # ShareGroupHeartbeat: then DESCRIBE on each subscribed topic
    78: (_share_group_named, group(AclOperation.READ)),  # ShareFetch: then READ on each topic
    79: (_share_group_named, group(AclOperation.READ)),  # ShareAcknowledge: then READ on each topic
    91: (group(AclOperation.READ),),  # AlterShareGroupOffsets: then READ on each topic
    92: (group(AclOperation.DELETE),),  # DeleteShareGroupOffsets: then READ on each topic
}

IN_HANDLER = frozenset({
    1, 2, 3, 9, 15, 16, 19, 20, 21, 23, 24, 32, 33, 37, 39, 42, 44, 61, 65, 66, 69, 75, 77, 90, 91, 92,
    0, 8, 28, 47, 68, 76, 78, 79, 10, 38, 27,
})
"""Keys whose handlers check the entities they name (some after a whole-request rule above)."""

OPEN = frozenset({17, 18, 36, 40, 41, 60})
"""SaslHandshake, ApiVersions, SaslAuthenticate, Renew and ExpireDelegationToken (the token's owner or renewers,
checked by the handler), DescribeCluster (its authorized operations are the principal's)."""


def _acl_creations_refused(context: RequestContext, request: Any, code: ErrorCode) -> Any:
    module = response_module("create_acls", context.api_version)
    message = "CreateAcls needs ALTER permission on the cluster."
    return make(module.CreateAclsResponse, throttle_time=datetime.timedelta(0), results=tuple(
        make(module.AclCreationResult, error_code=code, error_message=message) for _ in request.creations))


def _acl_deletions_refused(context: RequestContext, request: Any, code: ErrorCode) -> Any:
    module = response_module("delete_acls", context.api_version)
    message = "DeleteAcls needs ALTER permission on the cluster."
    return make(module.DeleteAclsResponse, throttle_time=datetime.timedelta(0), filter_results=tuple(
        make(module.DeleteAclsFilterResult, error_code=code, error_message=message, matching_acls=())
        for _ in request.filters))


def _credentials_refused(context: RequestContext, request: Any, code: ErrorCode) -> Any:
    module = response_module("alter_user_scram_credentials", context.api_version)
    users = dict.fromkeys([*(entry.name for entry in request.deletions), *(entry.name for entry in request.upsertions)])
    return make(module.AlterUserScramCredentialsResponse, throttle_time=datetime.timedelta(0), results=tuple(
        make(module.AlterUserScramCredentialsResult, user=user, error_code=code, error_message=None)
        for user in users))


def _partitions_refused(context: RequestContext, request: Any, code: ErrorCode) -> Any:
    module = response_module("add_partitions_to_txn", context.api_version)
    return make(module.AddPartitionsToTxnResponse, throttle_time=datetime.timedelta(0),
                results_by_topic_v3_and_below=tuple(
                    make(module.AddPartitionsToTxnTopicResult, name=topic.name, results_by_partition=tuple(
                        make(module.AddPartitionsToTxnPartitionResult, partition_index=index,
                             partition_error_code=code) for index in topic.partitions))
                    for topic in request.v3_and_below_topics))


def _produce_refused(context: RequestContext, request: Any, code: ErrorCode) -> Any:
    """Every partition refused; an ``acks=0`` producer reads no answer, so its connection closes instead (Kafka)."""
    if int(request.acks) == 0:
        from logwright.compat.request_dispatch import Unanswerable

        raise Unanswerable("an acks=0 produce request was refused by the authorizer; the connection closes to say so")
    module = response_module("produce", context.api_version)
    return make(module.ProduceResponse, throttle_time=datetime.timedelta(0), responses=tuple(
        make(module.TopicProduceResponse, **({"topic_id": topic.topic_id} if has_field(topic, "topic_id")
                                             else {"name": topic.name}), partition_responses=tuple(
            make(module.PartitionProduceResponse, index=int(partition.index), error_code=code, base_offset=-1,
                 log_append_time=-1, log_start_offset=-1, record_errors=(), error_message=None)
            for partition in topic.partition_data))
        for topic in request.topic_data))


def _log_dirs_moves_refused(context: RequestContext, request: Any, code: ErrorCode) -> Any:
    module = response_module("alter_replica_log_dirs", context.api_version)
    return make(module.AlterReplicaLogDirsResponse, throttle_time=datetime.timedelta(0), results=tuple(
        make(module.AlterReplicaLogDirTopicResult, topic_name=topic.name, partitions=tuple(
            make(module.AlterReplicaLogDirPartitionResult, partition_index=int(index), error_code=code)
            for index in topic.partitions))
        for log_dir in request.dirs for topic in log_dir.topics))


def _log_dirs_refused(context: RequestContext, request: Any, code: ErrorCode) -> Any:
    """v1-2 have no error field: the refusal is an answer naming no directory, as Kafka's."""
    module = response_module("describe_log_dirs", context.api_version)
    return make(module.DescribeLogDirsResponse, throttle_time=datetime.timedelta(0), error_code=code, results=())


def _elections_refused(context: RequestContext, request: Any, code: ErrorCode) -> Any:
    module = response_module("elect_leaders", context.api_version)
    return make(module.ElectLeadersResponse, throttle_time=datetime.timedelta(0), error_code=code,
                replica_election_results=tuple(
                    make(module.ReplicaElectionResult, topic=topic.topic, partition_result=tuple(
                        make(module.PartitionResult, partition_id=int(index), error_code=code, error_message=None)
                        for index in topic.partitions))
                    for topic in request.topic_partitions or ()))


REFUSAL_ANSWERS: dict[int, Callable[[RequestContext, Any, ErrorCode], Any]] = {
    0: _produce_refused,
    34: _log_dirs_moves_refused,
    35: _log_dirs_refused,
    43: _elections_refused,
    24: _partitions_refused,
    30: _acl_creations_refused,
    31: _acl_deletions_refused,
    51: _credentials_refused,
}
"""Answers to a whole-request refusal whose response shares no list with its request (the others are the
response's top-level error, or the code on every entry the request names): one result per entry, as Kafka's
``getErrorResponse`` answers. Kafka's words for the ACL APIs quote its own request object; these say what is
needed."""


def refusal(context: RequestContext, request: Any) -> ErrorCode | None:
    """The error a request is refused with as a whole, or ``None``; a key placed nowhere is for super users."""
    checks = RULES.get(context.api_key)
    if checks is not None:
        for check in checks:
            code = check(context, request)
            if code is not None:
                return code
        return None
    if context.api_key in IN_HANDLER or context.api_key in OPEN:
        return None
    return None if is_super_user(context) else ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def is_super_user(context: RequestContext) -> bool:
    authorizer = context.broker.authorizer
    return authorizer is None or authorizer.authorizer.is_super_user(principal(context))
