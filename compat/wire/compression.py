"""The record-batch compression codecs, as Kafka clients write them.

Only the slow path (decoding records, building the broker's own batches) compresses or
decompresses; stored and fetched batches keep the producer's bytes. Snappy comes in two framings:
the Java client (xerial ``SnappyOutputStream``) writes a 16-byte ``\\x82SNAPPY\\0`` header then
length-prefixed blocks, librdkafka and others write one raw snappy block. Both are read; the
xerial framing is written, because every Kafka client reads it. LZ4 is the LZ4 frame format with
independent blocks (KIP-57), as Kafka writes it.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from enum import IntEnum
from typing import Final

import cramjam


class Compression(IntEnum):
    """The codec in bits 0-2 of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


class CompressionError(ValueError):
    """Compressed records could not be decompressed, or the codec is not one Kafka defines."""


_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK: Final = 32 * 1024
_BLOCK_LENGTH = struct.Struct(">i")


def compress(codec: Compression, data: bytes) -> bytes:
    """``data`` compressed with ``codec`` at Kafka's default level (gzip 6, lz4 9, zstd 3)."""
    if codec == Compression.NONE:
        return data
    if codec == Compression.GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == Compression.SNAPPY:
        return _xerial_snappy(data)
    if codec == Compression.LZ4:
        compressor = cramjam.lz4.Compressor(level=9, content_checksum=False, block_linked=False)
        compressor.compress(data)
        return bytes(compressor.finish())
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=3))
    raise CompressionError(f"unknown compression codec {int(codec)}")


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """Undo `compress` (and every framing of it that Kafka clients produce)."""
    try:
        if codec == Compression.NONE:
            return bytes(data)
        if codec == Compression.GZIP:
            return gzip.decompress(data)
        if codec == Compression.SNAPPY:
            if bytes(data[: len(_XERIAL_MAGIC)]) == _XERIAL_MAGIC:
                return _unxerial_snappy(memoryview(data))
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == Compression.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except (OSError, EOFError, zlib.error, cramjam.DecompressionError, ValueError) as error:
        raise CompressionError(f"{_name(codec)} data does not decompress: {error}") from error
    raise CompressionError(f"unknown compression codec {codec} (Kafka defines 0-4)")


def _name(codec: int) -> str:
    return Compression(codec).name.lower() if codec in Compression._value2member_map_ else str(codec)


def _xerial_snappy(data: bytes) -> bytes:
    parts = [_XERIAL_HEADER]
    view = memoryview(data)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        parts += [_BLOCK_LENGTH.pack(len(block)), block]
    return b"".join(parts)


def _unxerial_snappy(data: memoryview) -> bytes:
    parts = []
    position = len(_XERIAL_HEADER)
    while position < len(data):
        if position + 4 > len(data):
            raise CompressionError("xerial snappy data ends inside a block length")
        (size,) = _BLOCK_LENGTH.unpack_from(data, position)
        position += 4
        if size < 0 or position + size > len(data):
            raise CompressionError(f"a xerial snappy block of {size} bytes runs past the data end")
        parts.append(bytes(cramjam.snappy.decompress_raw(data[position : position + size])))
        position += size
    return b"".join(parts)
