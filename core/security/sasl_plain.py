"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer checks it, against users declared in Kafka's JAAS form
(``org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";``), so a broker
configured for Kafka is configured for logwright with the same line.

The JAAS line is read by `core.security.jaas`.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from logwright.core.security.jaas import login_module_options

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


class SaslFailed(Exception):
    """The client's credentials were refused. ``message`` is what Kafka tells the client, or None where Kafka
    hides why (then the client is told only that authentication failed with this mechanism)."""

    def __init__(self, message: str | None) -> None:
        super().__init__(message or "invalid credentials")
        self.message = message


class SaslAborted(Exception):  # noqa: N818 - an instruction to the server, as CloseConnection
    """A token Kafka's SASL server does not refuse but trips over (an unexpected Java exception): Kafka closes the
    connection without an answer, and so does logwright."""


def plain_users(jaas: str) -> dict[str, str]:
    """The ``user_NAME="password"`` options of a PlainLoginModule JAAS line ("" declares none). Raises
    `InvalidConfig` for a line that is not one PlainLoginModule entry ending in ``;``."""
    return {name[len("user_"):]: value for name, value in login_module_options(jaas, PLAIN_LOGIN_MODULE).items()
            if name.startswith("user_")}


def plain_principal(token: bytes, users: Mapping[str, str]) -> str:
    """The user a SASL/PLAIN message (``authzid NUL authcid NUL password``) authenticates, with Kafka's checks
    and words; raises `SaslFailed`."""
    text = token.decode("utf-8", errors="replace")
    parts = text.split("\0", 3)
    if len(parts) != 3:
        raise SaslFailed(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
    authorization_id, username, password = parts
    if not username:
        raise SaslFailed("Authentication failed: username not specified")
    if not password:
        raise SaslFailed("Authentication failed: password not specified")
    expected = users.get(username)
    if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
        raise SaslFailed("Authentication failed: Invalid username or password")
    if authorization_id and authorization_id != username:
        raise SaslFailed("Authentication failed: Client requested an authorization id that is different from "
                         "username")
    return username
