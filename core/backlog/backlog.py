"""A subscription's backlog on one partition, exact: records, bytes and the age of its oldest unsettled record.

Every kind of subscription reduces to a `Position`: the first offset it has not settled, and the ranges it
settled individually above it. A classic or KIP-848 group's committed offset is such a position with no
ranges; a share group's or logwright subscription's cursor gives its mark-delete position and settled
ranges, so records a share consumer holds (acquired, not acknowledged) stay in the backlog until settled.
A new kind (the Pop mode) only needs to say how its state becomes a `Position` (`positions.POSITION_READERS`).

The topic's backlog on a partition is its slowest subscription's (`slowest`): that one pins the most.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from logwright.core.rangeset import RangeSet

from .batch_index import BatchIndex


@dataclass(frozen=True, slots=True)
class Position:
    """Where one subscription stands on one partition.

    ``kind`` is ``group`` (committed offsets), ``cursor`` (share groups, logwright subscriptions), ``pop``
    (pop groups) or a kind a new `PositionSource` adds; ``first_unsettled`` is the first offset not settled;
    ``settled`` holds offsets above it settled individually.
    """

    subscription: str
    kind: str
    partition_id: int
    first_unsettled: int
    settled: RangeSet = RangeSet()

    def describe(self) -> str:
        what = {"group": "consumer group", "pop": "pop group"}.get(self.kind, "subscription")
        return f"{what} {self.subscription!r}"


@dataclass(frozen=True, slots=True)
class Backlog:
    """Unsettled ``records``, the ``bytes`` of the stored batches they pin, and the newest timestamp of the
    batch holding the oldest of them (``oldest_timestamp``, -1 with nothing unsettled)."""

    records: int = 0
    bytes: int = 0
    oldest_timestamp: int = -1

    def age_ms(self, now_ms: int) -> int:
        """How long the oldest unsettled record has waited (0 without one)."""
        return max(0, now_ms - self.oldest_timestamp) if self.records and self.oldest_timestamp >= 0 else 0


EMPTY = Backlog()


def backlog_of(index: BatchIndex, position: Position, log_start_offset: int = 0) -> Backlog:
    """``position``'s backlog given its partition's ``index`` (whose end is the log end).

    Offsets below the log start are gone and count for nothing, settled or not.
    """
    start = max(position.first_unsettled, log_start_offset, index.start_offset)
    end = index.end_offset
    if start >= end:
        return EMPTY
    if not position.settled:  # groups, and most cursors: no holes above the position
        return Backlog(end - start, index.bytes_from(start), index.timestamp_at(start))
    settled = position.settled.within(start, end - 1)
    records = end - start - len(settled)
    if records <= 0:
        return EMPTY
    first = start
    if settled.ranges and settled.ranges[0][0] == start:
        first = settled.ranges[0][1] + 1
    return Backlog(records, index.bytes_unsettled(start, settled), index.timestamp_at(first))


def slowest(backlogs: Iterable[tuple[Position, Backlog]]) -> tuple[Position, Backlog] | None:
    """The subscription pinning the most bytes (then records, then the oldest record), or ``None``."""
    return max(backlogs, key=lambda item: (item[1].bytes, item[1].records, -item[1].oldest_timestamp),
               default=None)


def after_append(backlog: Backlog, records: int, byte_size: int, timestamp: int) -> Backlog:
    """``backlog`` once a batch of ``records`` and ``byte_size`` bytes is appended (every subscription sees it)."""
    if records <= 0:
        return backlog
    oldest = backlog.oldest_timestamp if backlog.records else timestamp
    return Backlog(backlog.records + records, backlog.bytes + byte_size, oldest)
