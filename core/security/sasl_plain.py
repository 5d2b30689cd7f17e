"""SASL/PLAIN (RFC 4616) as Kafka's PlainSaslServer checks it, against users declared in Kafka's JAAS form
(``org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";``), so a broker
configured for Kafka is configured for logwright with the same line.

The JAAS reader is written by hand: it reads the one login-module line Kafka's PLAIN server uses (options as
``name="value"`` or bare ``name=value``), not Java's whole JAAS grammar, for which no Python library exists.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping

from logwright.core.errors import InvalidConfig

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_OPTION = re.compile(r'\s*([^\s=;]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')
_HEADER = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)")


class SaslFailed(Exception):
    """The client's credentials were refused. ``message`` is what Kafka tells the client, or None where Kafka
    hides why (then the client is told only that authentication failed with this mechanism)."""

    def __init__(self, message: str | None) -> None:
        super().__init__(message or "invalid credentials")
        self.message = message


def plain_users(jaas: str) -> dict[str, str]:
    """The ``user_NAME="password"`` options of a PlainLoginModule JAAS line ("" declares none). Raises
    `InvalidConfig` for a line that is not one PlainLoginModule entry ending in ``;``."""
    text = jaas.strip()
    if not text:
        return {}
    header = _HEADER.match(text)
    if header is None or header.group(1) != PLAIN_LOGIN_MODULE:
        raise InvalidConfig(f"the JAAS configuration must name {PLAIN_LOGIN_MODULE} with a control flag")
    position, users = header.end(), {}
    while True:
        option = _OPTION.match(text, position)
        if option is None:
            break
        name = option.group(1)
        value = option.group(2) if option.group(2) is not None else option.group(3)
        if option.group(2) is not None:
            value = re.sub(r"\\(.)", r"\1", value)
        if name.startswith("user_"):
            users[name[len("user_"):]] = value
        position = option.end()
    if text[position:].strip() != ";":
        raise InvalidConfig("the JAAS configuration must end its login module with ';'")
    return users


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
