"""Partition placement on a one-broker cluster: replication factors and manual replica assignments.

Kafka clients may ask for a replication factor or name the brokers of each partition. logwright has one
broker, so every partition has exactly one replica, on it; these decisions turn a request into a
partition count or refuse it with the reason, before the catalog decides the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from logwright.core.errors import (
    InvalidPartitions,
    InvalidReplicaAssignment,
    InvalidReplicationFactor,
    InvalidRequest,
)

USE_DEFAULT = -1


def check_replication_factor(replication_factor: int) -> None:
    """-1 (the broker's default) and 1 are the only factors one broker can honour."""
    if replication_factor in (USE_DEFAULT, 1):
        return
    if replication_factor < 1:
        raise InvalidReplicationFactor(
            f"replication factor {replication_factor} is invalid: it must be positive, or -1 for the default"
        )
    raise InvalidReplicationFactor(
        f"replication factor {replication_factor} cannot be reached: this cluster has 1 broker, so the "
        f"replication factor must be 1 (or -1 for the default)"
    )


def check_replicas(partition: int, broker_ids: Sequence[int], node_id: int) -> None:
    if list(broker_ids) != [node_id]:
        raise InvalidReplicaAssignment(
            f"partition {partition} is assigned to brokers {list(broker_ids)}; this cluster has one broker "
            f"(node {node_id}), so each partition must be assigned to exactly [{node_id}]"
        )


def partitions_to_create(
    num_partitions: int,
    replication_factor: int,
    assignments: Sequence[tuple[int, Sequence[int]]],
    node_id: int,
    default_partitions: int,
) -> int:
    """The partition count of a CreateTopics entry: its own, the broker default (-1), or its assignment's.

    ``assignments`` are ``(partition index, broker ids)``; Kafka forbids them together with an explicit
    partition count or replication factor, and requires indexes 0..n-1.
    """
    if assignments:
        if num_partitions != USE_DEFAULT or replication_factor != USE_DEFAULT:
            raise InvalidRequest(
                "a manual replica assignment was given together with num_partitions or replication_factor; "
                "set both to -1 when assigning replicas"
            )
        indexes = sorted(index for index, _ in assignments)
        if indexes != list(range(len(assignments))):
            raise InvalidReplicaAssignment(
                f"the assignment names partitions {indexes}; it must name partitions 0 to {len(assignments) - 1} "
                f"once each"
            )
        for index, broker_ids in assignments:
            check_replicas(index, broker_ids, node_id)
        return len(assignments)
    check_replication_factor(replication_factor)
    if num_partitions == USE_DEFAULT:
        return default_partitions
    if num_partitions < 1:
        raise InvalidPartitions(
            f"the number of partitions must be positive, or -1 for the broker's num.partitions "
            f"({default_partitions}); got {num_partitions}"
        )
    return num_partitions


def check_new_partition_assignments(
    current: int, new_total: int, assignments: Sequence[Sequence[int]] | None, node_id: int
) -> None:
    """CreatePartitions may assign the new partitions (one broker list each); only [node_id] is possible."""
    if assignments is None:
        return
    if len(assignments) != new_total - current:
        raise InvalidReplicaAssignment(
            f"the assignment lists {len(assignments)} partitions but {new_total - current} are being added "
            f"(from {current} to {new_total})"
        )
    for offset, broker_ids in enumerate(assignments):
        check_replicas(current + offset, broker_ids, node_id)
