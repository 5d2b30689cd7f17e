"""Single-broker placement: replication factors, manual assignments, default partition counts; no I/O."""

from __future__ import annotations

import pytest
from logwright.core.errors import InvalidPartitions, InvalidReplicaAssignment, InvalidReplicationFactor, InvalidRequest
from logwright.core.log.placement import check_new_partition_assignments, partitions_to_create

NODE = 1


def test_minus_one_takes_the_broker_default_and_one_replica_is_fine() -> None:
    assert partitions_to_create(-1, -1, [], NODE, default_partitions=3) == 3
    assert partitions_to_create(5, 1, [], NODE, default_partitions=3) == 5


@pytest.mark.parametrize(("factor", "message"), [
    (3, r"Unable to replicate the partition 3 time\(s\): The target replication factor of 3 cannot be reached "
        r"because only 1 broker\(s\) are registered"),
    (0, "Replication factor must be larger than 0, or -1 to use the default value."),
    (-2, "Replication factor must be larger than 0, or -1 to use the default value."),
])
def test_other_replication_factors_are_refused(factor: int, message: str) -> None:
    with pytest.raises(InvalidReplicationFactor, match=message):
        partitions_to_create(1, factor, [], NODE, default_partitions=1)


@pytest.mark.parametrize("count", [0, -2])
def test_non_positive_partition_counts_are_refused(count: int) -> None:
    with pytest.raises(InvalidPartitions, match="Number of partitions was set to an invalid non-positive value."):
        partitions_to_create(count, 1, [], NODE, default_partitions=1)


def test_a_manual_assignment_on_this_broker_gives_the_partition_count() -> None:
    assert partitions_to_create(-1, -1, [(1, [NODE]), (0, [NODE])], NODE, default_partitions=9) == 2


@pytest.mark.parametrize(("assignment", "error", "message"), [
    ([(0, [2])], InvalidReplicaAssignment, "includes broker 2, but no such broker is registered"),
    ([(0, [2, 1])], InvalidReplicaAssignment, "includes broker 2, but no such broker is registered"),
    ([(0, [1, 1])], InvalidReplicaAssignment, "includes the broker 1 more than once"),
    ([(0, [])], InvalidReplicaAssignment, "includes an empty replica list"),
    ([(0, [1]), (0, [1])], InvalidReplicaAssignment, "Found multiple manual partition assignments for partition 0"),
    ([(0, [1]), (2, [1])], InvalidReplicaAssignment, "partitions should be a consecutive 0-based integer sequence"),
])
def test_other_assignments_are_refused(assignment: list[tuple[int, list[int]]], error: type[Exception],
                                       message: str) -> None:
    with pytest.raises(error, match=message):
        partitions_to_create(-1, -1, assignment, NODE, default_partitions=1)


def test_an_assignment_with_a_count_or_factor_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match="but numPartitions was not set to -1"):
        partitions_to_create(1, -1, [(0, [NODE])], NODE, default_partitions=1)
    with pytest.raises(InvalidRequest, match="but replicationFactor was not set to -1"):
        partitions_to_create(-1, 1, [(0, [NODE])], NODE, default_partitions=1)


def test_new_partition_assignments_must_cover_the_new_partitions_on_this_broker() -> None:
    check_new_partition_assignments(2, 4, [[NODE], [NODE]], NODE)
    check_new_partition_assignments(2, 4, None, NODE)
    with pytest.raises(InvalidReplicaAssignment, match=r"add 2 additional partition\(s\), but only 1 assignment"):
        check_new_partition_assignments(2, 4, [[NODE]], NODE)
    with pytest.raises(InvalidReplicaAssignment, match=r"add 2 additional partition\(s\), but only 0 assignment"):
        check_new_partition_assignments(2, 4, [], NODE)
    with pytest.raises(InvalidReplicaAssignment, match="includes broker 7, but no such broker is registered"):
        check_new_partition_assignments(2, 4, [[NODE], [7]], NODE)
