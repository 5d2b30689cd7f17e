"""The record-batch compression codecs, as Kafka clients write them.

Stored and fetched batches keep the producer's bytes; Produce inflates every compressed batch once to read its
records (`record_check`, as Kafka's LogValidator), and the slow paths (decoding records, building the broker's
own batches) compress and decompress. Snappy comes in two framings:
the Java client (xerial ``SnappyOutputStream``) writes a 16-byte ``\\x82SNAPPY\\0`` header then
length-prefixed blocks, librdkafka and others write one raw snappy block. Both are read; the
xerial framing is written, because every Kafka client reads it. LZ4 is the LZ4 frame format with
independent blocks (KIP-57), as Kafka writes it.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Callable, Iterator
from enum import IntEnum
from typing import Any, Final

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


DEFAULT_LEVELS: Final = {Compression.GZIP: 6, Compression.LZ4: 9, Compression.ZSTD: 3}
"""Kafka's default levels (``compression.gzip.level`` -1 is zlib's default, 6; ``compression.lz4.level`` 9;
``compression.zstd.level`` 3); snappy has none."""


def compress(codec: Compression, data: bytes, level: int | None = None) -> bytes:
    """``data`` compressed with ``codec`` at ``level`` (Kafka's ranges: gzip -1 or 1-9, lz4 1-17, zstd -131072 to
    22, checked where the level is configured), Kafka's default level when ``None``."""
    compressed = compress_within(codec, data, sys.maxsize, level)
    assert compressed is not None  # nothing is over no limit
    return compressed


_COMPRESS_CHUNK: Final = 1024 * 1024


