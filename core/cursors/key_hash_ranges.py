"""Who owns which key hashes of a Key_Shared subscription: a plain value, and how joins and leaves change it.

`KeyHashOwnership` is what the share-group coordinator stores in an event after each join or leave, so
ownership is rebuilt after a restart exactly as it was (Pulsar keeps it in memory: seed weakness W13).
The functions here compute the next ownership from the previous one; they never look at the clock or
at the order of some dict, so replaying the same joins and leaves always gives the same ranges.

Two policies, as in Pulsar's ``KeySharedPolicy``:

- AUTO_SPLIT (``HashRangeAutoSplitStickyKeyConsumerSelector``): the first consumer owns the whole space;
  each new one takes the lower half of the largest range; a leaving consumer's range merges into its
  upper neighbour (or its lower one if it held the top). Upstream the space is ``[0, rangeSize]`` with
  ``rangeSize = 65536``, a hash that never occurs; here it is ``[0, top]`` with ``top = 65535`` by
  default, so the ranges are an exact partition of the hashes (the first split is 0..32767 / 32768..65535).
  With ``top = 64`` the splits are upstream's to the number (see the tests).
- STICKY: each consumer declares its ranges; an overlap with another consumer's is refused, and hashes
  nobody declared are simply not delivered.
"""

from __future__ import annotations

import itertools
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from logwright.core.cursors.key_hash import HASH_RANGE_SIZE
from logwright.core.errors import ConsumerBusy, InvalidRequest

TOP_HASH = HASH_RANGE_SIZE - 1


@dataclass(frozen=True, slots=True)
class HashRange:
    """Key hashes ``start..end`` inclusive."""

    start: int
    end: int

    def overlaps(self, other: HashRange) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass(frozen=True, slots=True)
class OwnedRange:
    """Key hashes ``start..end`` inclusive, owned by ``consumer_id``."""

    start: int
    end: int
    consumer_id: str


@dataclass(frozen=True, slots=True)
class KeyHashOwnership:
    """Ranges sorted by ``start``, never overlapping; ``top`` is the largest hash of the space."""

    ranges: tuple[OwnedRange, ...] = ()
    top: int = TOP_HASH

    def owner_of(self, key_hash: int) -> str | None:
        index = bisect_right(self.ranges, key_hash, key=lambda owned: owned.start) - 1
        if index >= 0 and self.ranges[index].end >= key_hash:
            return self.ranges[index].consumer_id
        return None

    def ranges_of(self, consumer_id: str) -> tuple[HashRange, ...]:
        return tuple(HashRange(r.start, r.end) for r in self.ranges if r.consumer_id == consumer_id)

    def owners(self) -> frozenset[str]:
        return frozenset(r.consumer_id for r in self.ranges)

    def owned_by(self) -> dict[int, str]:
        """Every owned hash → its owner: for tests and small spaces only (65536 entries at most)."""
        return {h: r.consumer_id for r in self.ranges for h in range(r.start, r.end + 1)}


def auto_split_join(ownership: KeyHashOwnership, consumer_id: str) -> KeyHashOwnership:
    """``consumer_id`` takes the lower half of the largest range (all of it if it is the first)."""
    if consumer_id in ownership.owners():
        return ownership
    if not ownership.ranges:
        return KeyHashOwnership((OwnedRange(0, ownership.top, consumer_id),), ownership.top)
    # Upstream measures a range as ``end - previous end`` and the first one as ``end - 0``; keep that
    # (it decides ties) so the splits match Pulsar's.
    def size(owned: OwnedRange) -> int:
        return owned.end - (owned.start - 1 if owned.start > 0 else 0)

    index = max(range(len(ownership.ranges)), key=lambda i: (size(ownership.ranges[i]), -i))
    target = ownership.ranges[index]
    lower = target.start - 1 if target.start > 0 else 0
    if target.end - lower <= 1:
        raise ConsumerBusy(f"no key-hash range is left to split for consumer {consumer_id!r}: "
                           f"{len(ownership.ranges)} consumers already share the {ownership.top + 1} hashes")
    middle = (target.end - lower) // 2 + lower
    pieces = (OwnedRange(target.start, middle, consumer_id), OwnedRange(middle + 1, target.end, target.consumer_id))
    return KeyHashOwnership((*ownership.ranges[:index], *pieces, *ownership.ranges[index + 1:]), ownership.top)


def auto_split_leave(ownership: KeyHashOwnership, consumer_id: str) -> KeyHashOwnership:
    """The leaver's range merges into its upper neighbour, or into its lower one if it held the top."""
    ranges = list(ownership.ranges)
    for index, owned in enumerate(ranges):
        if owned.consumer_id != consumer_id:
            continue
        if index + 1 < len(ranges):
            upper = ranges[index + 1]
            ranges[index:index + 2] = [OwnedRange(owned.start, upper.end, upper.consumer_id)]
        elif index > 0:
            lower = ranges[index - 1]
            ranges[index - 1:index + 1] = [OwnedRange(lower.start, owned.end, lower.consumer_id)]
        else:
            ranges = []
        return KeyHashOwnership(tuple(ranges), ownership.top)
    return ownership


def sticky_join(ownership: KeyHashOwnership, consumer_id: str, declared: tuple[HashRange, ...]) -> KeyHashOwnership:
    """Add ``consumer_id``'s declared ranges; refuse ranges outside the space or overlapping anyone's.

    The declared ranges are compared sorted, each with the next only, and each is looked up among the owned ones by
    bisection: comparing every pair made a join declaring 65,536 one-hash ranges hold the event loop for minutes."""
    if not declared:
        raise InvalidRequest(f"consumer {consumer_id!r} of a STICKY Key_Shared subscription must declare key-hash "
                             "ranges")
    for wanted in declared:
        if not 0 <= wanted.start <= wanted.end <= ownership.top:
            raise InvalidRequest(f"key-hash range [{wanted.start}, {wanted.end}] of consumer {consumer_id!r} is not "
                                 f"an inclusive range within 0..{ownership.top}")
    ordered = sorted(declared, key=lambda wanted: (wanted.start, wanted.end))
    for lower, upper in itertools.pairwise(ordered):
        if lower.overlaps(upper):
            raise InvalidRequest(f"consumer {consumer_id!r} declares overlapping key-hash ranges "
                                 f"[{lower.start}, {lower.end}] and [{upper.start}, {upper.end}]")
    kept = tuple(r for r in ownership.ranges if r.consumer_id != consumer_id)
    for wanted in declared:
        # kept ranges are disjoint and sorted, so their ends rise too: the first that ends at or after this range's
        # start is the only one that can overlap it first
        index = bisect_left(kept, wanted.start, key=lambda owned: owned.end)
        if index < len(kept) and kept[index].start <= wanted.end:
            owned = kept[index]
            raise ConsumerBusy(f"key-hash range [{wanted.start}, {wanted.end}] of consumer {consumer_id!r} "
                               f"overlaps [{owned.start}, {owned.end}] owned by {owned.consumer_id!r}")
    added = tuple(OwnedRange(r.start, r.end, consumer_id) for r in declared)
    return KeyHashOwnership(tuple(sorted((*kept, *added), key=lambda r: r.start)), ownership.top)


def sticky_leave(ownership: KeyHashOwnership, consumer_id: str) -> KeyHashOwnership:
    """A leaver's declared ranges become unowned: their keys wait until someone declares them."""
    return KeyHashOwnership(tuple(r for r in ownership.ranges if r.consumer_id != consumer_id), ownership.top)
