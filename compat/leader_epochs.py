"""The leader epoch every partition reports, and the check of the epoch a client says it last saw.

One broker leads every partition from its creation and no election ever moves it, so every partition's leader epoch
is 0, as a single KRaft node reports for a topic it created (Metadata, DescribeTopicPartitions, ListOffsets).
Clients send back the epoch Metadata gave them (``current_leader_epoch`` of Fetch v9+ and ListOffsets v4+); a broker
refuses an older one with FENCED_LEADER_EPOCH and a newer one with UNKNOWN_LEADER_EPOCH (the client has seen a leader
this broker has not), and logwright does as Kafka 4.4 does (tests/integration/test_list_offsets_checks.py runs on both).
"""

from __future__ import annotations

from logwright.compat.errors import ErrorCode

PARTITION_LEADER_EPOCH = 0

NO_EPOCH = -1
"""What a client sends when it has no epoch to check against: no check."""


def leader_epoch_error(current_leader_epoch: int, negative_is_none: bool = False) -> ErrorCode | None:
    """Why a request naming ``current_leader_epoch`` is refused, if it is. ``negative_is_none``: every negative
    epoch means none, as Kafka reads Fetch's (ListOffsets checks all but -1, so -2 is fenced there)."""
    if current_leader_epoch == NO_EPOCH or (negative_is_none and current_leader_epoch < 0):
        return None
    if current_leader_epoch < PARTITION_LEADER_EPOCH:
        return ErrorCode.FENCED_LEADER_EPOCH
    if current_leader_epoch > PARTITION_LEADER_EPOCH:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    return None


UNDEFINED_EPOCH_OFFSET = -1


def epoch_end(leader_epoch: int, log_start_offset: int, log_end_offset: int) -> tuple[int, int]:
    """``(epoch, end offset)`` of OffsetForLeaderEpoch for ``leader_epoch``: where that epoch's records end, which a
    consumer compares with its position to find a truncated log (KIP-320).

    Kafka's leader-epoch cache answers from its entries; here it would hold one, epoch 0 from the log start offset
    (the cache's first entry moves with the log start), so: the partition's epoch gives the log end offset; a newer
    one, or -1, is undefined (-1, -1); an older one (any below -1) is answered with itself and the start of the first
    epoch after it, the log start offset, as Kafka 4.4 answers ``-2``
    (tests/integration/test_offset_for_leader_epoch.py).
    """
    if leader_epoch == PARTITION_LEADER_EPOCH:
        return leader_epoch, log_end_offset
    if leader_epoch == NO_EPOCH or leader_epoch > PARTITION_LEADER_EPOCH:
        return NO_EPOCH, UNDEFINED_EPOCH_OFFSET
    return leader_epoch, log_start_offset
