"""KIP-932 share sessions: which partitions a member fetches from, and the epoch its next request must carry.

A session lives in memory (a restart loses it, and the client's next request gets SHARE_SESSION_NOT_FOUND
and opens a new one, as with Kafka). Epoch 0 opens a session with the partitions named; a positive
epoch continues it, adding the partitions named and removing the forgotten ones; -1 closes it (its last
request may still carry acknowledgements). The broker expects ``epoch + 1`` next, wrapping to 1.

Acquisition goes round the session's partitions from ``next_start``, which moves past the last partition
served: a fetch that fills its budget on one backlogged partition cannot starve the ones after it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from logwright.core.errors import InvalidShareSessionEpoch, ShareSessionNotFound, quoted

OPEN_EPOCH = 0
CLOSE_EPOCH = -1
MAX_EPOCH = 2**31 - 1

PartitionRef = tuple[bytes, int]
"""``(topic id, partition index)``: share requests name topics by id."""


@dataclass(frozen=True, slots=True)
class ShareSession:
    group_id: str
    member_id: str
    next_epoch: int
    partitions: tuple[PartitionRef, ...]
    next_start: int = 0
    """Where the next acquisition round starts in ``partitions`` (taken modulo their number)."""


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


def advance(
    existing: ShareSession | None,
    group_id: str,
    member_id: str,
    epoch: int,
    added: Iterable[PartitionRef],
    forgotten: Iterable[PartitionRef],
    exists: Callable[[PartitionRef], bool] = lambda ref: True,
) -> tuple[ShareSession | None, tuple[PartitionRef, ...]]:
    """The session after a request with ``epoch`` (``None`` once closed) and the partitions this request covers.

    A partition that does not ``exist`` is covered by this request (answered UNKNOWN_TOPIC_ID) but not kept: a
    session opened with 100,000 made-up partitions made every later 60-byte ShareFetch of it answer all of them
    again, 0.4 s and 5 MB each. A request that adds and forgets nothing keeps the session's partitions as they are.
    Raises `ShareSessionNotFound` or `InvalidShareSessionEpoch`; the existing session is then unchanged.
    """
    added = tuple(dict.fromkeys(added))
    kept = tuple(ref for ref in added if exists(ref))
    if epoch == OPEN_EPOCH:
        return ShareSession(group_id, member_id, 1, kept), added
    if existing is None:
        raise ShareSessionNotFound(f"member {quoted(member_id)} of share group {quoted(group_id)} has no share "
                                   "session; open one with epoch 0")
    if epoch == CLOSE_EPOCH:
        return None, tuple(dict.fromkeys((*existing.partitions, *added)))
    if epoch != existing.next_epoch:
        raise InvalidShareSessionEpoch(f"share session of member {quoted(member_id)} expects epoch "
                                       f"{existing.next_epoch}, "
                                       f"got {epoch}")
    dropped = set(forgotten)
    partitions = existing.partitions
    if kept or dropped:
        partitions = tuple(ref for ref in dict.fromkeys((*partitions, *kept)) if ref not in dropped)
    covered = partitions if len(kept) == len(added) else tuple(dict.fromkeys(
        (*partitions, *(ref for ref in added if not exists(ref) and ref not in dropped))))
    return ShareSession(group_id, member_id, next_epoch(epoch), partitions, existing.next_start), covered


def round_order(session: ShareSession | None, partitions: tuple[PartitionRef, ...]) -> tuple[PartitionRef, ...]:
    """``partitions`` in the order an acquisition round visits them: from the session's ``next_start`` on."""
    if session is None or not partitions:
        return partitions
    start = session.next_start % len(partitions)
    return (*partitions[start:], *partitions[:start])


def served(session: ShareSession, last: PartitionRef) -> ShareSession:
    """The session after a round whose last acquisition was from ``last``: the next round starts after it."""
    if last not in session.partitions:
        return session
    return replace(session, next_start=(session.partitions.index(last) + 1) % len(session.partitions))
