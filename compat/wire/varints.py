"""Kafka's varints (protobuf style: 7 bits a byte, least significant first), unsigned and zigzag-signed.

Unsigned varints carry compact lengths and tagged fields in flexible messages; zigzag varints carry
every length and delta inside a record. Readers raise `IndexError` when the data ends mid-varint and
`VarintTooLong` past ten bytes, for the caller to turn into its own error.
"""

from __future__ import annotations

_SMALL = tuple(bytes((n,)) for n in range(128))


class VarintTooLong(ValueError):
    """More than ten bytes: no 64-bit value is that long, so the data is garbage."""


def uvarint(value: int) -> bytes:
    """An unsigned varint."""
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """A zigzag-encoded signed varint (Kafka's varint and varlong alike)."""
    return uvarint((value << 1) ^ (value >> 63))


def read_uvarint(data: bytes | bytearray | memoryview, position: int) -> tuple[int, int]:
    """The unsigned varint at ``position`` and the position after it."""
    byte = data[position]
    if byte < 0x80:
        return byte, position + 1
    value = byte & 0x7F
    shift = 7
    while True:
        position += 1
        byte = data[position]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position + 1
        shift += 7
        if shift > 63:
            raise VarintTooLong(f"a varint at byte {position} runs past ten bytes")


def read_varint(data: bytes | bytearray | memoryview, position: int) -> tuple[int, int]:
    """The zigzag-encoded signed varint at ``position`` and the position after it."""
    value, position = read_uvarint(data, position)
    return (value >> 1) ^ -(value & 1), position
