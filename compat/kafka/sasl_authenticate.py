"""SaslAuthenticate (key 36), versions 0-2: one SASL token of the mechanism the handshake chose
(`compat.authentication`).

A failed authentication is answered SASL_AUTHENTICATION_FAILED, with Kafka's words (PLAIN's own reasons; for SCRAM
and malformed tokens only "Authentication failed during authentication due to invalid credentials with SASL
mechanism M", as Kafka hides the rest), after ``connection.failed.authentication.delay.ms`` on the broker clock,
and the connection closes. ``session_lifetime_ms`` (v1+) is how long the session lasts before the client must
re-authenticate (KIP-368: ``connections.max.reauth.ms``, a token's expiry; 0: no limit). A re-authentication with
another mechanism closes the connection unanswered, as on Kafka; one that fails says "re-authentication". A token
Kafka's OAUTHBEARER server trips over closes it unanswered too. Where no
exchange is under way (a PLAINTEXT listener, a connection already authenticated), Kafka's answer is
ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication".
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import CloseConnection, RequestContext, handler, make, response_module
from logwright.core.security.sasl_plain import SaslAborted, SaslFailed

if TYPE_CHECKING:
    from kio.schema.sasl_authenticate import v0, v1, v2

    SaslAuthenticateRequest = v0.SaslAuthenticateRequest | v1.SaslAuthenticateRequest | v2.SaslAuthenticateRequest

_AFTER_SUCCESS = "SaslAuthenticate request received after successful authentication"


@handler(36, "SaslAuthenticate", 0, 2)
async def handle(context: RequestContext, request: SaslAuthenticateRequest) -> Any:
    module = response_module("sasl_authenticate", context.api_version)
    authentication = context.authentication
    if authentication is None or authentication.authenticated:
        return _answer(module, ErrorCode.ILLEGAL_SASL_STATE, _AFTER_SUCCESS)
    if authentication.mechanism_changed:
        raise CloseConnection("a SASL re-authentication with another mechanism")
    try:
        token, done = authentication.authenticate(request.auth_bytes)
    except SaslAborted as aborted:
        raise CloseConnection(f"SASL {authentication.mechanism}: {aborted}") from None
    except SaslFailed as failure:
        which = "re-authentication" if authentication.reauthenticating else "authentication"
        authentication.close(f"SASL {authentication.mechanism} {which} failed")
        await context.broker.sleep(int(context.broker.broker_config("connection.failed.authentication.delay.ms")))
        message = failure.message or (f"Authentication failed during {which} due to invalid credentials with SASL "
                                      f"mechanism {authentication.mechanism}")
        return _answer(module, ErrorCode.SASL_AUTHENTICATION_FAILED, message)
    return _answer(module, ErrorCode.NONE, "", token, authentication.session_lifetime_ms if done else 0)


def _answer(module: Any, error_code: ErrorCode, message: str | None, token: bytes = b"", lifetime_ms: int = 0) -> Any:
    return make(module.SaslAuthenticateResponse, error_code=error_code, error_message=message, auth_bytes=token,
                session_lifetime=datetime.timedelta(milliseconds=lifetime_ms))
