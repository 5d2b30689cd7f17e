"""The asyncio server: the only socket code. It moves frames between sockets and handlers.

Each connection reads frames through the sans-I/O `FrameDecoder`, runs one task per request and
writes responses strictly in request order (Kafka clients pipeline). A handler that raises is logged
with its traceback and its request answered with an error (UNKNOWN_SERVER_ERROR) where the response
can carry one, as Kafka's ``getErrorResponse`` does; a request that cannot be answered (an unreadable
frame, a response type without an error code, an extension key without an error answer) closes that
connection only, after the answers to the requests before it. The broker and every other connection
carry on.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

from .broker import Broker
from .errors import ErrorCode
from .fallback import error_response, unsupported_version_response
from .framing import FrameDecoder, FrameTooLarge, InvalidFrame, encode_frame
from .messages import (
    KNOWN_VERSIONS,
    MalformedRequest,
    RequestHeader,
    UnsupportedVersion,
    decode_request,
    encode_response_frame,
    parse_request_header,
)
from .registry import HandlerEntry, RequestContext, load_handlers

log = logging.getLogger(__name__)

_READ_SIZE = 256 * 1024
_connection_ids = itertools.count(1)


class Unanswerable(Exception):
    """A request that failed and has no error answer: its connection closes once the answers before it are out."""


class KafkaServer:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.handlers = load_handlers()
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        settings = self.broker.settings
        self._server = await asyncio.start_server(self._accept, settings.host, settings.port, reuse_address=True)
        sockets: tuple[Any, ...] = tuple(self._server.sockets or ())
        if sockets and settings.port == 0:
            settings.port = sockets[0].getsockname()[1]
        log.info("listening on %s:%d (advertised %s:%d)", settings.host, settings.port,
                 settings.public_host, settings.public_port)

    async def stop(self) -> None:
        """Stop accepting, end every open connection, then wait for the listener to close.

        Connections are ended first: from Python 3.12 on, ``wait_closed`` waits for them.
        """
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await Connection(self, reader, writer).run()
        except asyncio.CancelledError:
            # Only stop() cancels a connection. Ending normally matters on Python 3.11, whose
            # start_server callback logs a cancelled connection task as an unhandled error.
            writer.close()
        finally:
            self._connections.discard(task)


class Connection:
    def __init__(self, server: KafkaServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.broker = server.broker
        self.reader = reader
        self.writer = writer
        self.connection_id = next(_connection_ids)
        peer = writer.get_extra_info("peername")
        self.client_host = str(peer[0]) if peer else "?"
        self.decoder = FrameDecoder(int(self.broker.broker_config("socket.request.max.bytes")))
        self.responses: asyncio.Queue[asyncio.Future[list[bytes] | None] | None] = asyncio.Queue()

    async def run(self) -> None:
        """Serve until the client leaves, or until `KafkaServer.stop` cancels us.

        A cancelled connection returns instead of raising: Python 3.11's asyncio logs every cancelled
        client task as an "Exception in callback" traceback, one per connection open at Ctrl-C. It also
        drops the answers not yet sent: a long-polling Fetch (or a JoinGroup waiting for its rebalance)
        would otherwise hold up the shutdown until the client's max wait ends.
        """
        sender = asyncio.create_task(self._send_responses())
        try:
            await self._read_requests()
        except (OSError, asyncio.IncompleteReadError):
            pass
        except Exception:
            log.exception("closing connection %d from %s: a request could not be dispatched",
                          self.connection_id, self.client_host)
        except asyncio.CancelledError:
            sender.cancel()
        finally:
            await self.responses.put(None)
            try:
                await sender
            except (Exception, asyncio.CancelledError):
                pass
            while not self.responses.empty():  # left when cancelled or closed after an unanswerable request
                pending = self.responses.get_nowait()
                if pending is not None:
                    pending.cancel()
            self.writer.close()

    async def _read_requests(self) -> None:
        while True:
            data = await self.reader.read(_READ_SIZE)
            if not data:
                return
            try:
                frames = self.decoder.feed(data)
            except (FrameTooLarge, InvalidFrame) as error:
                log.warning("closing connection %d from %s: %s", self.connection_id, self.client_host, error)
                return
            for frame in frames:
                if not self._dispatch(frame):
                    return

    def _dispatch(self, frame: bytes) -> bool:
        """Queue the response for one frame; ``False`` when the connection must close."""
        try:
            header = parse_request_header(frame)
        except MalformedRequest as error:
            log.warning("closing connection %d from %s: unreadable request header: %s",
                        self.connection_id, self.client_host, error)
            return False
        entry = self.server.handlers.get(header.api_key)
        if entry is None or not entry.min_version <= header.api_version <= entry.max_version:
            return self._dispatch_unsupported(header, frame)
        if header.api_key not in KNOWN_VERSIONS:
            # An extension API key (outside Kafka's range): the handler reads and writes its own body.
            context = RequestContext(self.broker, header.api_key, header.api_version, header.correlation_id,
                                     header.client_id, self.connection_id, self.client_host)
            body = bytes(frame[header.header_length:])
            self.responses.put_nowait(asyncio.ensure_future(self._handle_raw(entry, context, body)))
            return True
        try:
            _, request = decode_request(frame)
        except UnsupportedVersion:
            # A version in the handler's range that kio cannot read (ApiVersions never offers one).
            return self._dispatch_unsupported(header, frame)
        except MalformedRequest as error:
            log.warning("closing connection %d from %s: malformed %s v%d request: %s", self.connection_id,
                        self.client_host, entry.name, header.api_version, error)
            return False
        context = RequestContext(self.broker, header.api_key, header.api_version, header.correlation_id,
                                 header.client_id, self.connection_id, self.client_host)
        self.responses.put_nowait(asyncio.ensure_future(self._handle(entry, context, request)))
        return True

    def _dispatch_unsupported(self, header: RequestHeader, frame: bytes) -> bool:
        fallback = unsupported_version_response(header, frame)
        if fallback is None:
            log.warning("closing connection %d from %s: unsupported API key %d version %d",
                        self.connection_id, self.client_host, header.api_key, header.api_version)
            return False
        log.info("API key %d version %d is not supported; answered UNSUPPORTED_VERSION",
                 header.api_key, header.api_version)
        self.responses.put_nowait(_ready(fallback))
        return True

    async def _handle_raw(self, entry: HandlerEntry, context: RequestContext, body: bytes) -> list[bytes] | None:
        """Extension keys answer with a v0 response header (correlation id) and the bytes the handler wrote."""
        try:
            response = await entry.handle(context, body)
            if response is not None and not isinstance(response, bytes | bytearray | memoryview):
                raise TypeError(f"the handler returned {type(response).__name__}, not bytes")
        except Exception as error:
            self._log_failure(entry, context)
            if entry.error_answer is None:
                raise Unanswerable(f"{entry.name} (key {entry.api_key}) failed and has no error answer") from error
            response = entry.error_answer(ErrorCode.UNKNOWN_SERVER_ERROR, f"{type(error).__name__}: {error}")
        if response is None:
            return None
        return [encode_frame(context.correlation_id.to_bytes(4, "big", signed=True) + bytes(response))]

    async def _handle(self, entry: HandlerEntry, context: RequestContext, request: Any) -> list[bytes] | None:
        """A handler's response frame in pieces (`framing.frame_pieces`: stored record batches go out
        uncopied); if the handler or the encoding fails, the error answer."""
        try:
            response = await entry.handle(context, request)
            if response is None:
                return None
            return encode_response_frame(context.api_key, context.api_version, context.correlation_id, response)
        except Exception as error:
            self._log_failure(entry, context)
            fallback = error_response(context.api_key, context.api_version, context.correlation_id,
                                      ErrorCode.UNKNOWN_SERVER_ERROR)
            if fallback is None:
                raise Unanswerable(f"{entry.name} v{context.api_version} failed and its response "
                                   "has no top-level error code") from error
            return [encode_frame(fallback)]

    def _log_failure(self, entry: HandlerEntry, context: RequestContext) -> None:
        log.exception("%s v%d handler failed for correlation id %d on connection %d from %s (client id %r)",
                      entry.name, context.api_version, context.correlation_id, self.connection_id,
                      self.client_host, context.client_id)

    async def _send_responses(self) -> None:
        while True:
            pending = await self.responses.get()
            if pending is None:
                return
            try:
                payload = await pending
            except Unanswerable as error:
                log.warning("closing connection %d from %s: %s", self.connection_id, self.client_host, error)
                self.writer.close()
                return
            except Exception:
                log.exception("closing connection %d from %s: a request could not be answered",
                              self.connection_id, self.client_host)
                self.writer.close()
                return
            if payload is None:
                continue
            for piece in payload:
                self.writer.write(piece)
            if self.writer.transport.get_write_buffer_size() > 4 * 1024 * 1024:
                await self.writer.drain()


def _ready(payload: bytes) -> asyncio.Future[list[bytes] | None]:
    future: asyncio.Future[list[bytes] | None] = asyncio.get_running_loop().create_future()
    future.set_result([encode_frame(payload)])
    return future
