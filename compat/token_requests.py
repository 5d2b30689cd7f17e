"""What the four delegation token APIs share: who asks, and whether the connection may ask at all.

As Kafka's ``allowTokenRequests``: token requests are refused (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED) on a PLAINTEXT
listener and on a connection that authenticated with a token itself; only a SASL-authenticated user manages tokens.
"""

from __future__ import annotations

import datetime

from logwright.compat.registry import RequestContext
from logwright.core.security.delegation_tokens import Principal


def requester(context: RequestContext) -> Principal:
    authentication = context.authentication
    if authentication is None:
        return "User", "ANONYMOUS"
    return authentication.principal_type, authentication.principal


def may_manage_tokens(context: RequestContext) -> bool:
    authentication = context.authentication
    return (authentication is not None and authentication.listener.sasl and authentication.authenticated
            and not authentication.token_authenticated)


def timestamp(milliseconds: int) -> datetime.datetime:
    """A Kafka timestamp field as kio writes it (-1 and 0 included)."""
    return datetime.datetime.fromtimestamp(milliseconds / 1000, tz=datetime.UTC)
