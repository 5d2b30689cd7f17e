"""The bundled client's connection: one TCP stream, pipelined requests, Kafka and extension keys.

Requests are written with `messages.encode_request` and answered in order by the broker; each waits on
its own future, keyed by correlation id, so the heartbeat task and a long-polling ShareFetch share one
connection without blocking each other's writes. Extension keys (``logwright.compat.wire.extension_body``)
carry a msgpack map after a v1 request header and answer with one after a v0 response header.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import struct
from typing import Any

import msgpack
from logwright.compat.wire.messages import decode_response, encode_request

_SIZE = struct.Struct(">i")
_HEADER = struct.Struct(">hhih")


class ClientError(Exception):
    """Base of the bundled client's errors."""


class BrokerError(ClientError):
    """The broker answered with a Kafka error code; ``code`` and the broker's message are kept."""

    def __init__(self, code: int, message: str | None, what: str) -> None:
        super().__init__(f"{what}: error {code}: {message or 'no message'}")
        self.code = code
        self.broker_message = message


class ConnectionClosed(ClientError):
    """The connection to the broker is gone; requests in flight fail with this."""


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str) -> None:
        self._reader = reader
        self._writer = writer
        self.client_id = client_id
        self._correlation = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.Future[bytes], int, int]] = {}
        self._closed: BaseException | None = None
        self._read_task = asyncio.get_running_loop().create_task(self._read_forever(), name="logwright-client-read")

    @classmethod
    async def open(cls, bootstrap: str, client_id: str, timeout_s: float = 30.0,
                   tls: ssl.SSLContext | None = None) -> Connection:
        """A connection to ``bootstrap``; ``tls`` for the broker's SSL listener (a context that trusts the broker's
        CA, with a client certificate loaded if the broker asks for one: its subject is then the principal)."""
        host, _, port = bootstrap.rpartition(":")
        async with asyncio.timeout(timeout_s):  # not wait_for, which can swallow a cancellation on Python 3.11
            reader, writer = await asyncio.open_connection(host or "127.0.0.1", int(port), ssl=tls)
        return cls(reader, writer, client_id)

    async def request(self, request: Any, timeout_s: float = 60.0) -> Any:
        """Send a kio request and return the decoded kio response."""
        cls = type(request)
        correlation_id = next(self._correlation)
        payload = await self._exchange(correlation_id, encode_request(request, correlation_id, self.client_id),
                                       cls.__api_key__, cls.__version__, timeout_s)
        _, response = decode_response(cls.__api_key__, cls.__version__, payload)
        return response

    async def extension(self, api_key: int, body: dict[str, Any], what: str, timeout_s: float = 60.0) -> dict[str, Any]:
        """Send a logwright extension request; raise `BrokerError` unless it answers ``error_code`` 0."""
        correlation_id = next(self._correlation)
        name = self.client_id.encode()
        frame = (_HEADER.pack(api_key, 0, correlation_id, len(name)) + name
                 + msgpack.packb(body, use_bin_type=True))
        payload = await self._exchange(correlation_id, frame, api_key, 0, timeout_s)
        answer = msgpack.unpackb(payload[4:], raw=False)
        if not isinstance(answer, dict):
            raise ClientError(f"{what}: the broker answered {answer!r}, not a map")
        if answer.get("error_code", 0):
            raise BrokerError(int(answer["error_code"]), answer.get("error_message"), what)
        return answer

    async def raw(self, api_key: int, body: bytes, timeout_s: float = 60.0, version: int = 0) -> bytes:
        """An extension request with a hand-made body (LogwrightAdvanceClock); the answer's body."""
        correlation_id = next(self._correlation)
        name = self.client_id.encode()
        frame = _HEADER.pack(api_key, version, correlation_id, len(name)) + name + body
        return (await self._exchange(correlation_id, frame, api_key, version, timeout_s))[4:]

    async def _exchange(self, correlation_id: int, frame: bytes, api_key: int, version: int,
                        timeout_s: float) -> bytes:
        if self._closed is not None:
            raise ConnectionClosed(f"the connection is closed: {self._closed}")
        future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = (future, api_key, version)
        self._writer.write(_SIZE.pack(len(frame)) + frame)
        try:
            await self._writer.drain()
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancellation that arrives
            # as the answer does, and a cancelled heartbeat task would then never end.
            async with asyncio.timeout(timeout_s):
                return await future
        finally:
            self._pending.pop(correlation_id, None)

    async def _read_forever(self) -> None:
        try:
            while True:
                size = _SIZE.unpack(await self._reader.readexactly(_SIZE.size))[0]
                payload = await self._reader.readexactly(size)
                (correlation_id,) = _SIZE.unpack_from(payload, 0)
                pending = self._pending.get(correlation_id)
                if pending is not None and not pending[0].done():
                    pending[0].set_result(payload)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as error:
            self._fail(error)
        except asyncio.CancelledError:
            self._fail(ConnectionClosed("closed by the client"))
            raise

    def _fail(self, error: BaseException) -> None:
        self._closed = error
        for future, _, _ in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed(f"the connection to the broker was lost: {error}"))

    async def close(self) -> None:
        self._read_task.cancel()
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (ConnectionError, OSError):
            pass
