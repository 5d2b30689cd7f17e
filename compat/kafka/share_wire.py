"""What ShareFetch and ShareAcknowledge share: resolving topic ids and applying acknowledgement batches.

librdkafka may name one topic several times in a request (it groups partitions only when they are
adjacent), so partitions are collected per ``(topic id, index)``, never per topic entry.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from logwright.compat.authorization import allowed
from logwright.compat.broker import Broker
from logwright.compat.coordinators.share_coordinator import ShareCoordinator
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.registry import RequestContext, make
from logwright.core.acls.bindings import AclOperation, ResourceType
from logwright.core.errors import DomainError
from logwright.core.log.catalog import TopicState
from logwright.core.share_groups.share_acks import AckBatch
from logwright.core.share_groups.share_sessions import PartitionRef

AckOutcome = tuple[ErrorCode, str | None]


def topic_id_bytes(topic_id: uuid.UUID | None) -> bytes:
    return topic_id.bytes if topic_id is not None else b"\x00" * 16


def resolve(broker: Broker, ref: PartitionRef) -> tuple[TopicState, int] | None:
    """The topic and partition id a reference names, or ``None`` if the topic or partition does not exist."""
    topic = broker.topic_by_id(ref[0])
    if topic is None or not 0 <= ref[1] < len(topic.partition_ids):
        return None
    return topic, topic.partition_ids[ref[1]]


def ack_batches(topics: Iterable[Any]) -> dict[PartitionRef, list[AckBatch]]:
    """Acknowledgement batches per partition of a request's topics (partitions without batches are left out)."""
    found: dict[PartitionRef, list[AckBatch]] = {}
    for topic in topics:
        for partition in topic.partitions:
            batches = [AckBatch(int(b.first_offset), int(b.last_offset), tuple(int(t) for t in b.acknowledge_types))
                       for b in partition.acknowledgement_batches]
            if batches:
                found.setdefault((topic_id_bytes(topic.topic_id), int(partition.partition_index)), []).extend(batches)
    return found


def apply_acks(broker: Broker, coordinator: ShareCoordinator, group_id: str, member_id: str,
               acks: dict[PartitionRef, list[AckBatch]], renew_allowed: bool,
               context: RequestContext | None = None) -> dict[PartitionRef, AckOutcome]:
    """Each partition's acknowledgements, all or nothing per partition; the outcome per partition. With an
    authorizer, those of a topic the ``context``'s principal may not READ are TOPIC_AUTHORIZATION_FAILED."""
    outcomes: dict[PartitionRef, AckOutcome] = {}
    for ref, batches in acks.items():
        resolved = resolve(broker, ref)
        if resolved is None:
            outcomes[ref] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "unknown topic id or partition")
            continue
        topic, partition_id = resolved
        if context is not None and not allowed(context, AclOperation.READ, ResourceType.TOPIC, topic.name):
            outcomes[ref] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
            continue
        try:
            coordinator.acknowledge(group_id, member_id, topic.name, partition_id, batches, renew_allowed,
                                    kafka_offsets=True)
            outcomes[ref] = (ErrorCode.NONE, None)
        except DomainError as error:
            outcomes[ref] = (error_code_for(error), str(error))
    return outcomes


def leader(module: Any, broker: Broker) -> Any:
    return make(module.LeaderIdAndEpoch, leader_id=broker.node_id, leader_epoch=0)


def node_endpoints(module: Any, context: RequestContext) -> tuple[Any, ...]:
    """The broker's endpoint on the client's own listener."""
    host, port = context.advertised
    return (make(module.NodeEndpoint, node_id=context.broker.node_id, host=host, port=port, rack=None),)


def by_topic(refs: Iterable[PartitionRef]) -> dict[bytes, list[int]]:
    grouped: dict[bytes, list[int]] = {}
    for topic_id, index in refs:
        grouped.setdefault(topic_id, []).append(index)
    return grouped
