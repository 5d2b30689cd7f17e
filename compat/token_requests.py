"""What the four delegation token APIs share: who asks, and whether the connection may ask at all.

As Kafka's ``allowTokenRequests``: token requests are refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) on a PLAINTEXT
listener, on an SSL connection without a client certificate, and on a connection that authenticated with a token
itself; a SASL-authenticated user, or an SSL client with a certificate, manages tokens.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable

from logwright.compat.authentication import ANONYMOUS
from logwright.compat.errors import ErrorCode
from logwright.compat.registry import RequestContext
from logwright.core.events.base import Event
from logwright.core.java_text import java_utf8
from logwright.core.security.delegation_tokens import DelegationToken, Principal, TokenSettings

TokenChange = Callable[[TokenSettings, DelegationToken | None, Principal, int, int], tuple[int, int, Event | None]]
"""`core.security.delegation_tokens.renew` or `expire`: (settings, token, requester, period, now) -> (error, expiry,
event)."""


def requester(context: RequestContext) -> Principal:
    authentication = context.authentication
    if authentication is None:
        return "User", "ANONYMOUS"
    return authentication.principal_type, authentication.principal


def written_requester(context: RequestContext) -> Principal:
    """`requester` as Kafka's controller sees it: the broker forwards a token's creation, renewal and expiry to it in
    an envelope that carries the principal serialized, as Java writes UTF-8 (`core.java_text`), so those act as the
    written name, where DescribeDelegationToken, answered by the broker itself, compares the session's own."""
    kind, name = requester(context)
    return kind, java_utf8(name)


def may_manage_tokens(context: RequestContext) -> bool:
    authentication = context.authentication
    if authentication is None or not authentication.authenticated or authentication.token_authenticated:
        return False
    listener = authentication.listener  # as Kafka's allowTokenRequests: never PLAINTEXT, nor one-way TLS
    return listener.sasl or (listener.encrypted and authentication.principal != ANONYMOUS)


def timestamp(milliseconds: int) -> datetime.datetime:
    """A Kafka timestamp field as kio writes it (-1 and 0 included)."""
    return datetime.datetime.fromtimestamp(milliseconds / 1000, tz=datetime.UTC)


async def change_token(context: RequestContext, token_hmac: bytes, period: datetime.timedelta,
                       decide: TokenChange) -> tuple[int, int]:
    """Renew or Expire: the token named by its HMAC changed as ``decide`` says, durable before the answer;
    (error, expiry to answer). A connection that may not manage tokens: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1."""
    if not may_manage_tokens(context):
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, -1
    broker = context.broker
    tokens = broker.delegation_tokens
    code, expiry_ms, event = decide(tokens.settings, tokens.by_hmac(token_hmac), written_requester(context),
                                    period // datetime.timedelta(milliseconds=1), broker.clock.now_ms())
    if event is not None:
        broker.stage([event])
        await broker.durable()
    return code, expiry_ms
