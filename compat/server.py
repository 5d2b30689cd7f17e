"""The asyncio server: the only socket code. It moves frames between sockets and handlers.

Each connection reads frames through the sans-I/O `FrameDecoder` (every connection's reads go into one buffer the
server shares: a frame is copied out of it, or read into a buffer of its own), runs one task per request (the hot
handlers start in the read's own turn: `start_at_once`) and writes responses strictly in request order (Kafka clients
pipeline): each task, when it ends, hands the transport the answers ready at the head of its connection's line (no
sender task, no queue). What a client may make the broker hold is bounded (`connection_limits`): Kafka handles one
request per connection and stops reading until its answer is sent; logwright handles up to
``logwright.max.in.flight.requests.per.connection`` at once, together at most ``socket.request.max.bytes`` and one
Fetch among them (a heartbeat must not wait behind a long-polling ShareFetch of the bundled client), and stops
reading once a request it cannot start yet (that many in flight, or ``queued.max.requests`` /
``queued.max.request.bytes`` in flight across all connections) has more behind it, or while more than 4 MiB of its
answers are unsent (the peer does not read them). Connections over ``max.connections`` or ``max.connections.per.ip``
are closed right after accept; one idle for ``connections.max.idle.ms`` on the broker clock is closed (one whose
peer stopped reading is dropped with its unsent answers); past the partial-frame budget, the connection holding the
largest partial frame is closed.

A handler that raises is logged with its traceback and its request answered with an error where the
response can carry one, as Kafka's ``getErrorResponse`` does; a request that cannot be answered (an
unreadable frame, a response type without an error code, an extension key without an error answer)
closes that connection only, after the answers to the requests before it. The broker and every other
connection carry on.

Answers leave without being copied whole: asyncio's socket transport (Python 3.11) copies whatever its first
``send`` does not take into one bytearray, which for a 50 MB Fetch answer was most of the broker's CPU. A
connection keeps its unsent answers as the handler's own bytes and hands the transport slices of at most
256 KiB only while the transport holds nothing unsent (its write-buffer limits are 0, so
``pause_writing`` means "something is left" and ``resume_writing`` "all of it went"): each slice is sent
straight from the answer, and at most one slice's remainder is ever copied. A Fetch's run of batches read back
from a batch file (`FileRange`) is not bytes at all: the kernel copies it from the page cache to the socket
(sendfile), and what the socket does not take at once goes by sendfile as it drains (`answer_sending.FileSend`);
on the SSL listener (`compat.tls`) the run is read and written through the TLS transport like any other bytes.
Public asyncio API (the socket from ``get_extra_info``, written while the transport holds nothing) but for
`FileSend`'s writer on that socket, registered through the loop's internal ``_add_writer``.

A `Connection` is split by what it does: here it reads frames and keeps the line of answers owed, in request
order; its mixins `request_dispatch` (a frame's handler found and started) and `answer_sending` (the answers
written, sliced or by sendfile) do the rest.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import socket
from collections.abc import Callable
from typing import Any

from logwright.compat.answer_sending import AnswerSending, FileSend
from logwright.compat.authentication import (
    PLAINTEXT,
    SASL_PLAINTEXT,
    SASL_SSL,
    SSL,
    ConnectionAuthentication,
    Listener,
    SaslSettings,
)
from logwright.compat.broker import Broker
from logwright.compat.connection_limits import ConnectionQuotas, StartupLimits
from logwright.compat.handlers import load_handlers
from logwright.compat.jwks_endpoint import JwksEndpoint
from logwright.compat.request_dispatch import RequestDispatch, Unanswerable
from logwright.compat.tls import TlsSettings, client_principal
from logwright.compat.wire import record_walk
from logwright.compat.wire.framing import READ_BUFFER_BYTES, FrameDecoder, FrameTooLarge, InvalidFrame
from logwright.core.security.oauthbearer import AcceptedToken, UnsecuredValidatorOptions, validate_unsecured
from logwright.core.security.oauthbearer_jwt import MissingKey, validate_signed
from logwright.core.security.scram_credentials import UserCredentials
from logwright.core.security.scram_exchange import ScramSecret
from logwright.eventstore.file_ranges import FileRange

log = logging.getLogger(__name__)

OPTIONAL_LISTENERS = ((SASL_PLAINTEXT, "sasl"), (SSL, "ssl"), (SASL_SSL, "sasl_ssl"))
"""The listeners served besides PLAINTEXT when `BrokerSettings` gives them an address, and their settings' prefix."""

