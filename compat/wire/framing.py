"""Sans-I/O Kafka framing: every request and response is a 4-byte big-endian size, then that many bytes.

The server reads the socket into a `FrameDecoder`'s buffers (or feeds it what a read returned) and
gets back the complete request frames; no partial frame ever leaves it. An oversized announcement is
refused as soon as its size prefix arrives, before any of the body is buffered, so a client cannot
make the broker hold ``socket.request.max.bytes`` worth of garbage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from logwright.compat.wire.encoder import Encoded

DEFAULT_MAX_REQUEST_BYTES: Final = 104_857_600
"""Kafka's default ``socket.request.max.bytes`` (100 MiB)."""

_PREFIX: Final = 4
READ_BUFFER_BYTES: Final = 256 * 1024
"""The shared buffer a connection reads into (asyncio's own read size for sockets)."""
OWN_BUFFER_FROM: Final = 128 * 1024
OWN_BUFFER_UP_TO: Final = 8 * 1024 * 1024
"""A frame whose payload is in this range gets a buffer of its own, and the socket reads its rest straight into it.

The buffer is allocated when the size prefix arrives, before the body: the cap keeps a client that announces
a large frame and sends nothing from making the broker hold more than that; larger frames are joined from
the reads once complete, as `feed` does."""


JOIN_READS_BELOW: Final = 4096
"""A read this small is joined to the small piece before it (a ``bytearray`` of the decoder's own), not kept as a
piece: a frame arriving one byte a read held 43 bytes of objects per byte the partial-frame budget counts."""


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

    Fed with `feed`, a frame that arrives in one read is cut out of it; one that spans reads is kept as
    the pieces read (views, not copies; small reads joined, `JOIN_READS_BELOW`) until its last byte is in, then
    joined once. A growing buffer
    would copy a 1 MiB Produce request three or four times (appends, resizes, the cut).

    Read into with `get_buffer` and `buffer_updated` (an `asyncio.BufferedProtocol`), a large frame is
    not even joined: once its size prefix is in, it gets a ``bytearray`` of its own (`OWN_BUFFER_FROM`
    to `OWN_BUFFER_UP_TO`), and the socket writes the rest of it there. Such frames come out as that
    ``bytearray`` (no one else holds it).
    """

    __slots__ = ("_pending", "_buffered", "_frame_end", "_max_request_bytes", "_read_buffer", "_own", "_own_filled")

    def __init__(self, max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
                 read_buffer: memoryview | None = None) -> None:
        """``max_request_bytes`` bounds one frame's payload, as Kafka's ``socket.request.max.bytes`` does.

        ``read_buffer``: where `get_buffer` lets reads go, shared by every decoder one thread reads into, one read
        at a time (each `get_buffer` followed by its `buffer_updated` before another decoder's `get_buffer`, as
        asyncio's transports do). Nothing a decoder keeps points into it once `buffer_updated` returns: the frames
        and the start of the next one are copied out. Without one a decoder allocates its own at its first read:
        a server gave each of 1,000 connections 256 KiB it kept (RSS 49 -> 303 MiB)."""
        self._pending: list[bytes | bytearray | memoryview] = []
        self._buffered = 0
        self._frame_end = 0
        """Bytes of ``_pending`` that complete its frame, size prefix included; 0 while the prefix is partial."""
        self._max_request_bytes = max_request_bytes
        self._read_buffer = read_buffer
        self._own: bytearray | None = None
        """The payload buffer of the large frame being read into, ``_own_filled`` bytes of it in."""
        self._own_filled = 0

    def limit(self, max_request_bytes: int) -> None:
        """Bound the frames whose size prefix is read from now on (a SASL connection's, until it authenticates)."""
        self._max_request_bytes = max_request_bytes

    @property
    def buffered(self) -> int:
        """Bytes held for a frame that has not fully arrived yet."""
        return self._buffered if self._own is None else _PREFIX + self._own_filled

    @property
    def held(self) -> int:
        """Bytes held or about to be allocated for the frame in progress: what a memory budget must count.

        A frame that gets a buffer of its own counts in full from its size prefix on, since `get_buffer`
        allocates the whole of it before the body arrives.
        """
        if self._own is not None:
            return _PREFIX + len(self._own)
        if OWN_BUFFER_FROM <= self._frame_end - _PREFIX <= OWN_BUFFER_UP_TO:
            return self._frame_end
        return self._buffered

    def get_buffer(self) -> memoryview:
        """Where the next read should go: the unfilled rest of a large frame's own buffer, or the shared one."""
        if self._own is None and OWN_BUFFER_FROM <= self._frame_end - _PREFIX <= OWN_BUFFER_UP_TO:
            self._own = bytearray(self._frame_end - _PREFIX)
            position = -_PREFIX
            for piece in self._pending:
                start = max(-position, 0)
                if start < len(piece):
                    self._own[position + start : position + len(piece)] = memoryview(piece)[start:]
                position += len(piece)
            self._own_filled = position
            self._pending, self._buffered = [], 0
        if self._own is not None:
            return memoryview(self._own)[self._own_filled :]
        if self._read_buffer is None:
            self._read_buffer = memoryview(bytearray(READ_BUFFER_BYTES))
        return self._read_buffer

    def buffer_updated(self, nbytes: int) -> list[bytes | bytearray]:
        """``nbytes`` were read into the last `get_buffer`; the frames they complete, as `feed` returns them."""
        if self._own is None:
            assert self._read_buffer is not None, "buffer_updated without get_buffer"
            data = self._read_buffer[:nbytes]
            if self._pending:
                return list(self.feed(data.tobytes()))
            frames = self._split(data)  # complete frames come out as copies already
            if self._pending:
                self._pending[-1] = bytes(self._pending[-1])  # the start of the next frame outlives the buffer
            return list(frames)
        self._own_filled += nbytes
        if self._own_filled < len(self._own):
            return []
        frame, self._own, self._own_filled, self._frame_end = self._own, None, 0, 0
        return [frame]

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add ``data`` and return every frame it completes, payloads without their size prefix.

        Raises `FrameTooLarge` or `InvalidFrame` as soon as a bad size prefix is seen; the frames
        completed before it in the same call are lost with the connection, as they would be in Kafka.
        """
        if isinstance(data, bytearray):
            data = bytes(data)  # the caller may reuse its buffer; the pieces kept here must not change
        if not self._pending:
            return self._split(data)
        last = self._pending[-1]
        if len(data) >= JOIN_READS_BELOW:
            self._pending.append(data)
        elif isinstance(last, bytearray):
            last += data
        elif len(last) < JOIN_READS_BELOW:
            self._pending[-1] = bytearray(last) + data
        else:
            self._pending.append(data)
        self._buffered += len(data)
        if not self._frame_end:
            if self._buffered < _PREFIX:
                return []
            self._frame_end = _PREFIX + self._check_size(_first_bytes(self._pending, _PREFIX))
        if self._buffered < self._frame_end:
            return []
        frame, rest = _cut(self._pending, self._frame_end)
        self._pending, self._buffered, self._frame_end = [], 0, 0
        return [frame, *self._split(rest)] if len(rest) else [frame]

    def _split(self, data: bytes | memoryview) -> list[bytes]:
        """The complete frames at the start of ``data``; what follows them is kept for the next `feed`."""
        frames: list[bytes] = []
        position = 0
        available = len(data)
        view = memoryview(data)
        while available - position >= _PREFIX:
            end = position + _PREFIX + self._check_size(view[position : position + _PREFIX])
            if end > available:
                self._frame_end = end - position
                break
            frames.append(view[position + _PREFIX : end].tobytes())
            position = end
        if position < available:
            self._pending.append(view[position:])
            self._buffered = available - position
        return frames

    def _check_size(self, prefix: bytes | memoryview) -> int:
        size = int.from_bytes(prefix, "big", signed=True)
        if size > self._max_request_bytes:
            raise FrameTooLarge(size, self._max_request_bytes)
        if size < 0:
            raise InvalidFrame(f"a request announced a negative size ({size}): not a Kafka client?")
        return size


def _first_bytes(pieces: list[bytes | bytearray | memoryview], count: int) -> bytes:
    head = b""
    for piece in pieces:
        head += bytes(piece[: count - len(head)])
        if len(head) == count:
            break
    return head


def _cut(pieces: list[bytes | bytearray | memoryview], frame_end: int) -> tuple[bytes, memoryview]:
    """The payload of the frame ending at ``frame_end`` (one join) and the view of what follows it,
    which lies in the last piece: the frame was not complete before that piece arrived."""
    parts: list[bytes | memoryview] = []
    offset = 0
    rest = memoryview(b"")
    for piece in pieces:
        start, stop = max(_PREFIX - offset, 0), min(frame_end - offset, len(piece))
        if start < stop:
            parts.append(memoryview(piece)[start:stop])
        if frame_end - offset < len(piece):
            rest = memoryview(piece)[frame_end - offset :]
        offset += len(piece)
    return b"".join(parts), rest


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    """``payload`` with its 4-byte big-endian size prefix, ready for the socket."""
    return len(payload).to_bytes(_PREFIX, "big") + payload


_JOIN_BELOW: Final = 16 * 1024
_REFERENCED_FROM: Final = 256
"""An entity answered again is passed on by reference from this size; a smaller one is copied with its neighbours: a
million repeats of an 18-byte unknown group were a million pieces for the server to walk (and 18 MB copied is less
than they cost), while a million of a 32 KB member's description would be 32 GB."""
_BYTES: Final = frozenset({bytes})
_JOINED_AT_MOST: Final = 256 * 1024
"""Small parts are joined into pieces of about this size at most: a Fetch answer of 50 MB of small stored batches
joined whole was a fresh 50 MB allocation, which glibc maps anew each time and this VM faults in at ~0.5 CPU s/GB
(as much as Apache Kafka's whole consume); pieces this size come from the heap the last answer freed."""


def frame_pieces(parts: Sequence[bytes]) -> list[bytes]:
    """`encode_frame` of the payload ``b"".join(parts)``, as pieces to write one after the other.

    Runs of small parts are joined (one socket write each, not one per field); parts of 16 KiB or
    more, the record batches of a Fetch answer, are passed on as they are, so Python never copies them, and so
    is a part that is not bytes at all (a range of a batch file, sent with sendfile by the server), and an
    `Encoded` entity of `_REFERENCED_FROM` bytes or more met before in this answer (`encoder.answered_once`): an
    answer that repeats one is as large as a client asks, its distinct bytes are not.
    """
    size = sum(map(len, parts))
    prefix = size.to_bytes(_PREFIX, "big")
    if size < _JOIN_BELOW or (size <= _JOINED_AT_MOST and max(map(len, parts)) < _JOIN_BELOW
                              and set(map(type, parts)) <= _BYTES):
        # every part small (all answers but Fetch's): joined at once, not looked at one by one in Python (the 20,000
        # parts of a DeleteRecords answer of 5,000 partitions took 5.6 ms, now 2; a small answer 3.2 us, now 0.7)
        try:
            return [prefix + b"".join(parts)]
        except TypeError:  # not bytes at all (a range of a batch file): sent on its own, below
            pass
    pieces = Pieces([prefix])
    pieces.add(parts)
    return pieces.pieces


class Pieces:
    """A payload's pieces gathered part by part as `frame_pieces` joins them, for a caller that writes a payload in
    steps (`messages.encode_response_frame_in_steps`) and hands each step's parts on at once: a million entities
    left three million parts to join, 260 ms in one stretch. `framed` puts the size prefix in front."""

    __slots__ = ("_encoded", "_small", "pieces")

    def __init__(self, small: list[bytes] | None = None) -> None:
        self.pieces: list[bytes] = []
        self._small: list[bytes] = small or []
        self._encoded: set[int] = set()

    def add(self, parts: Sequence[bytes]) -> None:
        """Join ``parts`` after those added before (small runs joined, the rest by reference, as `frame_pieces`)."""
        pieces, small, encoded = self.pieces, self._small, self._encoded
        held = sum(map(len, small))  # the size prefix `frame_pieces` starts with
        for part in parts:
            size = len(part)
            if part.__class__ is Encoded and id(part) in encoded and size >= _REFERENCED_FROM:
                pass  # an entity answered again (a group a DescribeGroups names twice): by reference, never copied
            elif size < _JOIN_BELOW and isinstance(part, bytes | bytearray | memoryview):
                if part.__class__ is Encoded:
                    encoded.add(id(part))
                small.append(part)
                held += size
                if held >= _JOINED_AT_MOST:
                    pieces.append(b"".join(small))
                    small.clear()
                    held = 0
                continue
            if small:
                pieces.append(b"".join(small))
                small.clear()
                held = 0
            pieces.append(part)
        if small:
            pieces.append(b"".join(small))
            small.clear()

    def framed(self) -> list[bytes]:
        """The pieces added, behind the size prefix of their payload."""
        size = sum(map(len, self.pieces))
        return [size.to_bytes(_PREFIX, "big"), *self.pieces]
