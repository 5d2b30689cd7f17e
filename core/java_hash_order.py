"""The iteration order of a Java ``HashMap``: Kafka answers several requests from one, so an answer byte for byte
Kafka's lists its entries in that order (bucket by the spread hash, a bucket in insertion order; trees of eight or
more in one bucket are not modelled)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit overflow)."""
    value = 0
    encoded = text.encode("utf-16-be")
    for index in range(0, len(encoded), 2):
        value = (31 * value + int.from_bytes(encoded[index:index + 2], "big")) & 0xFFFFFFFF
    return value


def java_order(hashes: Sequence[int], initial_capacity: int | None) -> list[int]:
    """The iteration order of a Java ``HashMap`` the distinct keys of these hashes were put into, in that order,
    made with ``new HashMap<>(initial_capacity)`` (``None``: the default constructor)."""
    if initial_capacity is None:
        capacity = 16
    else:
        capacity = 1
        while capacity < initial_capacity:
            capacity *= 2
    threshold = capacity * 0.75
    for size in range(1, len(hashes) + 1):
        if size > threshold:
            capacity *= 2
            threshold = capacity * 0.75
    spread = [(value ^ (value >> 16)) & (capacity - 1) for value in hashes]
    return sorted(range(len(hashes)), key=lambda index: spread[index])  # stable: a bucket keeps its order


def java_map_order_of_strings(keys: Iterable[str]) -> list[str]:
    """Strings in the order a default Java ``HashMap`` they were put into (in this order) iterates them."""
    listed = list(keys)
    return [listed[index] for index in java_order([java_string_hash(key) for key in listed], None)]
