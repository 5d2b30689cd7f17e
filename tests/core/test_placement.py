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
    (3, "replication factor 3 cannot be reached: this cluster has 1 broker"),
    (0, "replication factor 0 is invalid: it must be positive, or -1"),
    (-2, "replication factor -2 is invalid"),
])
def test_other_replication_factors_are_refused(factor: int, message: str) -> None:
    with pytest.raises(InvalidReplicationFactor, match=message):
        partitions_to_create(1, factor, [], NODE, default_partitions=1)


@pytest.mark.parametrize("count", [0, -2])
def test_non_positive_partition_counts_are_refused(count: int) -> None:
    with pytest.raises(InvalidPartitions, match=f"must be positive, or -1 for the broker's num.partitions .1.; "
                                                f"got {count}"):
        partitions_to_create(count, 1, [], NODE, default_partitions=1)


def test_a_manual_assignment_on_this_broker_gives_the_partition_count() -> None:
    assert partitions_to_create(-1, -1, [(1, [NODE]), (0, [NODE])], NODE, default_partitions=9) == 2


@pytest.mark.parametrize(("assignment", "error", "message"), [
    ([(0, [2])], InvalidReplicaAssignment, r"partition 0 is assigned to brokers \[2\]"),
    ([(0, [1, 1])], InvalidReplicaAssignment, r"exactly \[1\]"),
    ([(0, [1]), (2, [1])], InvalidReplicaAssignment, r"names partitions \[0, 2\]"),
])
def test_other_assignments_are_refused(assignment: list[tuple[int, list[int]]], error: type[Exception],
                                       message: str) -> None:
    with pytest.raises(error, match=message):
        partitions_to_create(-1, -1, assignment, NODE, default_partitions=1)


def test_an_assignment_with_a_count_or_factor_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match="together with num_partitions or replication_factor"):
        partitions_to_create(1, -1, [(0, [NODE])], NODE, default_partitions=1)


def test_new_partition_assignments_must_cover_the_new_partitions_on_this_broker() -> None:
    check_new_partition_assignments(2, 4, [[NODE], [NODE]], NODE)
    check_new_partition_assignments(2, 4, None, NODE)
    with pytest.raises(InvalidReplicaAssignment, match="lists 1 partitions but 2 are being added"):
        check_new_partition_assignments(2, 4, [[NODE]], NODE)
    with pytest.raises(InvalidReplicaAssignment, match=r"partition 3 is assigned to brokers \[7\]"):
        check_new_partition_assignments(2, 4, [[NODE], [7]], NODE)
