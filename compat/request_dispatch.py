"""Starting a connection's requests: a frame's header read, its handler found, its body decoded (a large one in
steps) and the handler run; a request no handler takes is answered UNSUPPORTED_VERSION or closes the connection.

A mixin of `compat.server.Connection` (the server's socket code, split by what it does: the connection reads and
keeps the line of answers owed, this module starts the handlers, `answer_sending` writes). A handler that raises is
answered with its error where the response can carry one (`compat.server`'s docstring).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from logwright.compat.authentication import ConnectionAuthentication
from logwright.compat.authorization_rules import REFUSAL_ANSWERS, is_super_user, refusal
from logwright.compat.errors import ErrorCode, error_code_for
from logwright.compat.feature_gates import GATED, turned_off
from logwright.compat.feature_gates import refused as refused_by_feature
from logwright.compat.registry import CloseConnection, HandlerEntry, RequestContext
from logwright.compat.start_at_once import start_at_once
from logwright.compat.turns import in_turns
from logwright.compat.wire.fallback import error_response, unsupported_version_response
from logwright.compat.wire.framing import encode_frame
from logwright.compat.wire.messages import (
    KNOWN_VERSIONS,
    PRODUCE_KEY,
    MalformedRequest,
    RequestHeader,
    UnsupportedVersion,
    decode_request,
    decode_request_in_steps,
    encode_response_frame,
    encode_response_frame_in_steps,
    parse_request_header,
    request_type,
)
from logwright.compat.wire.mirrored_errors import mirrored_error_response
from logwright.core.security.sasl_plain import SaslAborted, SaslFailed

if TYPE_CHECKING:
    from logwright.compat.broker import Broker
    from logwright.compat.server import KafkaServer

log = logging.getLogger("logwright.compat.server")  # the server's messages, under the logger they always had

ANSWERED_IN_STEPS_FROM = 64 * 1024
"""A request frame this large is answered in steps (`messages.encode_response_frame_in_steps`), giving way between
them: it may name tens of thousands of entities, each answered with one of its own (a million partitions of an
ElectLeaders, 4 MB, asked for a 41 MB answer that took 470 ms to write in one stretch). Its body is walked in steps
too, in a task (`_decode_then_handle`), but a Produce's (its own reader). Smaller ones are written at once; a
Produce of a 1 MB batch is answered in steps too, 2 us more (its answer never takes a step)."""


class Unanswerable(Exception):
    """A request that failed and has no error answer: its connection closes once the answers before it are out."""


class RequestDispatch:
    """The dispatching part of a connection (`compat.server.Connection` inherits it)."""

    server: KafkaServer
    broker: Broker
    connection_id: int
    client_host: str
    authentication: ConnectionAuthentication
    _loop: asyncio.AbstractEventLoop
    _decoding: bool
    _answered_in_read: bool

    if TYPE_CHECKING:
        def start_requests(self, just_read: bool = False) -> None: ...
        def _stop_reading(self) -> None: ...
        def _started(self, answer: asyncio.Future[list[bytes] | None], notifies: bool = False) -> None: ...
        def _answer_ready(self, _: asyncio.Future[list[bytes] | None]) -> None: ...

    def _dispatch(self, frame: bytes | bytearray, just_read: bool = False) -> bool:
        """Queue the response for one frame; ``False`` when the connection must close. ``just_read``: see
        `start_requests`."""
        authentication = self.authentication
        if authentication.gated and authentication.unframed:
            return self._dispatch_token(authentication, bytes(frame))
        try:
            header = parse_request_header(frame)
        except MalformedRequest as error:
            log.warning("closing connection %d from %s: unreadable request header: %s",
                        self.connection_id, self.client_host, error)
            return False
        refused = authentication.gated and not authentication.allows(header.api_key)
        if refused and not (authentication.answers_refusal and header.api_key in KNOWN_VERSIONS
                            and len(frame) < ANSWERED_IN_STEPS_FROM):
            log.warning("closing connection %d from %s: API key %d %s", self.connection_id, self.client_host,
                        header.api_key, "after its SASL session expired" if authentication.authenticated
                        else "before SASL authentication")
            return False
        entry = self.server.handlers.get(header.api_key)
        if entry is None or not entry.min_version <= header.api_version <= entry.max_version:
            return not refused and self._dispatch_unsupported(header, frame)
        if header.api_key not in KNOWN_VERSIONS:
            # An extension API key (outside Kafka's range): the handler reads and writes its own body.
            context = RequestContext(self.broker, header.api_key, header.api_version, header.correlation_id,
                                     header.client_id, self.connection_id, self.client_host,
                                     authentication=authentication)
            body = bytes(frame[header.header_length:])
            self._start(entry, self._handle_raw(entry, context, body), just_read)
            return True
        large = len(frame) >= ANSWERED_IN_STEPS_FROM
        if large and header.api_key != PRODUCE_KEY:
            try:
                request_type(header.api_key, header.api_version)
            except UnsupportedVersion:
                return self._dispatch_unsupported(header, frame)
            context = RequestContext(self.broker, header.api_key, header.api_version, header.correlation_id,
                                     header.client_id, self.connection_id, self.client_host,
                                     len(frame) - header.header_length, authentication)
            self._decoding = True
            self._start(entry, self._decode_then_handle(entry, context, frame, header), just_read=False)
            return True
        try:
            _, request = decode_request(frame, header)
        except UnsupportedVersion:
            # A version in the handler's range that kio cannot read (ApiVersions never offers one).
            return self._dispatch_unsupported(header, frame)
        except MalformedRequest as error:
            log.warning("closing connection %d from %s: malformed %s v%d request: %s", self.connection_id,
                        self.client_host, entry.name, header.api_version, error)
            return False
        context = RequestContext(self.broker, header.api_key, header.api_version, header.correlation_id,
                                 header.client_id, self.connection_id, self.client_host,
                                 len(frame) - header.header_length, authentication)
        if refused:  # answered, then closed once the answer is out
            self._start(entry, self._refuse_during_authentication(entry, context, request), just_read=False)
            authentication.close(f"{entry.name} during SASL authentication")
            return True
        self._start(entry, self._handle(entry, context, request, large), just_read)
        return True

    def _dispatch_token(self, authentication: ConnectionAuthentication, token: bytes) -> bool:
        """A SASL token sent bare after a SaslHandshake v0 (before KIP-152): answered bare, framed by its size only,
        as Kafka's authenticator answers it (`_bare_answer`)."""
        if authentication.mechanism_changed:  # as a SaslAuthenticate of another mechanism: closed unanswered
            log.warning("closing connection %d from %s: a SASL re-authentication with another mechanism",
                        self.connection_id, self.client_host)
            return False
        self._started(self._loop.create_task(self._bare_answer(authentication, token)))
        return True

    async def _bare_answer(self, authentication: ConnectionAuthentication, token: bytes) -> list[bytes] | None:
        """The mechanism's answer to ``token``, bare (an empty one too: PLAIN's success is four zero bytes). A token
        refused closes the connection unanswered after ``connection.failed.authentication.delay.ms``: a client of
        SaslHandshake v0 has no error to read, and Kafka sends it none."""
        try:
            answer, _ = authentication.authenticate(token)
        except SaslAborted as aborted:
            raise Unanswerable(f"SASL {authentication.mechanism}: {aborted}") from None
        except SaslFailed as failure:
            which = "re-authentication" if authentication.reauthenticating else "authentication"
            await self.broker.sleep(int(self.broker.broker_config("connection.failed.authentication.delay.ms")))
            raise Unanswerable(f"SASL {authentication.mechanism} {which} failed (tokens of SaslHandshake v0)"
                               + (f": {failure.message}" if failure.message else "")) from None
        return [encode_frame(answer)]

    def _start(self, entry: HandlerEntry, answer: Coroutine[Any, Any, list[bytes] | None], just_read: bool) -> None:
        if just_read and entry.at_once:  # `start_at_once` calls `_answer_ready` when the answer is done later
            started = start_at_once(self._loop, answer, self._answer_ready, tell_if_done_now=False)
            self._started(started, notifies=True)
            if started.done():  # answered in its first step: `start_requests` sends it before it returns
                self._answered_in_read = True
        else:
            self._started(self._loop.create_task(answer))

    def _dispatch_unsupported(self, header: RequestHeader, frame: bytes | bytearray) -> bool:
        fallback = unsupported_version_response(header, frame if isinstance(frame, bytes) else bytes(frame))
        if fallback is None:
            log.warning("closing connection %d from %s: unsupported API key %d version %d",
                        self.connection_id, self.client_host, header.api_key, header.api_version)
            return False
        log.info("API key %d version %d is not supported; answered UNSUPPORTED_VERSION",
                 header.api_key, header.api_version)
        self._started(_ready(fallback))
        return True

    async def _handle_raw(self, entry: HandlerEntry, context: RequestContext, body: bytes) -> list[bytes] | None:
        """Extension keys answer with a v0 response header (correlation id) and the bytes the handler wrote."""
        if self.broker.authorizer is not None and not is_super_user(context) and not _extension_allowed(
                entry, context, body):
            # logwright's own keys: with an authorizer, super users, or those the entry's own check allows
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            if entry.error_answer is None:
                raise Unanswerable(f"{entry.name} (key {entry.api_key}) is for super users: {code.name}")
            refused = entry.error_answer(code, f"{entry.name} is for super users when an authorizer is on")
            return [encode_frame(context.correlation_id.to_bytes(4, "big", signed=True) + bytes(refused))]
        try:
            response = await entry.handle(context, body)
            if response is not None and not isinstance(response, bytes | bytearray | memoryview):
                raise TypeError(f"the handler returned {type(response).__name__}, not bytes")
        except Exception as error:
            self._log_failure(entry, context)
            if entry.error_answer is None:
                raise Unanswerable(f"{entry.name} (key {entry.api_key}) failed and has no error answer") from error
            response = entry.error_answer(error_code_for(error), f"{type(error).__name__}: {error}")
        if response is None:
            return None
        return [encode_frame(context.correlation_id.to_bytes(4, "big", signed=True) + bytes(response))]

    async def _decode_then_handle(self, entry: HandlerEntry, context: RequestContext, frame: bytes | bytearray,
                                  header: RequestHeader) -> list[bytes] | None:
        """A large request (`ANSWERED_IN_STEPS_FROM`, not Produce: its own reader) decoded in steps, giving way
        between them, then handled and answered in steps; the requests after it on this connection start once it
        is read. Unreadable, it closes the connection as `_dispatch` does (after the answers before it), and
        nothing after it starts."""
        try:
            request = await in_turns(decode_request_in_steps(frame, header))
        except MalformedRequest as error:
            self._stop_reading()  # as a body refused in the read: nothing more is read
            raise Unanswerable(f"malformed {entry.name} v{header.api_version} request: {error}") from error
        del frame  # the bytes are not kept while the request is handled and answered
        self._decoding = False
        self.start_requests()
        return await self._handle(entry, context, request, in_steps=True)

    async def _handle(self, entry: HandlerEntry, context: RequestContext, request: Any,
                      in_steps: bool = False) -> list[bytes] | None:
        """A handler's response frame in pieces (`framing.frame_pieces`: stored record batches go out
        uncopied), written in steps between which the loop serves others if ``in_steps`` (a large request, see
        `ANSWERED_IN_STEPS_FROM`); if the handler or the encoding fails, the error answer."""
        try:
            if context.api_key in GATED and turned_off(self.broker, context.api_key):  # before authorization
                answer = await refused_by_feature(context, request)
                if answer is not None:
                    return encode_response_frame(context.api_key, context.api_version, context.correlation_id, answer)
                return self._refused(entry, context, request, ErrorCode.UNSUPPORTED_VERSION)
            if self.broker.authorizer is not None:
                code = refusal(context, request)
                if code is not None:
                    return self._refused(entry, context, request, code)
            response = await entry.handle(context, request)
            if response is None:
                return None
            if in_steps:
                return await in_turns(encode_response_frame_in_steps(
                    context.api_key, context.api_version, context.correlation_id, response))
            return encode_response_frame(context.api_key, context.api_version, context.correlation_id, response)
        except CloseConnection as close:
            raise Unanswerable(str(close)) from None
        except Unanswerable:
            raise  # a refusal without an error answer: the connection closes, nothing failed
        except Exception as error:
            self._log_failure(entry, context)
            code = error_code_for(error)
            fallback = error_response(context.api_key, context.api_version, context.correlation_id, code)
            if fallback is None:
                fallback = mirrored_error_response(context.api_key, context.api_version, context.correlation_id,
                                                   request, code)
            if fallback is None:
                raise Unanswerable(f"{entry.name} v{context.api_version} failed and its response "
                                   "has no top-level error code") from error
            return [encode_frame(fallback)]

    async def _refuse_during_authentication(self, entry: HandlerEntry, context: RequestContext,
                                            request: Any) -> list[bytes] | None:
        """A request other than SaslAuthenticate in the middle of a SASL exchange: its error response with
        ILLEGAL_SASL_STATE, as Kafka's authenticator answers it (the connection then closes)."""
        return self._refused(entry, context, request, ErrorCode.ILLEGAL_SASL_STATE)

    @staticmethod
    def _refused(entry: HandlerEntry, context: RequestContext, request: Any, code: ErrorCode) -> list[bytes]:
        """The request's error response carrying ``code`` (Kafka's ``getErrorResponse``): the top-level error, or
        the code on every entry the request names; a response with neither closes the connection."""
        answered = REFUSAL_ANSWERS.get(context.api_key)
        if answered is not None:
            return encode_response_frame(context.api_key, context.api_version, context.correlation_id,
                                         answered(context, request, code))
        answer = error_response(context.api_key, context.api_version, context.correlation_id, code)
        if answer is None:
            answer = mirrored_error_response(context.api_key, context.api_version, context.correlation_id, request,
                                             code)
        if answer is None:
            raise Unanswerable(f"{entry.name} v{context.api_version} refused with {code.name} has no error answer")
        return [encode_frame(answer)]

    def _log_failure(self, entry: HandlerEntry, context: RequestContext) -> None:
        log.exception("%s v%d handler failed for correlation id %d on connection %d from %s (client id %r)",
                      entry.name, context.api_version, context.correlation_id, self.connection_id,
                      self.client_host, context.client_id)


def _extension_allowed(entry: HandlerEntry, context: RequestContext, body: bytes) -> bool:
    """An extension key's own authorization check; one that fails on the body it was given refuses."""
    if entry.authorize is None:
        return False
    try:
        return entry.authorize(context, body)
    except Exception:
        log.warning("%s's authorization check failed on a request; refused", entry.name, exc_info=True)
        return False


def _ready(payload: bytes) -> asyncio.Future[list[bytes] | None]:
    future: asyncio.Future[list[bytes] | None] = asyncio.get_running_loop().create_future()
    future.set_result([encode_frame(payload)])
    return future