_FETCH_KEY = (1).to_bytes(2, "big")
_connection_ids = itertools.count(1)


class KafkaServer:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.handlers = load_handlers()
        self.quotas = ConnectionQuotas(broker.broker_config, StartupLimits.read(broker.broker_config))
        self._server: asyncio.base_events.Server | None = None
        self._servers: dict[str, asyncio.base_events.Server] = {}
        """The optional listeners' servers, by listener name."""
        self.sasl = SaslSettings.read(broker.broker_config)
        self.tls = TlsSettings.read(broker.broker_config) if broker.settings.tls else None
        self.jwks: dict[tuple[str, int, int, int], JwksEndpoint] = {}
        """The signed OAUTHBEARER validators' key sources (`compat.jwks_endpoint`), where listeners ask for them."""
        for signed in self.sasl.signed_oauthbearer.values():
            if signed.endpoint not in self.jwks:
                self.jwks[signed.endpoint] = JwksEndpoint(*signed.endpoint, broker.clock.now_ms)
        self._jwks_refreshers: list[asyncio.Task[None]] = []
        settings = broker.settings
        self.listener = Listener(PLAINTEXT, settings.host, settings.port, settings.public_host, settings.public_port)
        self.listeners: dict[str, Listener] = {}
        """The optional listeners served (SASL_PLAINTEXT, SSL, SASL_SSL), by name."""
        self.connections: set[Connection] = set()
        broker.connections = self.connections
        self.throttled: set[Connection] = set()
        """Connections over their address's connection creation quota, held until their throttle has passed."""
        self.connections_by_id: dict[int, Connection] = {}
        broker.client_quotas.mute = self._mute
        self._waiting_for_slot: collections.OrderedDict[Connection, None] = collections.OrderedDict()
        """Connections with requests read but not started because ``queued.max.requests`` are in flight, in turn."""
        self._start_scheduled = False
        """Slots were freed and `_start_waiting` will hand them to the line in the next turn."""
        self._idle_reaper: asyncio.Task[None] | None = None
        self.read_buffer = memoryview(bytearray(READ_BUFFER_BYTES))
        """Where every connection's reads go, one at a time (`FrameDecoder`): memory does not grow with connections."""

    async def start(self) -> None:
        settings = self.broker.settings
        self._server, settings.port = await self._listen(PLAINTEXT, settings.host, settings.port)
        self.listener = Listener(PLAINTEXT, settings.host, settings.port, settings.public_host, settings.public_port)
        await self._server.start_serving()  # once its listener knows its port: a client is told where it is
        for name, prefix in OPTIONAL_LISTENERS:
            await self._start_optional(name, prefix)
        loop = asyncio.get_running_loop()
        self._idle_reaper = loop.create_task(self._close_idle_connections(), name="idle connections")
        self._jwks_refreshers = [loop.create_task(jwks.run(self.broker.sleep_until), name=f"JWKS {jwks.url}")
                                 for jwks in self.jwks.values()]
        log.info("listening on %s:%d (advertised %s:%d)", settings.host, settings.port,
                 settings.public_host, settings.public_port)
        if not record_walk.NATIVE:  # the install found no C compiler: correct, but produce costs more CPU
            log.warning("compat/wire/_record_walk.c was not built at install: produced records are walked in "
                        "Python (20-30x the CPU of the C walk); install a C compiler and reinstall")

    async def _start_optional(self, name: str, prefix: str) -> None:
        """Serve the listener ``name`` if the settings give it an address (``<prefix>_host`` and the rest: see
        `BrokerSettings`), its port written back once known."""
        settings = self.broker.settings
        host: str | None = getattr(settings, f"{prefix}_host")
        if host is None:
            return
        server, port = await self._listen(name, host, getattr(settings, f"{prefix}_port"))
        setattr(settings, f"{prefix}_port", port)
        self._servers[name] = server
        self.listeners[name] = Listener(name, host, port, getattr(settings, f"{prefix}_advertised_host") or host,
                                        getattr(settings, f"{prefix}_advertised_port") or port)
        await server.start_serving()
        offers = (f"client certificates: {self.tls.client_auth}" if name == SSL and self.tls is not None
                  else ", ".join(self.sasl.enabled))
        log.info("listening on %s:%d for %s (%s)", host, port, name, offers)

    async def _listen(self, name: str, host: str, port: int) -> tuple[asyncio.base_events.Server, int]:
        """One listener's server, not yet serving, and the port it got."""
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: Connection(self, name), host, port, reuse_address=True,
                                          start_serving=False)  # TLS starts after the connection limits: _start_tls
        sockets: tuple[Any, ...] = tuple(server.sockets or ())
        receive_buffer = self.quotas.limits.receive_buffer_bytes
        if receive_buffer != -1:  # before the first accept: a connection inherits it, and its window scale with it
            for listening in sockets:
                listening.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        return server, (sockets[0].getsockname()[1] if sockets and port == 0 else port)

    def authentication(self, connection: Connection, listener_name: str) -> ConnectionAuthentication:
        """A new connection's SASL state on its listener."""
        listener = self.listeners.get(listener_name, self.listener)
        plain_users = self.sasl.ssl_plain_users if listener_name == SASL_SSL else self.sasl.plain_users
        return ConnectionAuthentication(listener, self.sasl.enabled, plain_users, self._scram_secret,
                                        connection.close_for, self.sasl.reauthentication_ms,
                                        self.broker.clock.now_ms, self._oauthbearer_validator(listener_name))

    def _oauthbearer_validator(self, listener_name: str) -> Callable[[str], AcceptedToken]:
        """How a listener checks OAUTHBEARER tokens: signed ones against the JWKS, or Kafka's unsecured validator."""
        now_ms = self.broker.clock.now_ms
        if (signed_settings := self.sasl.signed_oauthbearer.get(listener_name)) is not None:
            settings, jwks = signed_settings.jwt, self.jwks[signed_settings.endpoint]

            def signed(token: str) -> AcceptedToken:
                try:
                    return validate_signed(token, jwks.keys(), settings, now_ms())
                except MissingKey as missing:
                    jwks.missing(missing.key_id)
                    raise

            return signed
        options = self.sasl.oauthbearer.get(listener_name, UnsecuredValidatorOptions())
        return lambda token: validate_unsecured(token, options, now_ms())

    def _scram_secret(self, name: str, token: bool, mechanism: int) -> ScramSecret | None:
        """What a SCRAM client naming ``name`` is checked against: a user's stored credential, or (``tokenauth``) a
        delegation token's."""
        if token:
            return self.broker.delegation_tokens.scram_secret(name, mechanism)
        held = self.broker.store.state("scram_credentials", name)
        credential = held.of(mechanism) if isinstance(held, UserCredentials) else None
        if credential is None:
            return None
        return ScramSecret(credential.salt, credential.stored_key, credential.server_key, credential.iterations, name)

    async def stop(self) -> None:
        """Stop accepting, end every open connection, then wait for the listener to close.

        Connections are ended first: from Python 3.12 on, ``wait_closed`` waits for them.
        """
        for task in (self._idle_reaper, *self._jwks_refreshers):
            if task is not None:
                task.cancel()
        servers = [server for server in (self._server, *self._servers.values()) if server is not None]
        for server in servers:
            server.close()
        for connection in [*self.connections, *self.throttled]:
            connection.abort()
        for server in servers:
            await server.wait_closed()

    def wait_for_slot(self, connection: Connection) -> None:
        self._waiting_for_slot[connection] = None

    def may_start_request(self, size: int) -> bool:
        """Whether a request may take a slot now: not while slots freed in this turn wait for the line."""
        return not self._start_scheduled and self.quotas.may_start_request(size)

    def requests_finished(self, count: int) -> None:
        """Requests were answered: the connections waiting for a slot take the freed ones in the next turn, first
        come first, and nobody else takes them meanwhile (`may_start_request`).

        The next turn, not now: the answers of one commit leave in one stretch of done callbacks, and starting a
        waiting connection's request between two of them (its decoding, its task) spread them out. With 1,000 groups
        committing over 500 slots, the client then slept between answers and each send paid a wake-up across CPUs:
        deferred, 5,300-5,650 -> 6,200-7,150 commits/s, p99 245 -> 213 ms (6 and 6 runs, alternated).
        """
        self.quotas.requests_in_flight -= count
        if self._waiting_for_slot and not self._start_scheduled:
            self._start_scheduled = True
            asyncio.get_running_loop().call_soon(self._start_waiting)

    def _start_waiting(self) -> None:
        """Only as many are asked as take the freed slots (one still held goes to the back of the line); the rest
        are not touched. Rebuilding the whole line after every answer was a fifth of the broker's time with 1,000
        committing groups over 500 slots."""
        self._start_scheduled = False
        waiting = self._waiting_for_slot
        for _ in range(len(waiting)):  # each at most once: one held by bytes puts itself back at the end
            if not waiting or self.quotas.request_slots_full():
                return
            connection, _ = waiting.popitem(last=False)
            connection.start_requests()

    def _mute(self, connection_id: int, until_ms: int) -> None:
        connection = self.connections_by_id.get(connection_id)
        if connection is not None:
            connection.mute_until(until_ms)

    def forget(self, connection: Connection) -> None:
        self.connections.discard(connection)
        self.connections_by_id.pop(connection.connection_id, None)
        self._waiting_for_slot.pop(connection, None)
        self.broker.connection_closed(connection.connection_id)

    def partial_frames_grew(self) -> None:
        """Past the partial-frame budget, close the connection holding the largest partial frame."""
        while self.quotas.over_partial_frame_budget() and self.connections:
            largest = max(self.connections, key=lambda connection: connection.partial_frame_bytes)
            if not largest.partial_frame_bytes:
                return
            largest.close_for(f"its {largest.partial_frame_bytes}-byte partial frame would take the partial "
                              f"frames of all connections to {self.quotas.partial_frame_bytes} bytes, over "
                              f"logwright.socket.partial.frame.budget.bytes={self.quotas.limits.partial_frame_budget}")

    async def _close_idle_connections(self) -> None:
        """Close connections idle for ``connections.max.idle.ms``, waking when the first may be (broker clock)."""
        while True:
            try:
                await self.broker.sleep_until(self._close_idle_now())
            except Exception:  # a failing check must not end idle closing for good
                log.exception("the idle-connection check failed; retrying")
                await asyncio.sleep(1.0)

    def _close_idle_now(self) -> int:
        """Close the connections idle for long enough; when the next one may be (ms on the broker clock)."""
        idle_ms = self.quotas.limits.idle_ms
        now = self.broker.clock.now_ms()
        next_check = now + idle_ms
        for connection in list(self.connections):
            unsent = connection.unsent_bytes  # its peer reading none of them for that long is idle too
            if (connection.busy and not unsent) or not (connection.reading or unsent):
                continue
            if now - connection.last_active_ms >= idle_ms:
                connection.close_idle(f"idle for {now - connection.last_active_ms} ms, "
                                      f"connections.max.idle.ms={idle_ms}")
            else:
                next_check = min(next_check, connection.last_active_ms + idle_ms)
        return next_check


