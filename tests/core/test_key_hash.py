"""Murmur3_32 against the published SMHasher vectors, and the Key_Shared sticky key and hash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from logwright.core.cursors.key_hash import HASH_RANGE_SIZE, NONE_KEY, key_hash, murmur3_32, sticky_key

# MurmurHash3_x86_32 test vectors as published with the reference implementation's ports
# (e.g. https://stackoverflow.com/a/31929528 and Wikipedia's MurmurHash article).
VECTORS = [
    (b"", 0, 0x00000000),
    (b"", 1, 0x514E28B7),
    (b"", 0xFFFFFFFF, 0x81F16F39),
    (b"\xff\xff\xff\xff", 0, 0x76293B50),
    (b"\x21\x43\x65\x87", 0, 0xF55B516B),
    (b"\x21\x43\x65\x87", 0x5082EDEE, 0x2362F9DE),
    (b"\x21\x43\x65", 0, 0x7E4A8634),
    (b"\x21\x43", 0, 0xA0F7B07A),
    (b"\x21", 0, 0x72661CF4),
    (b"\x00\x00\x00\x00", 0, 0x2362F9DE),
    (b"\x00\x00\x00", 0, 0x85F0B427),
    (b"\x00\x00", 0, 0x30F4C306),
    (b"\x00", 0, 0x514E28B7),
    (b"aaaa", 0x9747B28C, 0x5A97808A),
    (b"aaa", 0x9747B28C, 0x283E0130),
    (b"aa", 0x9747B28C, 0x5D211726),
    (b"a", 0x9747B28C, 0x7FA09EA6),
    (b"abcd", 0x9747B28C, 0xF0478627),
    (b"abc", 0x9747B28C, 0xC84A62DD),
    (b"ab", 0x9747B28C, 0x74875592),
    (b"Hello, world!", 0x9747B28C, 0x24884CBA),
    ("ππππππππ".encode(), 0x9747B28C, 0xD58063C1),
    (b"a" * 256, 0x9747B28C, 0x37405BDC),
    (b"The quick brown fox jumps over the lazy dog", 0x9747B28C, 0x2FA826CD),
]


@pytest.mark.parametrize(("data", "seed", "expected"), VECTORS)
def test_murmur3_32_matches_published_vectors(data: bytes, seed: int, expected: int) -> None:
    assert murmur3_32(data, seed) == expected


def test_sticky_key_prefers_ordering_key_then_key_then_none_key() -> None:
    assert sticky_key(b"k", b"order") == b"order"
    assert sticky_key(b"k", None) == b"k"
    assert sticky_key(b"k", b"") == b"k"
    assert sticky_key(None, None) == NONE_KEY
    assert sticky_key(b"", None) == NONE_KEY


def test_key_hash_is_murmur3_of_the_sticky_key_mod_65536() -> None:
    assert key_hash(None) == murmur3_32(b"NONE_KEY") % 65536 == key_hash(b"")
    assert key_hash(b"user-42") == murmur3_32(b"user-42") & 0xFFFF
    assert key_hash(b"user-42", b"order-7") == key_hash(b"order-7")


@given(st.binary(max_size=64), st.binary(max_size=8) | st.none())
def test_key_hash_is_in_range(key: bytes, ordering_key: bytes | None) -> None:
    assert 0 <= key_hash(key, ordering_key) < HASH_RANGE_SIZE
