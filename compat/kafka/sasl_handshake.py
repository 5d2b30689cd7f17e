"""SaslHandshake (key 17), versions 0-1: the client names its SASL mechanism (`compat.authentication`).

On a SASL_PLAINTEXT listener before authentication: the enabled mechanisms (in the order of Kafka's ``HashSet`` of
them), with UNSUPPORTED_SASL_MECHANISM (then the connection closes) when the one named is not among them. On an
authenticated connection whose session expires, it begins re-authentication (KIP-368). Elsewhere (a PLAINTEXT
listener, a session without expiry, a re-authentication less than a second after the last) Kafka answers
ILLEGAL_SASL_STATE without mechanisms and keeps the connection, and so does this. A second handshake in the middle
of an exchange never gets here (`compat.request_dispatch` refuses it). After version 0 (before KIP-152) the client
sends its SASL tokens bare, framed by their size only, and is answered so (`RequestDispatch._dispatch_token`), as Kafka
4.4 still serves it (Sarama's ``SASLHandshakeV0``, old Java clients); its session expires and is re-authenticated as
any other (a SaslHandshake v0 then, with bare tokens again), as Kafka's authenticator times both kinds alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from logwright.compat.authentication import HandshakeOutcome
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module

if TYPE_CHECKING:
    from kio.schema.sasl_handshake import v0, v1

    SaslHandshakeRequest = v0.SaslHandshakeRequest | v1.SaslHandshakeRequest


@handler(17, "SaslHandshake", 0, 1)
async def handle(context: RequestContext, request: SaslHandshakeRequest) -> Any:
    module = response_module("sasl_handshake", context.api_version)
    authentication = context.authentication
    outcome = HandshakeOutcome.ILLEGAL if authentication is None else authentication.handshake(request.mechanism)
    if outcome is HandshakeOutcome.ILLEGAL or authentication is None:
        return make(module.SaslHandshakeResponse, error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=())
    if outcome is HandshakeOutcome.UNSUPPORTED:
        authentication.close(f"SASL mechanism {request.mechanism!r} is not enabled")
        return make(module.SaslHandshakeResponse, error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                    mechanisms=authentication.enabled)
    authentication.unframed = context.api_version == 0
    return make(module.SaslHandshakeResponse, error_code=ErrorCode.NONE, mechanisms=authentication.enabled)