class Connection(RequestDispatch, AnswerSending, asyncio.BufferedProtocol):
    """One client: the socket reads into the `FrameDecoder`'s buffers, answers leave in request order.

    A protocol rather than asyncio streams: a StreamReader copies every read into its buffer and out
    again and pauses the socket each time 128 KiB wait there, which with 1 MiB Produce requests was
    about a tenth of the broker's time. A buffered one, so that a large request is read straight into
    one buffer of its own instead of joined from 256 KiB reads.

    Frames a read completes beyond what may start now wait in ``_unstarted`` and start as earlier answers are
    written. Reading goes on while one request waits (a client that sends one request and waits for its answer,
    as a committing consumer does, is never paused and resumed: two epoll changes per request were a sixth of
    the broker's time with 1,000 of them); it pauses once a second one, or part of one, arrives behind it, so
    what waits is at most that request and one read's worth behind it.
    """

    def __init__(self, server: KafkaServer, listener_name: str = PLAINTEXT) -> None:
        self.server = server
        self.broker = server.broker
        self.connection_id = next(_connection_ids)
        self.authentication = server.authentication(self, listener_name)
        self.encrypted = self.authentication.listener.encrypted
        self.client_host = "?"
        self.transport: asyncio.Transport | None = None
        self.decoder = FrameDecoder(server.quotas.limits.max_request_bytes, server.read_buffer)
        if not self.authentication.authenticated:  # as Kafka reads a SASL connection until it has authenticated
            self._bound_frames()
            self.authentication.on_authenticated = self._lift_frame_bound
            self.authentication.on_reauthenticating = self._bound_frames
        self._answers: collections.deque[asyncio.Future[list[bytes] | None]] = collections.deque()
        """The answers owed, in request order: each a running handler's task (or a ready answer)."""
        self.last_active_ms = self.broker.clock.now_ms()
        self.partial_frame_bytes = 0
        """What this connection's decoder holds, as counted in the server's partial-frame total."""
        self._admitted = False
        self._reading = True
        self._in_flight = 0
        """Requests started and not yet answered (their answer not yet handed to the transport)."""
        self._in_flight_sizes: collections.deque[tuple[int, bool]] = collections.deque()
        self._in_flight_bytes = 0
        """Their frames' sizes and whether each is a Fetch, oldest first (answers leave in that order), and
        the sum: together they may hold ``socket.request.max.bytes`` (one larger request alone), as Kafka
        holds one request at a time."""
        self._fetches_in_flight = 0
        """At most one Fetch runs per connection, so its answers hold one ``fetch.max.bytes`` at a time; Kafka's
        clients send one Fetch per broker at a time anyway (ShareFetch is left free: the bundled client's
        consumers long-poll side by side on one connection)."""
        self._decoding = False
        """A large request is being decoded in steps: nothing after it starts until it is read (or refused)."""
        self._answered_in_read = False
        """A request the read started was answered in its first step (`RequestDispatch._start`), and no one was told:
        `start_requests` sends it before it returns."""
        self._unstarted: collections.deque[bytes | bytearray] = collections.deque()
        self._writable = True
        """While at most `UNSENT_HIGH` bytes of answers are unsent (down to `UNSENT_LOW` once over it)."""
        self._outbound: collections.deque[bytes | memoryview | FileRange] = collections.deque()
        """Answers' pieces not yet handed to the transport, in order (views of the handlers' bytes)."""
        self._outbound_bytes = 0
        self._transport_holds = False
        """The transport has bytes it could not send yet (between its ``pause_writing`` and ``resume_writing``)."""
        self._sending_file: FileSend | None = None
        """The rest of a `FileRange` the socket did not take at once, being sent (`answer_sending.FileSend`)."""
        self._pump_scheduled = False
        self._flushing = False
        self._closing = False
        """No more requests start: the connection closes once the answers owed are sent."""
        self._finished = False
        self._loop = asyncio.get_running_loop()
        self._muted_until: int | None = None
        """A client quota throttles this connection (`mute_until`): nothing is read or started until then."""
        self._unmuting: asyncio.Task[None] | None = None
        self._handshake: asyncio.Task[None] | None = None
        """An SSL or SASL_SSL connection's TLS handshake while it runs (`_start_tls`)."""

    def _bound_frames(self) -> None:
        self.decoder.limit(min(self.server.sasl.max_receive_size, self.server.quotas.limits.max_request_bytes))

    def _lift_frame_bound(self) -> None:
        self.decoder.limit(self.server.quotas.limits.max_request_bytes)

    @property
    def reading(self) -> bool:
        """Still taking requests (not yet closing)."""
        return self._reading

    @property
    def busy(self) -> bool:
        """Requests are being handled or wait to be: not idle, whatever the clock says."""
        return bool(self._in_flight or self._unstarted)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.client_host = str(peer[0]) if peer else "?"
        throttle_ms = self.broker.client_quotas.connection_throttle_ms(self.client_host)
        if throttle_ms > 0:  # over its address's connection_creation_rate: held unserved, then closed, as Kafka
            log.info("connection %d from %s over its connection creation quota: closed in %d ms", self.connection_id,
                     self.client_host, throttle_ms)
            self._reading = False
            transport.pause_reading()
            self.server.throttled.add(self)
            # held as a muted connection's wait is: a close of the connection (shutdown, the peer) cancels it
            self._unmuting = self._loop.create_task(self._close_throttled(throttle_ms))
            return
        refusal = self.server.quotas.refusal(self.client_host)
        if refusal is not None:
            log.warning("closing connection %d from %s at accept: %s", self.connection_id, self.client_host, refusal)
            self._reading = False
            transport.abort()
            return
        self._admitted = True
        self._configure_socket(transport)
        self.server.connections.add(self)
        self.server.connections_by_id[self.connection_id] = self
        if self.encrypted:  # counted against the connection limits before its handshake, as Kafka's acceptor counts
            self._handshake = self._loop.create_task(self._start_tls(transport),
                                                     name=f"TLS handshake {self.connection_id}")
            return
        transport.set_write_buffer_limits(high=0, low=0)  # pause_writing: bytes left; resume_writing: none

    async def _start_tls(self, transport: asyncio.Transport) -> None:
        """The TLS handshake of an SSL or SASL_SSL connection, then its requests over the TLS transport.

        The task is created in ``connection_made``, so its first step, which hands the socket to asyncio's TLS
        protocol, runs before anything the client sent can be read (the reader is added in the same turn as
        ``connection_made``, and what a poll finds is run after the steps already queued). A handshake that fails or
        times out (60 s, asyncio's default) closes the connection; its slot is freed as any connection's."""
        tls = self.server.tls
        assert tls is not None
        try:
            encrypted = await self._loop.start_tls(transport, self, tls.context, server_side=True)
        except OSError as error:  # a failed handshake (SSLError), a reset, asyncio's handshake timeout
            log.info("connection %d from %s: no TLS session: %s", self.connection_id, self.client_host,
                     error or type(error).__name__)
            self._finish()
            return
        finally:
            self._handshake = None
        if self._finished or encrypted is None or encrypted.is_closing():
            if encrypted is not None:
                encrypted.abort()
            return
        if not self.authentication.listener.sasl:  # an SSL client is its certificate's subject (or ANONYMOUS)
            try:
                principal = client_principal(encrypted.get_extra_info("ssl_object"), tls.principal_rules)
            except ValueError:  # "handshake not done yet": a bad record right after the handshake ended the session
                log.info("connection %d from %s: the TLS session ended before its first request", self.connection_id,
                         self.client_host)
                encrypted.abort()
                return
            if principal is None:  # as Kafka fails to build its principal: the connection closes
                log.info("connection %d from %s: no ssl.principal.mapping.rules rule applies to its certificate",
                         self.connection_id, self.client_host)
                encrypted.abort()
                return
            self.authentication.principal = principal
        self.transport = encrypted
        # asyncio's TLS transport pauses writing at a size >= its high mark where the socket transport pauses above
        # it: 1 here, or it pauses with nothing left and never resumes
        encrypted.set_write_buffer_limits(high=1, low=0)
        self.start_requests()  # those read with the handshake's end, before this step: see `_start_unstarted`

    async def _close_throttled(self, throttle_ms: int) -> None:
        try:
            await self.broker.sleep(throttle_ms)
        finally:
            self.server.throttled.discard(self)
            if self.transport is not None:
                self.transport.abort()

    def _configure_socket(self, transport: asyncio.Transport) -> None:
        """What Kafka's acceptor sets on a connection (asyncio has set TCP_NODELAY): keep-alive, and SO_SNDBUF
        from ``socket.send.buffer.bytes`` unless -1. Kafka's 100 KiB default matters to the CPU a consumer costs:
        autotuned on loopback, the buffer grew to megabytes and the broker's kernel time per GB sent was 2-3x
        (bench/results/session48.md). A connection already reset keeps its defaults; its reads will end it."""
        connected = transport.get_extra_info("socket")
        if connected is None:
            return
        try:
            connected.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            send_buffer = self.server.quotas.limits.send_buffer_bytes
            if send_buffer != -1:
                connected.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, send_buffer)
        except OSError as error:
            log.debug("connection %d from %s: socket options not set: %s", self.connection_id, self.client_host,
                      error)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.decoder.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if not self._reading:
            return
        self.last_active_ms = self.broker.clock.now_ms()
        try:
            frames = self.decoder.buffer_updated(nbytes)
        except (FrameTooLarge, InvalidFrame) as error:
            log.warning("closing connection %d from %s: %s", self.connection_id, self.client_host, error)
            self._stop_reading()
            return
        self._unstarted.extend(frames)
        grew = self._count_partial_frame()
        self.start_requests(just_read=True)
        if grew:
            self.server.partial_frames_grew()

    def _count_partial_frame(self) -> bool:
        """Bring the server's partial-frame total up to date with this decoder; ``True`` if it grew."""
        held = self.decoder.held if self._reading else 0
        delta = held - self.partial_frame_bytes
        self.partial_frame_bytes = held
        self.server.quotas.partial_frame_bytes += delta
        return delta > 0

    def start_requests(self, just_read: bool = False) -> None:
        """Start the requests read so far as far as the limits allow, then read on only if nothing waits.

        ``just_read``: called by the read itself, so handlers that may (`HandlerEntry.at_once`) run their first
        step now (`start_at_once`). Requests started as answers leave (a freed slot, this connection's last answer)
        start in the next turn: with 1,000 groups committing over 500 slots, running the next commit's first step
        between two answers spread the answers out, the client slept between them, and each send paid a wake-up
        across CPUs (5,700 -> 4,500 commits/s); started from the read only, 5,500-5,900 -> 5,700-6,400.

        An answer a first step finished (ApiVersions, a Heartbeat, a refusal) is sent here, not by a done callback a
        turn later: that turn came after what was queued already, and a ping's answer waited behind the commit of a
        producer's 500 KB batch read just before it (0.6-0.8 ms on this machine).
        """
        self._start_unstarted(just_read)
        if self._answered_in_read:
            self._answered_in_read = False
            if not self._flushing:
                self._send_ready_answers()  # reads on, or not, as it ends
                return
            self._loop.call_soon(self._send_ready_answers)  # never from within it today; were it, as a callback
        self._read_only_when_idle()

    def _start_unstarted(self, just_read: bool) -> None:
        """Nothing starts while the TLS handshake's task has not taken its end in (`_start_tls`): asyncio hands over
        what the client sent with its last handshake message at once, before that task's next step sets the
        certificate's principal and the TLS transport, and a request started then ran as ANONYMOUS and could be
        answered in plain bytes on the TLS connection (the client read WRONG_VERSION_NUMBER)."""
        quotas = self.server.quotas
        try:
            while (self._unstarted and self._reading and self._writable and not self._decoding
                   and self._muted_until is None and self._handshake is None):
                frame = self._unstarted[0]
                size, fetch = len(frame), frame[:2] == _FETCH_KEY
                if self._in_flight >= quotas.limits.in_flight_per_connection or (
                        self._in_flight and self._in_flight_bytes + size > quotas.limits.max_request_bytes) or (
                        fetch and self._fetches_in_flight):
                    break
                if not self.server.may_start_request(size):
                    self.server.wait_for_slot(self)
                    break
                if not self._dispatch(self._unstarted.popleft(), just_read):
                    self._stop_reading()
                    return
                self._in_flight_sizes.append((size, fetch))
                self._in_flight_bytes += size
                self._fetches_in_flight += fetch
                quotas.request_bytes_in_flight += size
        except Exception:
            log.exception("closing connection %d from %s: a request could not be dispatched",
                          self.connection_id, self.client_host)
            self._stop_reading()

    def _read_only_when_idle(self) -> None:
        """Read on unless answers are unsent or a request waits with another (or part of one) behind it, and never
        while the rest of a batch file is sent (`FileSend`): its writer is then the socket's only callback (with
        asyncio's own sendfile, used before, a reset read meanwhile made the transport set an exception on a future
        already done: InvalidStateError, logged as an error; the hostile-values fuzz found it once sends got
        partial at Kafka's 100 KiB send buffer)."""
        transport = self.transport
        if transport is None or transport.is_closing() or not self._reading or self._handshake is not None:
            return  # during the handshake the socket's transport is asyncio's TLS protocol's to pause, not this one's
        held_back = len(self._unstarted) + (self._in_flight >= self.server.quotas.limits.in_flight_per_connection)
        hold = (not self._writable or held_back > 1 or bool(held_back and self.decoder.held)
                or self._sending_file is not None or self._muted_until is not None)
        if hold and transport.is_reading():
            transport.pause_reading()
        elif not hold and not transport.is_reading():
            transport.resume_reading()

    def mute_until(self, until_ms: int) -> None:
        """Kafka's throttle of a client over its quota (KIP-219): the answers owed still go, but nothing more is read
        or started until ``until_ms`` on the broker clock, as Kafka's socket server mutes the channel."""
        if self._muted_until is not None and until_ms <= self._muted_until:
            return
        self._muted_until = until_ms
        if self._unmuting is None:
            self._unmuting = self._loop.create_task(self._unmute(), name=f"throttled connection {self.connection_id}")
        self._read_only_when_idle()

    async def _unmute(self) -> None:
        while self._muted_until is not None and self._reading:
            until = self._muted_until
            await self.broker.sleep_until(until)
            if self._muted_until == until:
                break
        self._muted_until = None
        self._unmuting = None
        self.last_active_ms = self.broker.clock.now_ms()
        self.start_requests()

    def eof_received(self) -> bool:
        self._stop_reading()
        # the transport stays open until the answers already owed are sent; TLS has no half-close (asyncio ends the
        # session at the peer's close_notify whatever this says)
        return not self.encrypted

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_reading()
        self._drop_unsent()
        self._finish_when_answered()

    def close_idle(self, reason: str) -> None:
        """Close a connection idle for ``reason``; one whose peer stopped reading its answers is dropped with them
        (a graceful close would wait for the peer forever, holding them)."""
        log.info("closing connection %d from %s: %s", self.connection_id, self.client_host, reason)
        if self.unsent_bytes and self.transport is not None:
            self._stop_reading()
            self._drop_unsent()
            self.transport.abort()
        else:
            self._stop_reading()

    def _stop_reading(self) -> None:
        """Read no more requests; those already started are answered, then the connection closes."""
        if self._unmuting is not None:
            self._unmuting.cancel()
            self._unmuting = None
        if self._reading:
            self._reading = False
            self._closing = True
            self._unstarted.clear()
            self._count_partial_frame()
            self.decoder = FrameDecoder(0, self.server.read_buffer)
            if self.transport is not None and not self.transport.is_closing():
                self.transport.pause_reading()
            self._finish_when_answered()

    def close_for(self, reason: str, level: int = logging.WARNING) -> None:
        """Stop reading for ``reason``, then close once the answers already owed are written."""
        log.log(level, "closing connection %d from %s: %s", self.connection_id, self.client_host, reason)
        self._stop_reading()

    def abort(self) -> None:
        """End the connection now, dropping the answers not yet sent (shutdown).

        A long-polling Fetch (or a JoinGroup waiting for its rebalance) would otherwise hold up the
        shutdown until the client's max wait ends.
        """
        self._finish()

    def _started(self, answer: asyncio.Future[list[bytes] | None], notifies: bool = False) -> None:
        self._in_flight += 1
        self.server.quotas.requests_in_flight += 1
        self._answers.append(answer)
        if not notifies:
            answer.add_done_callback(self._answer_ready)

    def _answered(self, count: int = 1) -> None:
        """``count`` requests were answered (or dropped with the connection): their slots are free."""
        if count:
            self._in_flight -= count
            freed = 0
            for _ in range(count):
                size, fetch = self._in_flight_sizes.popleft()
                freed += size
                self._fetches_in_flight -= fetch
            self._in_flight_bytes -= freed
            self.server.quotas.request_bytes_in_flight -= freed
            self.server.requests_finished(count)

    def _answer_ready(self, _: asyncio.Future[list[bytes] | None]) -> None:
        self._send_ready_answers()

    def _send_ready_answers(self) -> None:
        """Queue the answers ready at the head of the line, in request order, while the peer keeps reading them;
        then start the requests that waited for their slots. A request that cannot be answered closes the
        connection (the requests after it are dropped).

        No task and no queue of its own: a handler's task calls this when it ends. With 1,000 committing groups,
        a sender task per connection woken through a queue for every answer was a tenth of the broker's time.
        """
        if self._flushing or self._finished:
            return
        self._flushing = True
        try:
            answers, transport = self._answers, self.transport
            while answers and answers[0].done() and self._writable:
                answer = answers.popleft()
                try:
                    payload = answer.result()
                except Unanswerable as error:
                    log.warning("closing connection %d from %s: %s", self.connection_id, self.client_host, error)
                    self._drop_later_answers()
                    break
                except BaseException:  # noqa: BLE001 - a cancelled or failed answer ends this connection only
                    log.exception("closing connection %d from %s: a request could not be answered",
                                  self.connection_id, self.client_host)
                    self._drop_later_answers()
                    break
                if payload is not None and transport is not None and not transport.is_closing():
                    self._queue_answer(payload)
                    self.last_active_ms = self.broker.clock.now_ms()
                self._answered()
        finally:
            self._flushing = False
        if self._closing:
            self._finish_when_answered()
        else:
            self.start_requests()

    def _drop_later_answers(self) -> None:
        """A request cannot be answered: read no more, drop the answers after it, send those before it."""
        self._stop_reading()
        answers = self._answers
        while answers:
            answers.popleft().cancel()

    def _finish_when_answered(self) -> None:
        """Closing: once every answer owed is sent (an idle peer's are dropped by the idle check), close.

        Not while `_send_ready_answers` runs: the answer it queues may be written at once and leave nothing unsent
        before it counts that answer as answered; it asks again at its end."""
        if not self._answers and not self.unsent_bytes and not self._flushing:
            self._finish()

    def _finish(self) -> None:
        """Close the connection and free what it held: its unsent answers, its running requests, its slots."""
        if self._finished:
            return
        self._finished = True
        self._stop_reading()
        self._drop_unsent()
        answers = self._answers
        while answers:
            answers.popleft().cancel()
        self._answered(self._in_flight)
        if self.transport is not None:
            self.transport.close()
        self.server.forget(self)
        if self._admitted:
            self._admitted = False
            self.server.quotas.closed(self.client_host)
