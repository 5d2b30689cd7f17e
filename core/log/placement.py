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
        raise InvalidReplicationFactor("Replication factor must be larger than 0, or -1 to use the default value.")
    raise InvalidReplicationFactor(
        f"Unable to replicate the partition {replication_factor} time(s): The target replication factor of "
        f"{replication_factor} cannot be reached because only 1 broker(s) are registered or some brokers have all "
        "their log directories cordoned."
    )


def check_replicas(broker_ids: Sequence[int], node_id: int) -> None:
    """One partition's manual replica list, checked as Kafka's controller checks it (in broker id order): the only
    registered broker is this one."""
    if not broker_ids:
        raise InvalidReplicaAssignment("The manual partition assignment includes an empty replica list.")
    previous: int | None = None
    for broker_id in sorted(broker_ids):
        if broker_id != node_id:
            raise InvalidReplicaAssignment(
                f"The manual partition assignment includes broker {broker_id}, but no such broker is registered.")
        if broker_id == previous:
            raise InvalidReplicaAssignment(
                f"The manual partition assignment includes the broker {broker_id} more than once.")
        previous = broker_id


def partitions_to_create(
    num_partitions: int,
    replication_factor: int,
    assignments: Sequence[tuple[int, Sequence[int]]],
    node_id: int,
    default_partitions: int,
) -> int:
    """The partition count of a CreateTopics entry: its own, the broker default (-1), or its assignment's.

    ``assignments`` are ``(partition index, broker ids)``; Kafka forbids them together with an explicit
    partition count or replication factor, and requires indexes 0..n-1. Kafka's messages, in its order.
    """
    if assignments:
        if num_partitions != USE_DEFAULT:
            raise InvalidRequest("A manual partition assignment was specified, but numPartitions was not set to -1.")
        if replication_factor != USE_DEFAULT:
            raise InvalidRequest(
                "A manual partition assignment was specified, but replicationFactor was not set to -1.")
        assigned: set[int] = set()
        for index, broker_ids in assignments:
            if index in assigned:
                raise InvalidReplicaAssignment(f"Found multiple manual partition assignments for partition {index}")
            check_replicas(broker_ids, node_id)
            assigned.add(index)
        if assigned != set(range(len(assigned))):
            raise InvalidReplicaAssignment("partitions should be a consecutive 0-based integer sequence")
        return len(assigned)
    check_replication_factor(replication_factor)
    if num_partitions == USE_DEFAULT:
        return default_partitions
    if num_partitions < 1:
        raise InvalidPartitions("Number of partitions was set to an invalid non-positive value.")
    return num_partitions


def check_new_partition_assignments(
    current: int, new_total: int, assignments: Sequence[Sequence[int]] | None, node_id: int
) -> None:
    """CreatePartitions may assign the new partitions (one broker list each, an empty list too); only [node_id] is
    possible."""
    if assignments is None:
        return
    if len(assignments) != new_total - current:
        raise InvalidReplicaAssignment(
            f"Attempted to add {new_total - current} additional partition(s), but only {len(assignments)} "
            "assignment(s) were specified."
        )
    for broker_ids in assignments:
        check_replicas(broker_ids, node_id)