def compress_within(codec: Compression, data: bytes | bytearray | memoryview, limit: int,
                    level: int | None = None) -> bytes | None:
    """`compress`, a megabyte of ``data`` at a time, given up (``None``) as soon as the output passes ``limit``
    bytes: for a batch rebuilt in a topic's codec, which is refused when over ``max.message.bytes`` anyway. Records
    that do not shrink (a forged batch's 64 MiB of repeated random bytes) then cost the event loop about ``limit``
    bytes of compressing instead of all of them (gzip: 2.3 s for 64 MiB)."""
    view = memoryview(data)
    if codec == Compression.NONE:
        return bytes(view) if len(view) <= limit else None
    chosen = DEFAULT_LEVELS.get(codec, 0) if level is None or (codec == Compression.GZIP and level == -1) else level
    parts: list[bytes] = []
    size = 0
    if codec == Compression.SNAPPY:
        parts.append(_XERIAL_HEADER)
        size = len(_XERIAL_HEADER)
        for start in range(0, len(view), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
            parts += [_BLOCK_LENGTH.pack(len(block)), block]
            size += 4 + len(block)
            if size > limit:
                return None
        return b"".join(parts)
    step, end = _streaming(codec, chosen)
    for start in range(0, len(view), _COMPRESS_CHUNK):
        parts.append(step(view[start : start + _COMPRESS_CHUNK]))
        size += len(parts[-1])
        if size > limit:
            return None
    parts.append(end())
    return b"".join(parts) if size + len(parts[-1]) <= limit else None


def _streaming(codec: Compression, level: int) -> tuple[Callable[[memoryview], bytes], Callable[[], bytes]]:
    """A streaming compressor's two calls: a chunk in (what it wrote so far out), and its end."""
    if codec == Compression.GZIP:
        deflate = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return deflate.compress, deflate.flush
    if codec not in (Compression.LZ4, Compression.ZSTD):
        raise CompressionError(f"unknown compression codec {int(codec)}")
    compressor = (cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
                  if codec == Compression.LZ4 else cramjam.zstd.Compressor(level=level))

    def step(chunk: memoryview) -> bytes:
        compressor.compress(bytes(chunk))  # cramjam's compressors take bytes, not views
        return bytes(compressor.flush())

    return step, lambda: bytes(compressor.finish())


MAX_DECOMPRESSED_BYTES: Final = 64 * 1024 * 1024
"""The most one batch's records may decompress to: a forged batch of a few bytes can claim or expand to
gigabytes, and every codec here is native code that would allocate it all."""
_FIRST_GUESS: Final = 16 * 1024
_MOST_GUESSED: Final = 16 * 1024 * 1024
"""The largest first buffer sized from an earlier batch's expansion (larger results grow into theirs)."""
_last_expansion: dict[int, float] = {}
"""Per codec, decompressed / compressed size of the last batch that decompressed: a producer's batches are alike,
so the next one's first buffer is sized from it and most decompress in one pass. (librdkafka's and Java's zstd
frames do not declare their size; a first buffer too small costs the work done until it filled: a 900 KB zstd
batch took 266 us with a fixed 256 KiB first buffer, 128 us with one that fits.)"""
_GUESS_MARGIN: Final = 1.125


def decompress(codec: int, data: bytes | memoryview, max_size: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Undo `compress` (and every framing of it that Kafka clients produce); `CompressionError` if the result
    would be larger than ``max_size``, before more than ``max_size`` bytes are allocated for it."""
    result = inflate(codec, data, max_size)
    return result if isinstance(result, bytes) else bytes(result)


def inflate(codec: int, data: bytes | memoryview, max_size: int = MAX_DECOMPRESSED_BYTES) -> bytes | bytearray:
    """`decompress` without the copy into ``bytes`` that lz4 and zstd results take: for a reader that only reads
    them once (Produce's record check)."""
    try:
        if codec == Compression.NONE:
            return bytes(data)
        if codec == Compression.GZIP:
            return _gunzip(data, max_size)
        if codec == Compression.SNAPPY:
            if bytes(data[: len(_XERIAL_MAGIC)]) == _XERIAL_MAGIC:
                return _unxerial_snappy(memoryview(data), max_size)
            return _unsnappy_raw(data, max_size)
        if codec == Compression.LZ4:
            return _bounded(codec, cramjam.lz4.decompress_into, data, max_size)
        if codec == Compression.ZSTD:
            return _bounded(codec, cramjam.zstd.decompress_into, data, max_size)
    except (OSError, EOFError, zlib.error, cramjam.DecompressionError, ValueError) as error:
        if isinstance(error, CompressionError):
            raise
        raise CompressionError(f"{_name(codec)} data does not decompress: {error}") from error
    raise CompressionError(f"unknown compression codec {codec} (Kafka defines 0-4)")


def _bounded(codec: int, decompress_into: Any, data: bytes | memoryview, max_size: int) -> bytearray:
    """Decompress into buffers of our own, the first sized from the codec's last expansion, growing fourfold up to
    ``max_size + 1`` bytes: the codec cannot allocate, and a result that fills the last buffer is over the limit.
    (The codecs raise the same error for a full buffer as for corrupt data, so corrupt data costs a few retries.)
    The result is the buffer itself, cut to what was written: no copy."""
    guess = int(len(data) * _last_expansion.get(codec, 4.0) * _GUESS_MARGIN)
    size = min(max(_FIRST_GUESS, min(guess, _MOST_GUESSED)), max_size + 1)
    while True:
        output = bytearray(size)
        try:
            written = decompress_into(data, output)
        except cramjam.DecompressionError:
            del output  # before the next, larger one: a bomb's last two buffers were 16 + 64 MiB at once
            if size > max_size:
                raise
            size = min(size * 4, max_size + 1)
            continue
        if written > max_size:
            raise CompressionError(f"the records decompress to more than {max_size} bytes")
        _last_expansion[codec] = written / max(len(data), 1)
        del output[written:]
        return output


_GZIP_CHUNK: Final = 1024 * 1024


def _gunzip(data: bytes | memoryview, max_size: int) -> bytearray:
    """Every gzip member, one after another (Kafka clients write one; the format allows more), into one growing
    buffer a megabyte at a time: collecting the pieces and joining them held the result twice."""
    output = bytearray()
    remaining = bytes(data)
    while remaining:
        member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        tail = remaining
        while not member.eof:
            piece = member.decompress(tail, min(_GZIP_CHUNK, max_size + 1 - len(output)))
            output += piece
            if len(output) > max_size:
                raise CompressionError(f"the gzip records decompress to more than {max_size} bytes")
            if not piece and len(member.unconsumed_tail) == len(tail):
                break  # no progress: the input ended inside the member
            tail = member.unconsumed_tail
        if not member.eof:
            raise CompressionError("the gzip data ends early")
        remaining = member.unused_data.lstrip(b"\x00")
    return output


def _unsnappy_raw(data: bytes | memoryview, max_size: int) -> bytearray:
    claimed = cramjam.snappy.decompress_raw_len(data)
    if claimed > max_size:
        raise CompressionError(f"a snappy block claims {claimed} bytes, over the {max_size}-byte limit")
    output = bytearray(claimed)
    cramjam.snappy.decompress_raw_into(data, output)
    return output


def _name(codec: int) -> str:
    return Compression(codec).name.lower() if codec in Compression._value2member_map_ else str(codec)


def _unxerial_snappy(data: memoryview, max_size: int) -> bytearray:
    """Two passes over the blocks: the first checks their lengths and adds up the sizes they claim, the second
    decompresses each into its place in one buffer. The result is allocated once, only after the claims add up to
    at most ``max_size``, and nothing is kept per block (a forged batch can hold millions of empty ones)."""
    total = sum(claimed for _, claimed in _xerial_blocks(data, max_size))
    output = bytearray(total)
    with memoryview(output) as view:
        start = 0
        for block, claimed in _xerial_blocks(data, max_size):
            cramjam.snappy.decompress_raw_into(block, view[start : start + claimed])
            start += claimed
    return output


def _xerial_blocks(data: memoryview, max_size: int) -> Iterator[tuple[memoryview, int]]:
    """Each xerial block and the size it claims; `CompressionError` once the claims pass ``max_size``."""
    total = 0
    position = len(_XERIAL_HEADER)
    while position < len(data):
        if position + 4 > len(data):
            raise CompressionError("xerial snappy data ends inside a block length")
        (size,) = _BLOCK_LENGTH.unpack_from(data, position)
        position += 4
        if size < 0 or position + size > len(data):
            raise CompressionError(f"a xerial snappy block of {size} bytes runs past the data end")
        block = data[position : position + size]
        claimed = cramjam.snappy.decompress_raw_len(block)
        total += claimed
        if total > max_size:
            raise CompressionError(f"the xerial snappy blocks claim more than {max_size} bytes")
        yield block, claimed
        position += size
