"""SaslAuthenticate (key 36), versions 0-2: one SASL token of the mechanism the handshake chose
(`compat.authentication`).

A failed authentication is answered SASL_AUTHENTICATION_FAILED, with Kafka's words (PLAIN's own reasons; for SCRAM
and malformed tokens only "Authentication failed during authentication due to invalid credentials with SASL
mechanism M", as Kafka hides the rest), after ``connection.failed.authentication.delay.ms`` on the broker clock,
and the connection closes. ``session_lifetime_ms`` is 0: sessions do not expire (``connections.max.reauth.ms`` is
Kafka's default, 0). Where no exchange is under way (a PLAINTEXT listener, a connection already authenticated),
Kafka's answer is ILLEGAL_SASL_STATE, "SaslAuthenticate request received after successful authentication".
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext, handler, make, response_module
from logwright.core.security.sasl_plain import SaslFailed

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
    try:
        token, _ = authentication.authenticate(request.auth_bytes)
    except SaslFailed as failure:
        authentication.close(f"SASL {authentication.mechanism} authentication failed")
        await context.broker.sleep(int(context.broker.broker_config("connection.failed.authentication.delay.ms")))
        message = failure.message or ("Authentication failed during authentication due to invalid credentials "
                                      f"with SASL mechanism {authentication.mechanism}")
        return _answer(module, ErrorCode.SASL_AUTHENTICATION_FAILED, message)
    return _answer(module, ErrorCode.NONE, "", token)


def _answer(module: Any, error_code: ErrorCode, message: str | None, token: bytes = b"") -> Any:
    return make(module.SaslAuthenticateResponse, error_code=error_code, error_message=message, auth_bytes=token,
                session_lifetime=datetime.timedelta(0))
