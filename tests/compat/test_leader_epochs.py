"""The leader-epoch rules one broker that never moves a leader answers with: the epoch a client saw, checked, and
where an epoch's records end (OffsetForLeaderEpoch). The same answers are checked on the wire against Kafka 4.4 by
tests/integration/test_offset_for_leader_epoch.py."""

from __future__ import annotations

import pytest
from logwright.compat.errors import ErrorCode
from logwright.compat.leader_epochs import epoch_end, leader_epoch_error

LOG_START, LOG_END = 40, 100


def test_the_partitions_epoch_ends_at_the_log_end() -> None:
    assert epoch_end(0, LOG_START, LOG_END) == (0, LOG_END)
    assert epoch_end(0, 0, 0) == (0, 0)  # an empty partition: the epoch began at its creation


@pytest.mark.parametrize("asked", [1, 2**31 - 1, -1])
def test_a_newer_epoch_or_none_is_undefined(asked: int) -> None:
    assert epoch_end(asked, LOG_START, LOG_END) == (-1, -1)


@pytest.mark.parametrize("asked", [-2, -7, -(2**31)])
def test_an_older_epoch_is_answered_with_itself_and_the_log_start(asked: int) -> None:
    """Kafka's cache answers an epoch below its first entry with the start of that entry, which moves with the log
    start offset (DeleteRecords, retention)."""
    assert epoch_end(asked, LOG_START, LOG_END) == (asked, LOG_START)


def test_the_epoch_a_client_saw() -> None:
    assert leader_epoch_error(-1) is None
    assert leader_epoch_error(0) is None
    assert leader_epoch_error(1) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert leader_epoch_error(-2) == ErrorCode.FENCED_LEADER_EPOCH
    assert leader_epoch_error(-2, negative_is_none=True) is None
