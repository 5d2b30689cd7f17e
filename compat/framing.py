"""Sans-I/O Kafka framing: every request and response is a 4-byte big-endian size, then that many bytes.

The server feeds whatever the socket returned to a `FrameDecoder` and gets back the complete request
frames; no partial frame ever leaves it. An oversized announcement is refused as soon as its size
prefix arrives, before any of the body is buffered, so a client cannot make the broker hold
``socket.request.max.bytes`` worth of garbage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

DEFAULT_MAX_REQUEST_BYTES: Final = 104_857_600
"""Kafka's default ``socket.request.max.bytes`` (100 MiB)."""

_PREFIX: Final = 4


class FramingError(Exception):
    """The byte stream cannot be split into frames; the connection must be closed."""


class FrameTooLarge(FramingError):
    """A size prefix announced more bytes than the broker accepts in one request."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(f"a request announced {size} bytes, over socket.request.max.bytes={limit}")


class InvalidFrame(FramingError):
    """A size prefix was negative: the peer does not speak the Kafka protocol (or lost sync)."""


class FrameDecoder:
    """Split a byte stream into Kafka frames.

    Bytes are appended to one ``bytearray`` and consumed frames are dropped from its front once per
    `feed` (CPython makes that cheap), so feeding a frame in many small pieces costs linear time.
    """

    __slots__ = ("_buffer", "_max_request_bytes")

    def __init__(self, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        """``max_request_bytes`` bounds one frame's payload, as Kafka's ``socket.request.max.bytes`` does."""
        self._buffer = bytearray()
        self._max_request_bytes = max_request_bytes

    @property
    def buffered(self) -> int:
        """Bytes held for a frame that has not fully arrived yet."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add ``data`` and return every frame it completes, payloads without their size prefix.

        Raises `FrameTooLarge` or `InvalidFrame` as soon as a bad size prefix is seen; the frames
        completed before it in the same call are lost with the connection, as they would be in Kafka.
        """
        buffer = self._buffer
        if not buffer and isinstance(data, bytes):
            frames, used = self._split(data)
            if used < len(data):
                buffer += data[used:] if used else data
            return frames
        buffer += data
        frames, used = self._split(buffer)
        if used:
            del buffer[:used]
        return frames

    def _split(self, data: bytes | bytearray) -> tuple[list[bytes], int]:
        """The complete frames at the start of ``data`` and how many bytes they took."""
        frames: list[bytes] = []
        position = 0
        available = len(data)
        limit = self._max_request_bytes
        with memoryview(data) as view:
            while available - position >= _PREFIX:
                size = int.from_bytes(view[position : position + _PREFIX], "big", signed=True)
                if size > limit:
                    raise FrameTooLarge(size, limit)
                if size < 0:
                    raise InvalidFrame(f"a request announced a negative size ({size}): not a Kafka client?")
                end = position + _PREFIX + size
                if end > available:
                    break
                frames.append(view[position + _PREFIX : end].tobytes())
                position = end
        return frames, position


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    """``payload`` with its 4-byte big-endian size prefix, ready for the socket."""
    return len(payload).to_bytes(_PREFIX, "big") + payload


_JOIN_BELOW: Final = 16 * 1024


def frame_pieces(parts: Sequence[bytes]) -> list[bytes]:
    """`encode_frame` of the payload ``b"".join(parts)``, as pieces to write one after the other.

    Runs of small parts are joined (one socket write each, not one per field); parts of 16 KiB or
    more, the record batches of a Fetch answer, are passed on as they are, so Python never copies them.
    """
    pieces: list[bytes] = []
    small: list[bytes] = [sum(map(len, parts)).to_bytes(_PREFIX, "big")]
    for part in parts:
        if len(part) < _JOIN_BELOW:
            small.append(part)
            continue
        if small:
            pieces.append(b"".join(small))
            small = []
        pieces.append(part)
    if small:
        pieces.append(b"".join(small))
    return pieces
