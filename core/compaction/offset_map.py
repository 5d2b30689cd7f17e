"""The cleaner's key -> latest offset map of a dirty range, bounded in memory like Kafka's `SkimpyOffsetMap`.

Keys are held as 16-byte BLAKE2b digests (Kafka: MD5), so a long key costs what a short one does; a collision
would need 2^64 keys. The bound is the broker config ``log.cleaner.dedupe.buffer.size`` (Kafka's name and
default, 128 MiB) divided by what one entry costs in this process (`ENTRY_BYTES`, measured with tracemalloc:
133 bytes for a digest, an offset and the dict slot). A pass whose dirty range holds more distinct keys stops
at the batch that would overflow the map; the next pass carries on from there, as Kafka's does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from hashlib import blake2b as _blake2b

ENTRY_BYTES = 136
"""Memory of one entry in a CPython dict of 16-byte digests to offsets (measured: 133 bytes)."""


def capacity_for(buffer_bytes: int) -> int:
    """Distinct keys a map of ``buffer_bytes`` holds (at least one batch's worth is always allowed)."""
    return max(buffer_bytes // ENTRY_BYTES, 1)


class OffsetMap:
    """Latest offset per key digest; `fits` tells the cleaner whether a batch's keys still fit."""

    __slots__ = ("_offsets", "capacity")

    def __init__(self, capacity: int) -> None:
        self._offsets: dict[bytes, int] = {}
        self.capacity = capacity

    @staticmethod
    def digest(key: bytes) -> bytes:
        return hashlib.blake2b(key, digest_size=16).digest()

    def fits(self, keys: int) -> bool:
        """Whether ``keys`` more keys fit even if every one is new (an empty map takes any one batch)."""
        return not self._offsets or len(self._offsets) + keys <= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        self._offsets[self.digest(key)] = offset

    def put_all(self, keys: Sequence[bytes | None], offsets: Sequence[int]) -> None:
        """Each keyed record of a batch, in offset order (records without a key are not mapped)."""
        mapped = self._offsets
        for key, offset in zip(keys, offsets, strict=True):
            if key is not None:
                mapped[_blake2b(key, digest_size=16).digest()] = offset

    def latest(self, keys: Sequence[bytes | None]) -> list[int | None]:
        """Each key's latest offset in the map (``None``: absent or no key), for a whole batch at once."""
        get = self._offsets.get
        return [None if key is None else get(_blake2b(key, digest_size=16).digest()) for key in keys]

    def get(self, key: bytes) -> int | None:
        return self._offsets.get(self.digest(key))

    def __len__(self) -> int:
        return len(self._offsets)
