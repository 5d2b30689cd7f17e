"""AlterPartitionReassignments (key 45), versions 0-1: one broker, so only the placement it has.

Reassigning a partition to ``[node_id]`` (where it already is) succeeds and changes nothing; any other
replica list is INVALID_REPLICA_ASSIGNMENT with the reason. Cancelling (null replicas) finds no
reassignment in progress: NO_REASSIGNMENT_IN_PROGRESS, as Kafka answers. v1's
``allow_replication_factor_change`` is echoed; the factor can never change here anyway. A timeout of zero or
less is REQUEST_TIMED_OUT for the request and each partition, as Kafka's controller answers it
(`controller_deadline`).
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from logwright.compat.controller_deadline import expired
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, handler, has_field, make, response_module
from logwright.compat.turns import Slices
from logwright.compat.wire.encoder import OnceAnswered
from logwright.core.errors import DomainError, quoted
from logwright.core.log.placement import check_replicas

if TYPE_CHECKING:
    from kio.schema.alter_partition_reassignments import v0, v1
    from typing_extensions import TypeIs

    AlterPartitionReassignmentsRequest: TypeAlias = (
        v0.AlterPartitionReassignmentsRequest | v1.AlterPartitionReassignmentsRequest
    )
    """Every version served: mypy checks each field read against all of them."""


@handler(45, "AlterPartitionReassignments", 0, 1)
async def handle(context: RequestContext, request: AlterPartitionReassignmentsRequest) -> Any:
    broker = context.broker
    module = response_module("alter_partition_reassignments", context.api_version)

    timed_out = expired(request.timeout)

    def result(wanted: tuple[str, int, tuple[int, ...] | None]) -> Any:
        name, index, replicas = wanted
        state = broker.topic(name)
        code, message = ErrorCode.NONE, None
        if timed_out:
            code = ErrorCode.REQUEST_TIMED_OUT
        elif state is None or not 0 <= index < len(state.partition_ids):
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            message = f"topic {quoted(name)} has no partition {index}"
        elif replicas is None:
            code, message = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, \
                f"partition {index} of {quoted(name)} has no reassignment to cancel"
        else:
            try:
                check_replicas(list(replicas), broker.node_id)
            except DomainError as error:
                code, message = error_code_for(error), str(error)
        return make(module.ReassignablePartitionResponse, partition_index=index, error_code=code,
                    error_message=message)

    answer, slices = OnceAnswered(result), Slices()  # a partition named again alike: the first answer's bytes
    responses = []
    for topic in request.topics:
        partitions = []
        for partition in topic.partitions:
            replicas = None if partition.replicas is None else tuple(int(replica) for replica in partition.replicas)
            partitions.append(answer((topic.name, int(partition.partition_index), replicas)))
            await slices.done()
        responses.append(make(module.ReassignableTopicResponse, name=topic.name, partitions=tuple(partitions)))
    may_change = request.allow_replication_factor_change if _may_change_replication_factor(request) else True
    return make(module.AlterPartitionReassignmentsResponse, throttle_time=datetime.timedelta(0),
                allow_replication_factor_change=may_change,
                error_code=ErrorCode.REQUEST_TIMED_OUT if timed_out and responses else ErrorCode.NONE,
                error_message=None if responses else "", responses=tuple(responses))  # Kafka's "" for none


def _may_change_replication_factor(request: AlterPartitionReassignmentsRequest) -> TypeIs[
    v1.AlterPartitionReassignmentsRequest
]:
    """v1+ may refuse a change of replication factor (KIP-860)."""
    return has_field(request, "allow_replication_factor_change")
