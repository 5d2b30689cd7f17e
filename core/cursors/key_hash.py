"""The Key_Shared key hash: Murmur3_32 of a record's sticky key, folded into 0..65535.

Pulsar hashes the sticky key (ordering key if present, else the partition key, else the literal
``"NONE_KEY"``) with Murmur3_32 and takes it modulo the hash-range size 65536. Using the same function
keeps a key's hash identical to what a Pulsar user sees, so sticky range declarations carry over.

Murmur3 is written out here (x86, 32-bit, as in Austin Appleby's SMHasher) rather than taken from a
dependency: it is twenty lines, `core` may import the standard library only, and the hash is computed
once per record at append time, never on the dispatch path.
"""

from __future__ import annotations

HASH_RANGE_SIZE = 65536
"""Key hashes are ``0 .. HASH_RANGE_SIZE - 1`` (Pulsar's ``DEFAULT_HASH_RANGE_SIZE = 2 << 15``)."""

NONE_KEY = b"NONE_KEY"
"""The sticky key of a record with neither an ordering key nor a key (Pulsar's literal)."""

_C1 = 0xCC9E2D51
_C2 = 0x1B873593
_MASK = 0xFFFFFFFF


def _rotl(value: int, shift: int) -> int:
    return ((value << shift) | (value >> (32 - shift))) & _MASK


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86_32 of ``data`` as an unsigned 32-bit integer (SMHasher's reference output)."""
    length = len(data)
    h = seed & _MASK
    whole = length - length % 4
    for start in range(0, whole, 4):
        k = int.from_bytes(data[start:start + 4], "little")
        k = _rotl((k * _C1) & _MASK, 15)
        h ^= (k * _C2) & _MASK
        h = (_rotl(h, 13) * 5 + 0xE6546B64) & _MASK
    tail = data[whole:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = _rotl((k * _C1) & _MASK, 15)
        h ^= (k * _C2) & _MASK
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK
    h ^= h >> 16
    return h


def sticky_key(key: bytes | None, ordering_key: bytes | None = None) -> bytes:
    """The bytes Key_Shared routes by: the ordering key, else the record key, else ``NONE_KEY``.

    An empty key counts as no key, as in Pulsar (a producer that sets none sends an empty one).
    """
    if ordering_key:
        return ordering_key
    if key:
        return key
    return NONE_KEY


def key_hash(key: bytes | None, ordering_key: bytes | None = None) -> int:
    """The record's key hash in ``0 .. 65535``.

    Pulsar masks the signed Java int to non-negative before the modulo; with a power-of-two range the
    result is the low 16 bits either way.
    """
    return (murmur3_32(sticky_key(key, ordering_key)) & 0x7FFFFFFF) % HASH_RANGE_SIZE
