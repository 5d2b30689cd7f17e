"""Sending a connection's answers: in request order, without copying them whole, batch files by sendfile.

A mixin of `compat.server.Connection` (the server's socket code, split by what it does: this module writes, the
connection reads and keeps the line of answers owed, `request_dispatch` starts the handlers). Why answers are
sliced rather than handed to the transport whole, and why a batch file's run goes by sendfile, is in
`compat.server`'s docstring.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, cast

from logwright.eventstore.file_ranges import FileRange

if TYPE_CHECKING:
    from logwright.compat.broker import Broker

log = logging.getLogger("logwright.compat.server")  # the server's messages, under the logger they always had

UNSENT_HIGH = 4 * 1024 * 1024
UNSENT_LOW = 1024 * 1024
"""Reading stops while more than `UNSENT_HIGH` bytes of a connection's answers are unsent and resumes once at
most `UNSENT_LOW` are (the hysteresis asyncio's own write-buffer limits had)."""
_WRITE_SLICE = 256 * 1024
"""The most handed to the transport at once: what it may copy when the socket takes less."""
_SLICES_PER_TURN = 16
"""Slices `AnswerSending._pump` hands the transport in one turn (4 MiB)."""
_JOINED_BELOW = 64 * 1024
"""Queued pieces shorter than this go out joined with their neighbours, up to `_WRITE_SLICE` a send: the answers
that became ready in one event-loop turn (a group commit answers every request it covered) leave in one
syscall. On this machine a send that wakes an idle reader costs ~15 us, and Kafka's ProducerPerformance keeps
five 16 KB produce requests in flight: its answers were a quarter of the broker's samples, one send each. A Fetch
of 16 KB batches is joined too: sending 64 pieces of 16.5 KB one by one cost the sender 0.42-0.46 CPU s/GB on
loopback, joined into 256 KiB sends 0.28-0.29 (the copy included)."""


class AnswerSending:
    """The writing half of a connection (`compat.server.Connection` inherits it)."""

    broker: Broker
    connection_id: int
    client_host: str
    transport: asyncio.Transport | None
    _loop: asyncio.AbstractEventLoop
    _in_flight: int
    _writable: bool
    _closing: bool
    last_active_ms: int
    _outbound: collections.deque[bytes | memoryview | FileRange]
    _outbound_bytes: int
    _transport_holds: bool
    _sending_file: FileSend | None
    _pump_scheduled: bool
    encrypted: bool
    """A TLS connection: its socket carries TLS records, so batch files cannot go to it by sendfile."""

    if TYPE_CHECKING:
        def _read_only_when_idle(self) -> None: ...
        def _send_ready_answers(self) -> None: ...
        def _finish_when_answered(self) -> None: ...
        def _stop_reading(self) -> None: ...

    @property
    def unsent_bytes(self) -> int:
        """Answer bytes not yet taken by the socket (ours and the transport's)."""
        held = self.transport.get_write_buffer_size() if self._transport_holds and self.transport else 0
        return self._outbound_bytes + held

    def pause_writing(self) -> None:
        """The transport kept part of the last slice: hand it no more until it has sent all of it."""
        self._transport_holds = True

    def resume_writing(self) -> None:
        """The transport sent all it held: the peer reads, hand it the next slices, in the next turn. Not from
        here: the transport calls this from its write-ready callback and, finding its buffer empty afterwards,
        ends a closing connection itself; a write in between that failed (the peer reset), or a close, had already
        ended it, and asyncio called ``connection_lost`` twice (an AttributeError logged as an error; the
        hostile-values fuzz found it once Kafka's 100 KiB send buffer made partial writes common)."""
        self._transport_holds = False
        self.last_active_ms = self.broker.clock.now_ms()
        if not self._pump_scheduled:
            self._pump_scheduled = True
            self._loop.call_soon(self._scheduled_pump)

    def _queue_answer(self, payload: list[bytes]) -> None:
        """Queue an answer; the queue is handed to the transport once the answers ready in this turn are in it, or
        at once when no other request of this connection is in flight (no answer can join it: a turn later, behind
        other tasks' steps, a ping waited through a 5,000-partition request's stretches one more time)."""
        self._outbound.extend(payload)
        self._outbound_bytes += sum(map(len, payload))
        if self._in_flight == 1 and not self._pump_scheduled:
            self._pump()
            return
        if not self._pump_scheduled:
            self._pump_scheduled = True
            self._loop.call_soon(self._scheduled_pump)
        self._unsent_changed()

    def _scheduled_pump(self) -> None:
        self._pump_scheduled = False
        self._pump()

    def _pump(self) -> None:
        """Hand the transport the queued answers, a slice at a time, while it has sent all it was given; after
        `_SLICES_PER_TURN` slices the rest waits for the next turn (a socket that takes everything, loopback, took
        an 18 MB answer of a million pieces in one 180 ms stretch)."""
        transport = self.transport
        outbound = self._outbound
        slices = 0
        while outbound and not self._transport_holds and self._sending_file is None:
            if transport is None or transport.is_closing():  # closed, or a send failed: nobody will read them
                self._drop_unsent()
                return
            if slices == _SLICES_PER_TURN:
                if not self._pump_scheduled:
                    self._pump_scheduled = True
                    self._loop.call_soon(self._scheduled_pump)
                break
            slices += 1
            piece = outbound[0]
            if isinstance(piece, FileRange):
                outbound.popleft()
                self._send_file(transport, piece)
                continue
            if len(piece) > _WRITE_SLICE:
                view = piece if isinstance(piece, memoryview) else memoryview(piece)
                outbound[0] = view[_WRITE_SLICE:]
                piece = view[:_WRITE_SLICE]
            else:
                outbound.popleft()
                if len(piece) < _JOINED_BELOW and outbound and _joinable(outbound[0]):
                    joined, size = [piece], len(piece)
                    while outbound and _joinable(outbound[0]) and size + len(outbound[0]) <= _WRITE_SLICE:
                        size += len(outbound[0])
                        joined.append(cast(bytes | memoryview, outbound.popleft()))
                    piece = b"".join(joined)
            self._outbound_bytes -= len(piece)
            if outbound and isinstance(outbound[0], FileRange) and slices < _SLICES_PER_TURN:
                self._write_before_file(transport, piece)  # the range is sent next, in this call
            else:
                transport.write(piece)  # calls pause_writing at once if the socket took less
        self._unsent_changed()

    def _write_before_file(self, transport: asyncio.Transport, piece: bytes | memoryview) -> None:
        """Write the bytes a batch file's range follows with ``MSG_MORE``, so the kernel sends them in the range's first
        segment rather than alone: every Fetch answer's headers went as a packet of their own (TCP_NODELAY), a trip
        through loopback and a wake-up of the reader for ~80 bytes. A Fetch of one 45 KB batch (`bench/request_cost.py
        --api fetch --records 1024:44 --depth 5`, 8 alternated rounds): 177 us of broker CPU against 184.

        Straight to the socket only when the transport holds nothing (its buffer is empty whenever `_pump` writes:
        any byte it keeps pauses the pump) and `_send_file` runs next, in the same call, so the bytes held back never
        wait on a later turn. asyncio's public ``get_extra_info("socket")`` deprecates ``send``, hence the
        transport's own socket. What the socket does not take, and any failure, go to the transport as before (a
        failed send fails again there and closes the connection the transport's way)."""
        connected: socket.socket | None = None if self.encrypted else getattr(transport, "_sock", None)
        if connected is not None and not transport.get_write_buffer_size():
            try:
                sent = connected.send(piece, socket.MSG_MORE)
            except OSError:  # BlockingIOError and InterruptedError among them: nothing was sent
                sent = 0
            if sent == len(piece):
                return
            piece = piece[sent:]
        transport.write(piece)

    def _send_file(self, transport: asyncio.Transport, piece: FileRange) -> None:
        """Send a range of a batch file with sendfile(2): the kernel copies it from the page cache to the socket,
        where reading it into Python and writing it out copied every byte twice (a 1 MB-record consumer: the
        pread a fifth of the broker's samples). The transport holds nothing now (`_pump`), so the socket is
        written directly; what it does not take at once goes by `FileSend`, the pump waiting for it."""
        connected = None if self.encrypted else transport.get_extra_info("socket")
        if connected is None:  # not a socket (in process), or TLS: the bytes themselves, through the transport
            try:
                data = piece.read()
            finally:
                piece.close()
            self._outbound_bytes -= len(data)
            transport.write(data)
            return
        try:
            sent = os.sendfile(connected.fileno(), piece.fd, piece.offset, piece.length)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as error:
            piece.close()
            self._file_send_failed(transport, error)
            return
        self._outbound_bytes -= sent
        if sent == piece.length:
            piece.close()
            return
        transport.pause_reading()  # until the rest is sent (`_read_only_when_idle`)
        rest = piece.length - sent
        self._sending_file = FileSend(self._loop, connected.fileno(), piece, sent,
                                       lambda error: self._file_sent(transport, rest, error))

    def _file_sent(self, transport: asyncio.Transport, rest: int, error: BaseException | None) -> None:
        """`FileSend` ended: the next answers go, and reading resumes; or, the send failed, the connection goes."""
        self._sending_file = None
        if error is not None:
            self._file_send_failed(transport, error)
            return
        self._outbound_bytes -= rest
        self.last_active_ms = self.broker.clock.now_ms()
        self._pump()
        self._read_only_when_idle()

    def _file_send_failed(self, transport: asyncio.Transport, error: BaseException) -> None:
        """Part of an answer could not be sent: the stream cannot be resumed mid-frame, the connection goes."""
        log.warning("closing connection %d from %s: sending a batch file failed: %s", self.connection_id,
                    self.client_host, error)
        self._sending_file = None
        self._stop_reading()
        self._drop_unsent()
        transport.abort()

    def _unsent_changed(self) -> None:
        unsent = self.unsent_bytes
        if unsent > UNSENT_HIGH and self._writable:
            self._writable = False
            self._read_only_when_idle()
        elif unsent <= UNSENT_LOW and not self._writable:
            self._writable = True
            self._send_ready_answers()
        elif not unsent and self._closing:
            self._finish_when_answered()

    def _drop_unsent(self) -> None:
        """The connection is gone: its unsent answers go with it."""
        for piece in self._outbound:
            if isinstance(piece, FileRange):
                piece.close()
        if self._sending_file is not None:
            self._sending_file.cancel()
            self._sending_file = None
        self._outbound.clear()
        self._outbound_bytes = 0
        self._transport_holds = False
        self._writable = True
        if self._closing:
            self._finish_when_answered()


def _joinable(piece: bytes | memoryview | FileRange) -> bool:
    return len(piece) < _JOINED_BELOW and not isinstance(piece, FileRange)


class _SelectorLoop(Protocol):
    """What `FileSend` calls of asyncio's selector event loop (internal methods, so not in its type stubs)."""

    def _add_writer(self, fd: int, callback: Callable[[], object]) -> object: ...

    def _remove_writer(self, fd: int) -> bool: ...


class FileSend:
    """The rest of a batch file's range, sent by sendfile(2) each time the socket can take more.

    Why not the loop's own ``sendfile``: per chunk the socket's send buffer takes (Kafka's 100 KiB
    ``socket.send.buffer.bytes``: a 1 MB Fetch answer goes in about four, `strace -c`), asyncio removes its writer
    and adds it again (two ``epoll_ctl``), and the whole send is a task awaiting a future behind an empty-buffer
    waiter: a one-partition consumer of 1 KiB records (1 MB answers) cost the broker 0.35-0.36 CPU s/GB that way,
    0.29-0.30 this way (3 alternated pairs of 8 reads of 300 MB). Here the writer stays registered until the range
    is sent. It is the transport's own socket, registered through the loop's internal ``_add_writer`` (the public
    one refuses a transport's socket; asyncio's sendfile takes the transport out of the loop's registry instead):
    the transport holds nothing while this runs (`AnswerSending._pump` hands it nothing more), so its own writer is
    not registered, and reading is paused. `cancel` (the connection is lost: before the transport closes its socket)
    removes the writer."""

    __slots__ = ("_loop", "_socket", "_piece", "_offset", "_rest", "_done", "_sending")

    def __init__(self, loop: asyncio.AbstractEventLoop, socket_fd: int, piece: FileRange, sent: int,
                 done: Callable[[BaseException | None], None]) -> None:
        self._loop = cast(_SelectorLoop, loop)
        self._socket = socket_fd
        self._piece = piece
        self._offset = piece.offset + sent
        self._rest = piece.length - sent
        self._done = done
        self._sending = True
        self._loop._add_writer(socket_fd, self._send)

    def _send(self) -> None:
        try:
            sent = os.sendfile(self._socket, self._piece.fd, self._offset, self._rest)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self._end(error)
            return
        if sent == 0:
            self._end(EOFError(f"the batch file ended {self._rest} bytes early"))
            return
        self._offset += sent
        self._rest -= sent
        if not self._rest:
            self._end(None)

    def _end(self, error: BaseException | None) -> None:
        if self._sending:
            self.cancel()
            self._done(error)

    def cancel(self) -> None:
        """Stop sending, without telling anyone (the connection is lost); does nothing once ended."""
        if self._sending:
            self._sending = False
            self._loop._remove_writer(self._socket)
            self._piece.close()
